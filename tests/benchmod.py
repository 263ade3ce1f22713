"""Loading a benchmark script (``bench/NAME.py``) or another script as a module in the tests.

``bench/`` and ``scripts/`` are not packages: each script runs on its own. Tests that check a
benchmark's data, scoring or a sample of its run load it by path, once per process.
"""

from __future__ import annotations

import importlib.util
import sys
from functools import lru_cache
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


@lru_cache(maxsize=None)
def load(name: str, folder: str = "bench") -> ModuleType:
    """``ROOT/folder/name.py`` as a module named ``bench_<name>``, registered in ``sys.modules``
    (dataclasses and pickling need that). Bench scripts import their neighbours, so ``bench/`` is
    put on ``sys.path``."""
    if str(ROOT / "bench") not in sys.path:
        sys.path.insert(0, str(ROOT / "bench"))
    spec = importlib.util.spec_from_file_location(f"{folder}_{name}", ROOT / folder / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
