"""DESIGN.md's layers hold: wings by layer, every import pointing down, the core reaching storage
only through the Store port, and a small curated public API.

The import checks read the source (``ast``), so they see lazy imports inside functions too:
a lazy import up the layers is still an arrow up, and so is one under ``if TYPE_CHECKING:``.
Type-only imports are left out of the cycle check only: within the core, each mixin names the
class it is part of (``Mnemo``), which imports the mixin.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import mnemo
from mnemo._stores.base import Store
from mnemo._stores.sqlite import SQLiteStore

SRC = Path(mnemo.__file__).parent

#: wing → layer (higher imports lower; equal layers are siblings and never import each other)
LAYERS: dict[str, int] = {
    "__main__": 8,  # python -m mnemo / the console script
    "_entry": 7,  # the whole command line: the CLI plus the commands that start the other surfaces
    "_cli": 6, "_mcp": 6, "_hooks": 6, "_web": 6, "_proxy": 6,  # surfaces (and room for _sync)
    "__init__": 6,  # the public Python API is a surface too: it re-exports the core's names
    "_settings": 5,  # settings and the front door: config → an open Mnemo
    "_core": 4,
    "_lifecycle": 3, "_capture": 3, "_ingest": 3, "_privacy": 3, "_recall": 3, "_replica": 3,  # policies
    "_stores": 2, "_llm": 2,  # ports
    "_base": 1, "errors": 0,  # the ground floor; errors.py (the public error tree) under everything
}


def _wing(module: str) -> str:
    """``mnemo._stores.sqlite`` → ``_stores``; ``mnemo`` → ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _modules() -> dict[str, Path]:
    found = {}
    for path in SRC.rglob("*.py"):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(module: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, int, bool]]:
    """(imported mnemo module, line, type_only) for every import statement of ``module``."""
    tree = ast.parse(path.read_text("utf-8"))
    type_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
                 for n in ast.walk(node)}
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in modules]
            if len(names) < len(node.names) and target in modules:
                names.append(target)  # names taken from the module itself, not submodules of it
            found += [(t, node.lineno, id(node) in type_only) for t in names]
        elif isinstance(node, ast.Import):
            found += [(a.name, node.lineno, id(node) in type_only) for a in node.names if a.name in modules]
    return found


def _graph() -> list[tuple[str, str, int, bool]]:
    modules = _modules()
    return [(src, dst, line, typed) for src, path in sorted(modules.items()) for dst, line, typed in _imports(src, path, modules)
            if dst != src]


def test_every_module_belongs_to_a_wing_with_a_layer() -> None:
    assert {_wing(m) for m in _modules()} <= set(LAYERS), {_wing(m) for m in _modules()} - set(LAYERS)


def test_imports_point_down() -> None:
    """A module imports its own wing or a lower layer: never a higher one, never a sibling wing
    (two surfaces, two policies, two ports), so each new surface builds on the core alone."""
    wrong = []
    for src, dst, line, _ in _graph():
        a, b = _wing(src), _wing(dst)
        if a == b or LAYERS[a] > LAYERS[b]:
            continue
        wrong.append(f"{src}:{line} imports {dst} ({a} at layer {LAYERS[a]} → {b} at {LAYERS[b]})")
    assert not wrong, "\n".join(wrong)


def test_no_import_cycles() -> None:
    """Among the imports that run (type-only ones left out), no module reaches itself again."""
    edges: dict[str, set[str]] = {}
    for src, dst, _, typed in _graph():
        if not typed and dst != "mnemo":  # the package root is every module's parent, imported first anyway
            edges.setdefault(src, set()).add(dst)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    assert not cycles, cycles


def test_the_checks_see_an_upward_import(tmp_path: Path) -> None:
    """The checker itself: a lazy import of the core from a store would be reported."""
    fake = tmp_path / "mnemo" / "_stores"
    fake.mkdir(parents=True)
    (fake / "x.py").write_text("def f():\n    from .._core.mnemo import Mnemo\n\nif TYPE_CHECKING:\n    from .._cli import base\n")
    found = _imports("mnemo._stores.x", fake / "x.py", {"mnemo._core.mnemo": fake, "mnemo._cli.base": fake, "mnemo._cli": fake})
    assert ("mnemo._core.mnemo", 2, False) in found and ("mnemo._cli.base", 5, True) in found


SURFACES = [w for w, layer in LAYERS.items() if layer >= LAYERS["_cli"] and w != "__init__"]


def test_surfaces_call_only_public_operations_of_the_core() -> None:
    """No surface reaches into ``Mnemo`` (a private method or its store) or guards a call with
    ``hasattr``: what a surface needs is a public operation, so every surface gets it alike."""
    from mnemo import Mnemo

    private = {n for n in dir(Mnemo) if n.startswith("_") and not n.startswith("__")} | {"store"}
    wrong = []
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC)
        if rel.parts[0].removesuffix(".py") not in SURFACES:
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in private:
                wrong.append(f"{rel}:{node.lineno} uses .{node.attr}")
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("hasattr", "getattr") and node.args \
                    and getattr(node.args[0], "id", "") in ("m", "mem", "store"):
                wrong.append(f"{rel}:{node.lineno} guards with {node.func.id}")  # type: ignore[attr-defined]
    assert not wrong, "\n".join(wrong)


def test_sqlite_store_implements_the_store_port() -> None:
    wanted = [n for n, v in vars(Store).items() if callable(v) and not n.startswith("_")]
    assert wanted and [n for n in wanted if not callable(getattr(SQLiteStore, n, None))] == []
    for name in wanted:
        port = inspect.signature(getattr(Store, name))
        impl = inspect.signature(getattr(SQLiteStore, name))
        assert list(port.parameters) == list(impl.parameters), name


def test_only_the_stores_wing_speaks_sql() -> None:
    """The core, the policies and the surfaces hold no SQL and never import a database driver."""
    for path in SRC.rglob("*.py"):
        if path.relative_to(SRC).parts[0] == "_stores":
            continue
        text = path.read_text("utf-8")
        rel = path.relative_to(SRC)
        assert not re.search(r"^\s*(import|from) (apsw|psycopg)\b", text, re.M), rel
        assert not re.search(r"\b(SELECT|UPDATE|INSERT INTO|DELETE FROM)\b [a-z_*]", text), rel


def test_public_api_is_small_and_curated() -> None:
    assert set(mnemo.__all__) == {
        "Mnemo", "Memory", "Hit", "MEMORY_TYPES", "MnemoError", "InvalidInputError", "ImportFormatError",
        "NotFoundError", "StoreError", "StoreMissingError", "StoreKeyError", "SchemaTooNewError",
        "CorruptStoreError", "ModelMismatchError", "EmbedderError",
    }
    assert all(hasattr(mnemo, name) for name in mnemo.__all__)
