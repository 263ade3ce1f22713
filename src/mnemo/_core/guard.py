"""The core's edge: every public ``Mnemo`` operation checks the arguments every operation shares,
and a failure that is the caller's input or the machine's state leaves it as a ``MnemoError``.

A fuzz run found 61 kinds of exceptions outside the error tree: a lone surrogate (undecodable
bytes from argv or a file) reaching SQLite, ``limit=2**63`` overflowing a C integer, ``nan``
days, JSON nested a thousand deep, a full disk. Each operation still checks its own
arguments; this is the one place that checks the kinds they all share, by name, so a new
operation gets them too:

- each argument has the type its annotation names (a memory id is text, not ``0``);
- every string, anywhere in the arguments (inside lists and dicts too), must be UTF-8 text;
- counts (``limit``, ``offset``, ``top_k``…) are whole numbers from 0 to a billion;
- spans of days are finite and at most a century.

Then ``OverflowError``/``RecursionError``/``MemoryError`` from the input become
``InvalidInputError``, and the SQLite driver's "disk full", "read-only" and "I/O" errors a
``StoreError`` with what to do.
"""

from __future__ import annotations

import collections.abc
import datetime
import functools
import inspect
import os
import types
import typing
from collections.abc import Callable
from typing import Any

from .._base.models import check_count, check_number, check_text
from ..errors import InvalidInputError, MnemoError, StoreError

#: arguments that count things, checked as whole numbers in 0..1e9 (each operation narrows further)
COUNTS = frozenset({"limit", "offset", "top_k", "budget_tokens", "min_group", "max_bytes", "chunk_chars"})
#: arguments that are spans of days or seconds: finite, non-negative, at most a century
SPANS = frozenset({"days", "archive_days", "half_life_days", "decay_days", "web_timeout", "web_deadline"})
#: the deepest an argument may nest (a memory record's metadata is checked again, more tightly)
DEPTH = 64
#: SQLite driver errors that are the machine's state, not a bug: what the person can do
_STORE_STATES = {
    "FullError": "the disk is full: free some space and try again (nothing was changed)",
    "ReadOnlyError": "the store is read-only here (a read-only mount or file): copy it somewhere writable",
    "IOError": "the store file could not be read or written (a disk error?); run `mnemo doctor`",
    "CantOpenError": "the store file cannot be opened (its folder is missing or not writable?)",
}


def _check_value(value: Any, name: str, depth: int = 0) -> None:
    if isinstance(value, str):
        check_text(value, name, max_chars=50_000_000)
    elif isinstance(value, (list, tuple, set, frozenset, dict)):
        if depth >= DEPTH:
            raise InvalidInputError(f"{name} nests deeper than {DEPTH} levels")
        items = value.items() if isinstance(value, dict) else ((None, v) for v in value)
        for key, item in items:
            if key is not None:
                _check_value(key, name, depth + 1)
            _check_value(item, name, depth + 1)


_SEQUENCES = (list, tuple, set, frozenset)
_RUNTIME: dict[Any, tuple[type, ...]] = {
    str: (str,), int: (int,), float: (int, float), bool: (bool,), dict: (dict,), type(None): (type(None),),
    datetime.datetime: (datetime.datetime,), list: (list,), tuple: (tuple,),
    collections.abc.Sequence: _SEQUENCES, collections.abc.Collection: _SEQUENCES,
    os.PathLike: (os.PathLike,),  # a folder or file argument: a str or a Path, never None or a number
}


def _accepts(hint: Any) -> tuple[type, ...] | None:
    """The runtime classes an annotation admits, or None when it is too open to check (Any, an
    Iterable that may be a generator, a class of ours)."""
    if hint is Any or hint is object:
        return None
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        out: tuple[type, ...] = ()
        for arg in typing.get_args(hint):
            part = _accepts(arg)
            if part is None:
                return None
            out += part
        return out
    if origin is collections.abc.Callable or hint is collections.abc.Callable:
        return (_Callable,)
    if origin is collections.abc.Iterable or hint is collections.abc.Iterable:
        return (_Iterable,)
    if origin is not None:
        return _RUNTIME.get(origin)
    if hint in _RUNTIME:
        return _RUNTIME[hint]
    if inspect.isclass(hint) and not getattr(hint, "_is_protocol", False):
        return (hint,)  # a class of ours (a Redactor): isinstance says
    return None


class _CallableMeta(type):
    def __instancecheck__(cls, value: Any) -> bool:
        return callable(value)


class _Callable(metaclass=_CallableMeta):
    """Stands for "any callable" among the classes an annotation admits (a progress callback)."""


class _IterableMeta(type):
    def __instancecheck__(cls, value: Any) -> bool:
        return isinstance(value, collections.abc.Iterable)


class _Iterable(metaclass=_IterableMeta):
    """Stands for "anything iterable" (a list of records, a generator of them)."""


def _items(hint: Any) -> tuple[type, ...] | None:
    """What the elements of a list/sequence annotation admit (``Sequence[str]`` → ``(str,)``)."""
    for arg in typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,):
        if typing.get_origin(arg) in (list, tuple, collections.abc.Sequence, collections.abc.Iterable, collections.abc.Collection):
            inner = typing.get_args(arg)
            if len(inner) == 1 or (len(inner) == 2 and inner[1] is Ellipsis):
                return _accepts(inner[0])
    return None


def annotation_checks(fn: Callable[..., Any], names: dict[str, Any] | None = None) -> dict[str, tuple[tuple[type, ...], tuple[type, ...] | None]]:
    """For each parameter of ``fn`` whose annotation is plain enough, the classes it admits and
    those its elements admit when it is a list (``names``: what the annotations call by a name
    their module imports for type checkers only)."""
    try:
        hints = typing.get_type_hints(fn, localns=names)
    except Exception:  # an annotation only importable for type checkers: check by name alone
        return {}
    checks = {}
    for name, hint in hints.items():
        if name != "return" and (classes := _accepts(hint)) is not None:
            checks[name] = (classes, _items(hint))
    return checks


def _wrong(value: Any, allowed: tuple[type, ...]) -> bool:
    return not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed)


def _names(allowed: tuple[type, ...]) -> str:
    return " or ".join(sorted({c.__name__.strip("_").lower() if c in (_Callable, _Iterable) else c.__name__
                               for c in allowed if c is not type(None)}))


def check_arguments(bound: inspect.BoundArguments, types_of: dict[str, Any] | None = None) -> None:
    """Check the shared kinds of arguments of one call (see the module docstring)."""
    for name, value in bound.arguments.items():
        if name == "self":
            continue
        allowed, items = (types_of or {}).get(name, (None, None))
        if allowed is not None and _wrong(value, allowed):
            raise InvalidInputError(f"{name} must be {_names(allowed)}, not {type(value).__name__}")
        if items is not None and isinstance(value, (list, tuple, set, frozenset)):
            for item in value:
                if _wrong(item, items):
                    raise InvalidInputError(f"each of {name} must be {_names(items)}, not {type(item).__name__}")
        if value is None:
            continue
        kind = bound.signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            for key, item in value.items():
                _check_value(item, key)
            continue
        if name in COUNTS and not isinstance(value, (list, tuple, dict)):
            check_count(value, name)
        elif name in SPANS:
            check_number(value, name, maximum=36_500.0)
        else:
            _check_value(value, name)


def translate(exc: BaseException) -> MnemoError | None:
    """The ``MnemoError`` for an exception that is the input's or the machine's fault, or None."""
    if isinstance(exc, MnemoError):
        return None
    if isinstance(exc, (OverflowError, RecursionError)):
        return InvalidInputError(f"the input is out of range ({type(exc).__name__}: {str(exc)[:100]})")
    if isinstance(exc, MemoryError):
        return InvalidInputError("the input is too large to hold in memory")
    if isinstance(exc, ValueError) and "null byte" in str(exc):  # a path with a NUL in it
        return InvalidInputError("a path or name contains a NUL byte")
    if isinstance(exc, UnicodeError):
        return InvalidInputError(f"the input is not valid UTF-8 text ({str(exc)[:100]})")
    if type(exc).__module__ == "apsw" and type(exc).__name__ in _STORE_STATES:
        return StoreError(_STORE_STATES[type(exc).__name__])
    return None


def guarded(fn: Callable[..., Any], names: dict[str, Any] | None = None) -> Callable[..., Any]:
    """``fn`` with its arguments checked and its input/machine failures translated."""
    # read on the first call, not at import: evaluating every operation's annotations took
    # ~12 ms of each CLI process's start, and a process calls only a few of them
    spec: list[tuple[inspect.Signature, dict[str, Any]]] = []

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if not spec:
            spec[:] = [(inspect.signature(fn), annotation_checks(fn, names))]  # one item, even when two threads race
        signature, types_of = spec[0]
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            return fn(*args, **kwargs)  # let Python say what is wrong with the call itself
        check_arguments(bound, types_of)
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            better = translate(exc)
            if better is None:
                raise
            raise better from exc

    return call


def guard_public(cls: type) -> type:
    """Wrap every public operation of ``cls`` (methods not starting with ``_``) in :func:`guarded`."""
    for name, member in inspect.getmembers(cls):
        if name.startswith("_") or not callable(member) or isinstance(inspect.getattr_static(cls, name), property):
            continue
        static = isinstance(inspect.getattr_static(cls, name), staticmethod)
        wrapped = guarded(member, {cls.__name__: cls})
        setattr(cls, name, staticmethod(wrapped) if static else wrapped)
    return cls
