"""mnemo — local-first persistent memory for AI assistants.

>>> from mnemo import Mnemo
>>> with Mnemo("/tmp/example.db") as m:              # doctest: +SKIP
...     m.remember("We deploy with GitHub Actions", type="decision", scope="project:app")
...     hits = m.recall("how do we deploy?", scope="project:app")
"""

from ._core import Mnemo
from ._models import MEMORY_TYPES, Hit, Memory
from .errors import (
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
