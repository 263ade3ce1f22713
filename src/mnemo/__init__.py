"""mnemo — local-first persistent memory for AI assistants.

>>> from mnemo import Mnemo
>>> with Mnemo("/tmp/example.db") as m:              # doctest: +SKIP
...     m.remember("We deploy with GitHub Actions", type="decision", scope="project:app")
...     hits = m.recall("how do we deploy?", scope="project:app")
"""

import os as _os
import sys as _sys

if "numpy" not in _sys.modules:
    # OpenBLAS's idle workers spin for ~2^28 cycles after each matrix product; on two cores that
    # starves the embedding engine's OpenMP threads (a 12 ms query embedding became 80-110 ms
    # in a process that also scans vectors). A short timeout keeps both fast; set it to
    # override. It must be in place before numpy loads OpenBLAS.
    _os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

from .errors import (  # noqa: E402
    CorruptStoreError,
    EmbedderError,
    ImportFormatError,
    InvalidInputError,
    MnemoError,
    ModelMismatchError,
    NotFoundError,
    SchemaTooNewError,
    StoreError,
    StoreKeyError,
    StoreMissingError,
)

__version__ = "0.1.0"

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on the hook's fast path
if TYPE_CHECKING:
    from ._base.models import MEMORY_TYPES, Hit, Memory
    from ._core.mnemo import Mnemo


def __getattr__(name: str):  # PEP 562: `Mnemo` (numpy, apsw, the models) loads on first use,
    # so light entry points such as `mnemo hook` (run on every prompt) import none of it
    if name == "Mnemo":
        from ._core.mnemo import Mnemo

        return Mnemo
    if name in ("Memory", "Hit", "MEMORY_TYPES"):
        from ._base import models as _models

        return getattr(_models, name)
    raise AttributeError(f"module 'mnemo' has no attribute {name!r}")

__all__ = [
    "Mnemo",
    "Memory",
    "Hit",
    "MEMORY_TYPES",
    "MnemoError",
    "InvalidInputError",
    "ImportFormatError",
    "NotFoundError",
    "StoreError",
    "StoreMissingError",
    "StoreKeyError",
    "SchemaTooNewError",
    "CorruptStoreError",
    "ModelMismatchError",
    "EmbedderError",
]
