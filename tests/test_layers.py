"""DESIGN.md's layers hold: the core reaches storage only through the Store port."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import mnemo
from mnemo._stores.sqlite import SQLiteStore
from mnemo._stores.base import Store

SRC = Path(mnemo.__file__).parent


def test_sqlite_store_implements_the_store_port() -> None:
    wanted = [n for n, v in vars(Store).items() if callable(v) and not n.startswith("_")]
    assert wanted and [n for n in wanted if not callable(getattr(SQLiteStore, n, None))] == []
    for name in wanted:
        port = inspect.signature(getattr(Store, name))
        impl = inspect.signature(getattr(SQLiteStore, name))
        assert list(port.parameters) == list(impl.parameters), name


def test_core_and_policies_contain_no_sql() -> None:
    for name in ("_core/mnemo.py", "_core/maintenance.py", "_recall/rank.py", "_base/text.py", "_recall/vindex.py", "_cli/commands.py"):
        text = (SRC / name).read_text("utf-8")
        assert "import apsw" not in text.replace("        import apsw\n\n        if isinstance(exc, apsw.Error)", ""), name
        assert not re.search(r"\b(SELECT|UPDATE|INSERT INTO|DELETE FROM)\b [a-z_*]", text), name


def test_public_api_is_small_and_curated() -> None:
    assert set(mnemo.__all__) == {
        "Mnemo", "Memory", "Hit", "MEMORY_TYPES", "MnemoError", "InvalidInputError", "ImportFormatError",
        "NotFoundError", "StoreError", "StoreMissingError", "StoreKeyError", "SchemaTooNewError",
        "CorruptStoreError", "ModelMismatchError", "EmbedderError",
    }
    assert all(hasattr(mnemo, name) for name in mnemo.__all__)
