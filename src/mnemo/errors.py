"""Errors raised by mnemo.

Every error mnemo raises on purpose derives from :class:`MnemoError`; the CLI turns each into
one line on stderr and a non-zero exit code, the MCP server into a tool error::

    MnemoError
     ├── InvalidInputError        bad content, type, importance, time, filter…
     │    ├── ImportFormatError   malformed lines in an import file (with line numbers)
     │    ├── IngestError         a document, chat export or web page cannot be ingested
     │    └── PayloadError        an assistant's hook payload is not usable
     ├── NotFoundError            no memory with that id
     ├── StoreError               the store cannot be used as it is
     │    ├── StoreMissingError   no store at that path (run `mnemo init`)
     │    ├── SchemaTooNewError   written by a newer mnemo
     │    ├── CorruptStoreError   not a mnemo store, or damaged
     │    ├── StoreKeyError       encrypted, and the key is missing or wrong
     │    ├── ModelMismatchError  the index was built with another embedding model
     │    ├── StoreUnreachableError  the PostgreSQL server cannot be reached
     │    ├── StorePrivilegeError    the database role lacks a privilege mnemo needs
     │    └── AlreadyServing      another warm service already serves this store
     ├── EmbedderError            the embedding model cannot load or answers wrongly
     └── ChatError                the chat endpoint (LLM) gave no usable answer
"""

from __future__ import annotations

__all__ = [
    "MnemoError",
    "InvalidInputError",
    "ImportFormatError",
    "IngestError",
    "NotFoundError",
    "StoreError",
    "StoreMissingError",
    "SchemaTooNewError",
    "CorruptStoreError",
    "ModelMismatchError",
    "StoreKeyError",
    "StoreUnreachableError",
    "StorePrivilegeError",
    "EmbedderError",
    "ChatError",
    "PayloadError",
    "AlreadyServing",
]


class MnemoError(Exception):
    """Base class of every error mnemo raises on purpose."""

    #: process exit code the CLI uses for this kind of error
    exit_code = 1


class InvalidInputError(MnemoError, ValueError):
    """The caller gave input mnemo cannot accept; nothing was changed."""

    exit_code = 2


class ImportFormatError(InvalidInputError):
    """An import file has malformed records; ``problems`` lists ``(line, message)``."""

    def __init__(self, message: str, problems: list[tuple[int, str]]):
        super().__init__(message)
        self.problems = problems


class NotFoundError(MnemoError, KeyError):
    """No memory has the given id."""

    exit_code = 3

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "not found"


class StoreError(MnemoError):
    """The store cannot be opened or used as it is."""

    exit_code = 4


class StoreMissingError(StoreError):
    """There is no store at the given location."""


class SchemaTooNewError(StoreError):
    """The store was written by a newer mnemo with a schema this one does not know."""


class CorruptStoreError(StoreError):
    """The file is not a mnemo store or is damaged."""


class StoreKeyError(StoreError):
    """The store is encrypted and no key, or the wrong key, was given."""


class ModelMismatchError(StoreError):
    """The store's vectors come from another embedding model than the one asked for."""


class EmbedderError(MnemoError):
    """The embedding model cannot be loaded or returned unusable vectors."""

    exit_code = 5


class IngestError(InvalidInputError):
    """A file, chat export or web page cannot be ingested (unreadable, binary, too big, an
    unknown encoding, a fetch that failed or ran out of time); an ingest run reports it per
    document and goes on, and raises it only when nothing at all could be ingested."""


class StoreUnreachableError(StoreError):
    """The PostgreSQL server cannot be reached (or refused the connection)."""


class StorePrivilegeError(StoreError):
    """The database role lacks a privilege mnemo needs (e.g. to create the vector extension)."""


class PayloadError(InvalidInputError):
    """The hook's stdin is not a payload of the assistant's hook event (not JSON, a field
    missing or of the wrong type, an unknown event)."""


class AlreadyServing(StoreError):
    """Another warm service already serves this store."""


class ChatError(MnemoError):
    """The chat endpoint could not give a usable answer."""
