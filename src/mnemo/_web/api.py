"""The REST API of ``mnemo web`` (``/api/v1``): one route per ``Mnemo`` operation, a few lines each.

Every route is declared once in ``ROUTES`` with its parameters (where each comes from, its
type, bounds and help); the same declaration checks a request, turns a bad one into a one-line
400, and writes the OpenAPI document (``openapi()``). Handlers run in a worker thread with the
store (``Serving.call``), so the server's event loop never waits on SQLite or the model.
Memories travel as the MCP server's do: every field for one memory, a brief form in lists.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._base import text as _text
from .._base.models import MEMORY_TYPES, STATUSES
from ..errors import InvalidInputError, NotFoundError

if TYPE_CHECKING:
    from .._base.models import Hit, Memory
    from .._core.mnemo import Mnemo

#: the largest JSON body a route reads (a memory is at most a few hundred KB of text)
MAX_JSON_BYTES = 2 * 1024 * 1024
#: the largest upload (the ingest limit for one document)
MAX_UPLOAD_BYTES = 20 * 1024 * 1024


@dataclass(frozen=True)
class Param:
    """One argument of a route: where it comes from (``query``, ``body``, ``path``), its type
    (``str``, ``int``, ``float``, ``bool``, ``list`` of strings, ``type`` for a memory type),
    bounds, and what it means."""

    name: str
    kind: str = "str"
    where: str = "query"
    required: bool = False
    default: Any = None
    lo: float | None = None
    hi: float | None = None
    help: str = ""
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class Route:
    """One API route: method, path (``{id}`` for a memory id), the operation it runs, its arguments."""

    method: str
    path: str
    op: str
    summary: str
    handler: Callable[["Mnemo", dict[str, Any], "Context"], Any]
    params: tuple[Param, ...] = ()
    status: int = 200
    upload: bool = False  # the body is a file's raw bytes, not JSON
    tags: tuple[str, ...] = field(default=("memories",))


@dataclass
class Context:
    """What a handler may need beyond its arguments: the raw upload, where uploads are kept,
    the settings as the command line shows them."""

    body: bytes = b""
    uploads: Path | None = None
    settings: list[dict[str, Any]] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------- arguments


def _one(p: Param, raw: Any) -> Any:
    """``raw`` (a query string's text, or a JSON value) as ``p`` wants it, or InvalidInputError."""
    if p.kind == "list":
        items = raw if isinstance(raw, list) else [s for s in str(raw).split(",")]
        if not all(isinstance(x, str) for x in items):
            raise InvalidInputError(f"{p.name}: must be a list of strings")
        return [x.strip() for x in items if x.strip()]
    if p.kind == "json":
        if not isinstance(raw, list):
            raise InvalidInputError(f"{p.name}: must be a list")
        return raw
    if p.kind == "bool":
        if isinstance(raw, bool):
            return raw
        if str(raw).lower() in ("1", "true", "yes", "on"):
            return True
        if str(raw).lower() in ("0", "false", "no", "off", ""):
            return False
        raise InvalidInputError(f"{p.name}: must be true or false (got {str(raw)[:40]!r})")
    if p.kind in ("int", "float"):
        if isinstance(raw, bool):
            raise InvalidInputError(f"{p.name}: must be a number")
        try:
            value: float = int(raw) if p.kind == "int" else float(raw)
        except (TypeError, ValueError):
            raise InvalidInputError(f"{p.name}: must be a {'whole number' if p.kind == 'int' else 'number'} (got {str(raw)[:40]!r})") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise InvalidInputError(f"{p.name}: must be a finite number")
        if p.lo is not None and value < p.lo or p.hi is not None and value > p.hi:
            raise InvalidInputError(f"{p.name}: must be between {p.lo:g} and {p.hi:g} (got {value:g})")
        return value
    if not isinstance(raw, str):
        raise InvalidInputError(f"{p.name}: must be a string")
    if p.choices and raw and raw not in p.choices:
        raise InvalidInputError(f"{p.name}: must be one of {', '.join(p.choices)} (got {raw[:40]!r})")
    return raw


def arguments(route: Route, query: dict[str, list[str]], body: Any, path: dict[str, str]) -> dict[str, Any]:
    """The route's arguments from the request, checked; unknown body fields are refused (a typo
    must not be ignored silently)."""
    if any(p.where == "body" for p in route.params):
        if body is None:
            body = {}
        if not isinstance(body, dict):
            raise InvalidInputError("the request body must be a JSON object")
        unknown = sorted(set(body) - {p.name for p in route.params if p.where == "body"})
        if unknown:
            raise InvalidInputError(f"unknown field{'s' if len(unknown) > 1 else ''}: {', '.join(unknown)}")
    out: dict[str, Any] = {}
    for p in route.params:
        if p.where == "path":
            raw: Any = path.get(p.name)
        elif p.where == "query":
            values = query.get(p.name)
            raw = (values if p.kind == "list" else values[-1]) if values else None
        else:
            raw = body.get(p.name)
        if raw is None or (p.where == "query" and raw == "" and p.kind != "str"):
            if p.required:
                raise InvalidInputError(f"{p.name}: required")
            out[p.name] = p.default
            continue
        out[p.name] = _one(p, raw)
        if p.required and out[p.name] in ("", []):
            raise InvalidInputError(f"{p.name}: must not be empty")
    return out


# ---------------------------------------------------------------- memories as JSON


def full(m: "Memory") -> dict[str, Any]:
    """Every field of a memory, less its internal hash."""
    d = m.to_dict()
    d.pop("content_hash", None)
    return d


def brief(m: "Memory", score: float | None = None) -> dict[str, Any]:
    """A memory in a list: its text, kind, where and when, and the id to act with."""
    d: dict[str, Any] = {"id": m.id, "content": m.content, "type": m.type, "scope": m.scope,
                         "created": m.created_at[:10], "created_at": m.created_at, "importance": m.importance}
    if score is not None:
        d["score"] = round(score, 4)
    if m.tags:
        d["tags"] = m.tags
    if m.status != "active":
        d["status"] = m.status
    if m.pinned:
        d["pinned"] = True
    return d


def _hit(h: "Hit") -> dict[str, Any]:
    d = brief(h.memory, h.score)
    if h.explain is not None:
        d["explain"] = h.explain
    return d


# ---------------------------------------------------------------- handlers


def _statuses(status: str | None) -> tuple[str, ...]:
    if not status or status == "active":
        return ("active",)
    return STATUSES if status == "all" else (status,)


def info(m: "Mnemo", a: dict[str, Any], ctx: Context) -> dict[str, Any]:
    return {**ctx.info, "scope": m.scope, "scopes": sorted(set(m.stats()["by_scope"]) | {m.scope, "global"})}


def search(m: "Mnemo", a: dict[str, Any], _: Context) -> dict[str, Any]:
    status = a["status"] or "active"
    hits = m.recall(a["q"], top_k=a["k"], scope=a["scope"] or None, types=a["type"] or None, tags=a["tag"] or None,
                    since=a["since"] or None, until=a["until"] or None, explain=a["explain"],
                    include_superseded=status in ("superseded", "all"), include_archived=status in ("archived", "all"),
                    include_expired=status in ("expired", "all"))
    if status not in ("active", "all"):
        hits = [h for h in hits if h.memory.status == status or (status == "expired" and h.memory.expires_at)]
    return {"results": [_hit(h) for h in hits], "terms": highlight_terms(a["q"])}


def highlight_terms(query: str) -> list[str]:
    """The query's words worth marking in a hit: segmented as the index reads them (jieba for
    Chinese), stop words and single letters left out, longest first so a page marks the whole word."""
    _, phrases = _text.query_terms(query)
    words = [w for w in _text.segment(query) if len(w) > 1 or _text.has_han(w)]
    keep = {w for w in words if _text.query_terms(w)[0]}
    return sorted(keep | set(phrases), key=len, reverse=True)[:32]


def list_memories(m: "Mnemo", a: dict[str, Any], _: Context) -> dict[str, Any]:
    found = m.list(scope=a["scope"] or "all", types=a["type"] or None, tags=a["tag"] or None, since=a["since"] or None,
                   until=a["until"] or None, statuses=_statuses(a["status"]), limit=a["limit"] + 1, offset=a["offset"])
    more = len(found) > a["limit"]
    return {"results": [brief(x) for x in found[: a["limit"]]], "next_offset": a["offset"] + a["limit"] if more else None}


def remember(m: "Mnemo", a: dict[str, Any], _: Context) -> dict[str, Any]:
    (mem, action), = m.remember_many([dict(content=a["content"], type=a["type"] or "note", scope=a["scope"] or m.scope,
                                           tags=a["tags"], importance=a["importance"], source="web")])
    return {"action": action, "memory": full(mem)}


def get(m: "Mnemo", a: dict[str, Any], _: Context) -> dict[str, Any]:
    mem = m.get(a["id"])
    links = []
    for link in m.related(mem.id):
        try:
            other = m.get(link["id"])
        except NotFoundError:  # purged since
            continue
        links.append({**link, "content": other.content, "type": other.type, "status": other.status, "scope": other.scope})
    return {"memory": full(mem), "history": m.history(mem.id), "links": links}


def edit(m: "Mnemo", a: dict[str, Any], _: Context) -> dict[str, Any]:
    fields = {k: a[k] for k in ("content", "type", "tags", "importance", "scope", "expires", "pinned") if a[k] is not None}
    if not fields:
        raise InvalidInputError("nothing to change: give content, type, tags, importance, scope, expires or pinned")
    return {"memory": full(m.edit(a["id"], **fields))}


def graph(m: "Mnemo", a: dict[str, Any], _: Context) -> dict[str, Any]:
    """The memory and what links reach from it, breadth first, up to ``depth`` steps and 60 memories."""
    center = m.get(a["id"])
    nodes: dict[str, dict[str, Any]] = {center.id: brief(center)}
    edges: dict[tuple[str, str, str], dict[str, Any]] = {}
    frontier = [center.id]
    for _step in range(int(a["depth"])):
        nxt = []
        for mid in frontier:
            for link in m.related(mid):
                src, dst = (mid, link["id"]) if link.get("direction", "out") == "out" else (link["id"], mid)
                edges.setdefault((src, dst, link["kind"]), {"src": src, "dst": dst, "kind": link["kind"], "strength": link.get("strength")})
                if link["id"] not in nodes and len(nodes) < 60:
                    try:
                        nodes[link["id"]] = brief(m.get(link["id"]))
                    except NotFoundError:  # a link to a memory purged since
                        continue
                    nxt.append(link["id"])
        frontier = nxt
    return {"center": center.id, "nodes": list(nodes.values()), "edges": [e for e in edges.values() if e["src"] in nodes and e["dst"] in nodes]}


def review(m: "Mnemo", a: dict[str, Any], _: Context) -> dict[str, Any]:
    scope = a["scope"] or None
    return {"scope": scope or m.scope, "results": [full(x) for x in m.review(limit=a["limit"], scope=scope)],
            "possible_conflicts": [{"new": full(c["new"]), "old": full(c["old"]), "why": c["why"]} for c in m.conflicts(scope=scope, limit=a["limit"])]}


def changes(m: "Mnemo", a: dict[str, Any], _: Context) -> dict[str, Any]:
    found = m.changes(days=a["days"], scope=a["scope"] or None, limit=a["limit"])
    return {"results": [{**c, "memory": brief(c["memory"])} for c in found]}


def stats(m: "Mnemo", a: dict[str, Any], _: Context) -> dict[str, Any]:
    return {**m.stats(), "activity": m.activity(weeks=a["weeks"])}


def ingest(m: "Mnemo", a: dict[str, Any], ctx: Context) -> dict[str, Any]:
    assert ctx.uploads is not None
    # searchable by its words at once; the server embeds it in the background (``vectors_pending``)
    report = m.ingest_upload(a["filename"], ctx.body, folder=ctx.uploads, scope=a["scope"] or None, tags=a["tags"] or None,
                             vectors="later")
    return {k: v for k, v in report.items() if k != "timings"}


def resync(m: "Mnemo", a: dict[str, Any], _: Context) -> dict[str, Any]:
    src = _source(m, a["key"])
    report = m.ingest([src["key"].split(":", 1)[1]], scope=None, vectors="later")
    return {k: v for k, v in report.items() if k != "timings"}


def remove_source(m: "Mnemo", a: dict[str, Any], _: Context) -> dict[str, Any]:
    """Forget every chunk of a source (each can be restored), and mark it deleted."""
    src = _source(m, a["key"])
    return m.forget_source(src["key"])


def _source(m: "Mnemo", key: str) -> dict[str, Any]:
    found = [s for s in m.sources() if s["key"] == key]
    if not found:
        raise NotFoundError(f"no source {key!r} (see GET /api/v1/sources)")
    return found[0]


def capture_preview(m: "Mnemo", a: dict[str, Any], _: Context) -> dict[str, Any]:
    report = m.auto(a["text"], scope=a["scope"] or None, dry_run=True)
    return {"detected": report["detected"], "extractor": report.get("extractor")}


def capture_save(m: "Mnemo", a: dict[str, Any], _: Context) -> dict[str, Any]:
    records = []
    for i, item in enumerate(a["items"]):
        if not isinstance(item, dict) or not isinstance(item.get("content"), str):
            raise InvalidInputError(f"items[{i}]: must be an object with a content string")
        records.append({"content": item["content"], "type": item.get("type") or "note", "scope": a["scope"] or m.scope,
                        "tags": item.get("tags") or [], "importance": item.get("importance", 0.5),
                        "confidence": item.get("confidence", 1.0), "source": "web:capture"})
    if not records:
        raise InvalidInputError("items: nothing ticked to save")
    return {"saved": [{"action": action, "memory": full(mem)} for mem, action in m.remember_many(records)]}


def _simple(fn: Callable[..., Any], wrap: Callable[[Any], Any] = lambda x: x) -> Callable[["Mnemo", dict[str, Any], Context], Any]:
    """A handler that calls the operation ``fn(m, **arguments)`` and shapes its result with ``wrap``."""
    def handler(m: "Mnemo", a: dict[str, Any], _: Context) -> Any:
        return wrap(fn(m, **a))
    return handler


def _memory(result: "Memory") -> dict[str, Any]:
    return {"memory": full(result)}


# ---------------------------------------------------------------- the routes

_ID = Param("id", where="path", required=True, help="A memory id.")
_SCOPE_Q = Param("scope", help="A scope ('global', 'project:<name>'), or 'all'; default: the server's scope plus global.")
_FILTERS = (
    Param("type", choices=MEMORY_TYPES, help="Only memories of this type."),
    Param("tag", kind="list", help="Only memories with all these tags (repeat, or comma-separated)."),
    Param("since", help="Created at or after (a date, or 7d)."),
    Param("until", help="Created before (a date, or 7d)."),
)
_MEMORY_BODY = (
    Param("type", where="body", choices=MEMORY_TYPES, help="The kind of statement."),
    Param("scope", where="body", help="Where it belongs: 'global' or 'project:<name>'."),
    Param("tags", kind="list", where="body", help="Tags."),
    Param("importance", kind="float", where="body", lo=0, hi=1, help="0..1, how much it matters."),
)

ROUTES: tuple[Route, ...] = (
    Route("GET", "/info", "info", "The store, the server's scope, the scopes in use, the memory types.", info, tags=("store",)),
    Route("GET", "/search", "recall", "Search memories by meaning and words, best first, with each score explained.", search, (
        Param("q", required=True, help="What to look for, in any language."),
        Param("k", kind="int", default=10, lo=1, hi=100, help="Most results."),
        _SCOPE_Q, *_FILTERS,
        Param("status", choices=("active", "superseded", "archived", "expired", "all"), help="Which memories (default: active)."),
        Param("explain", kind="bool", default=True, help="Include how each score was computed."))),
    Route("GET", "/memories", "list", "List memories, newest first, with filters and paging.", list_memories, (
        _SCOPE_Q, *_FILTERS,
        Param("status", choices=(*STATUSES, "all"), help="Which memories (default: active)."),
        Param("limit", kind="int", default=50, lo=1, hi=500, help="Page size."),
        Param("offset", kind="int", default=0, lo=0, hi=10**9, help="Memories to skip (the next page: next_offset)."))),
    Route("POST", "/memories", "remember", "Save a memory (a repeat merges; a replacement supersedes).", remember, (
        Param("content", where="body", required=True, help="The statement to remember."),
        *_MEMORY_BODY[:3], Param("importance", kind="float", where="body", default=0.5, lo=0, hi=1, help="0..1.")), status=201),
    Route("GET", "/memories/{id}", "get", "One memory with every field, its history and links.", get, (_ID,)),
    Route("PATCH", "/memories/{id}", "edit", "Correct a memory (the old version stays in its history).", edit, (
        _ID, Param("content", where="body", help="Corrected text."), *_MEMORY_BODY,
        Param("expires", where="body", help="Expiry such as 30d or a date; '' clears it."),
        Param("pinned", kind="bool", where="body", help="Pinned memories are never archived."))),
    Route("DELETE", "/memories/{id}", "purge", "Delete a memory for good, with every trace of its text.",
          lambda m, a, _: m.purge([a["id"]]), (_ID,)),
    Route("POST", "/memories/{id}/forget", "forget", "Soft-delete a memory (restore undoes it).",
          _simple(lambda m, id: m.forget(id), _memory), (_ID,)),
    Route("POST", "/memories/{id}/restore", "restore", "Undo a memory's last lifecycle step.",
          _simple(lambda m, id: m.restore(id), _memory), (_ID,)),
    Route("POST", "/memories/{id}/confirm", "confirm", "Reconfirm an expired memory.",
          _simple(lambda m, id, expires: m.confirm(id, expires=expires or None), _memory),
          (_ID, Param("expires", where="body", help="Next expiry (30d, a date)."))),
    Route("POST", "/memories/{id}/resolve", "resolve", "Settle a possible conflict (id: the newer memory).",
          _simple(lambda m, id, supersede: m.resolve(id, supersede=supersede), _memory),
          (_ID, Param("supersede", kind="bool", where="body", required=True, help="True: the newer replaces the older."))),
    Route("GET", "/memories/{id}/history", "history", "Every recorded event of a memory.",
          _simple(lambda m, id: m.history(id), lambda ev: {"events": ev}), (_ID,)),
    Route("GET", "/memories/{id}/graph", "related", "A memory's neighbourhood of links.", graph,
          (_ID, Param("depth", kind="int", default=2, lo=1, hi=3, help="Steps of links to follow."))),
    Route("GET", "/recent", "recent", "Memories created in the last days, newest first.",
          _simple(lambda m, days, limit, scope: m.recent(days=days, limit=limit, scope=scope or None), lambda r: {"results": [brief(x) for x in r]}),
          (Param("days", kind="float", default=7, lo=0.01, hi=3650, help="Days back."),
           Param("limit", kind="int", default=20, lo=1, hi=500, help="Most memories."), _SCOPE_Q)),
    Route("GET", "/review", "review", "Memories past their expiry, and possible conflicts.", review,
          (_SCOPE_Q, Param("limit", kind="int", default=50, lo=1, hi=500, help="Most of each."))),
    Route("GET", "/changes", "changes", "What the store merged, superseded, archived, forgot or edited lately, each undoable.", changes,
          (Param("days", kind="float", default=7, lo=0.01, hi=3650, help="Days back."), _SCOPE_Q,
           Param("limit", kind="int", default=100, lo=1, hi=1000, help="Most changes."))),
    Route("POST", "/context", "context", "The block of memories an assistant would get for a request.",
          _simple(lambda m, query, scope, budget_tokens, top_k: m.context(query, scope=scope or None, budget_tokens=budget_tokens, top_k=top_k, surface="web")),
          (Param("query", where="body", required=True, help="The request."), Param("scope", where="body", help="Scope."),
           Param("budget_tokens", kind="int", where="body", default=400, lo=20, hi=20000, help="Token budget."),
           Param("top_k", kind="int", where="body", default=5, lo=1, hi=50, help="Most memories.")), tags=("assistants",)),
    Route("GET", "/stats", "stats", "Totals, by type/scope/status, size, LLM use, and weekly activity.", stats,
          (Param("weeks", kind="int", default=12, lo=1, hi=520, help="Weeks of activity."),), tags=("store",)),
    Route("GET", "/sources", "sources", "Ingested documents, one row each.",
          _simple(lambda m, kind: m.sources(kind=kind or None), lambda r: {"results": r}),
          (Param("kind", choices=("file", "url", "chat"), help="Only this kind."),), tags=("documents",)),
    Route("POST", "/sources/resync", "ingest", "Read a source again (changed chunks replace the old ones).", resync,
          (Param("key", where="body", required=True, help="The source's key."),), tags=("documents",)),
    Route("POST", "/sources/remove", "forget_source", "Forget every chunk of a source (each can be restored).", remove_source,
          (Param("key", where="body", required=True, help="The source's key."),), tags=("documents",)),
    Route("POST", "/ingest", "ingest_upload", "Ingest an uploaded document (the body is the file's bytes).", ingest, (
        Param("filename", required=True, help="The file's name (no folders)."), Param("scope", help="Scope of its chunks."),
        Param("tags", kind="list", help="Tags of its chunks.")), upload=True, tags=("documents",)),
    Route("POST", "/capture/preview", "auto", "What would be remembered from a message or conversation (nothing saved).",
          capture_preview, (Param("text", where="body", required=True, help="A message or conversation."),
                            Param("scope", where="body", help="Scope.")), tags=("capture",)),
    Route("POST", "/capture/save", "remember_many", "Save the statements chosen from a preview.", capture_save,
          (Param("items", kind="json", where="body", required=True, help="The detected items to save."),
           Param("scope", where="body", help="Scope.")), tags=("capture",)),
    Route("GET", "/doctor", "doctor", "Check the store, the model and the index.",
          _simple(lambda m: m.doctor(), lambda r: {"checks": r}), tags=("store",)),
    Route("GET", "/config", "config", "The effective settings and where each came from (read-only).",
          lambda m, a, ctx: {"settings": ctx.settings}, tags=("store",)),
    Route("GET", "/log", "log", "What was injected into assistants' context.",
          _simple(lambda m, limit: m.log(limit=limit), lambda r: {"results": r}),
          (Param("limit", kind="int", default=50, lo=1, hi=500, help="Most entries."),), tags=("assistants",)),
)


def openapi(version: str) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``ROUTES``."""
    kinds = {"str": {"type": "string"}, "int": {"type": "integer"}, "float": {"type": "number"}, "bool": {"type": "boolean"},
             "list": {"type": "array", "items": {"type": "string"}}, "json": {"type": "array", "items": {"type": "object"}}}

    def schema(p: Param) -> dict[str, Any]:
        s = dict(kinds[p.kind])
        if p.choices:
            s["enum"] = list(p.choices)
        if p.lo is not None:
            s["minimum"] = p.lo
        if p.hi is not None:
            s["maximum"] = p.hi
        if p.default is not None:
            s["default"] = p.default
        return s

    error = {"description": "A bad request, a missing memory or a store problem, in one line.",
             "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    paths: dict[str, Any] = {}
    for r in ROUTES:
        op: dict[str, Any] = {"operationId": r.op if r.op != "ingest" else "resync", "summary": r.summary, "tags": list(r.tags),
                              "parameters": [{"name": p.name, "in": p.where, "required": p.required or p.where == "path",
                                              "description": p.help, "schema": schema(p)} for p in r.params if p.where != "body"],
                              "responses": {str(r.status): {"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}},
                                            "400": error, "401": error, "404": error}}
        body = [p for p in r.params if p.where == "body"]
        if body:
            op["requestBody"] = {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "additionalProperties": False,
                "properties": {p.name: {**schema(p), "description": p.help} for p in body},
                "required": [p.name for p in body if p.required]}}}}
        if r.upload:
            op["requestBody"] = {"required": True, "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}}
        paths.setdefault("/api/v1" + r.path, {})[r.method.lower()] = op
    return {
        "openapi": "3.1.0",
        "info": {"title": "mnemo web API", "version": version,
                 "description": "The operations of mnemo's command line and MCP server, over HTTP. Every call needs the session "
                                "cookie (a login link from `mnemo web`) or `Authorization: Bearer <token>` (`mnemo web --token`)."},
        "paths": paths,
        "components": {
            "schemas": {"Error": {"type": "object", "required": ["error"], "properties": {"error": {
                "type": "object", "required": ["type", "message"],
                "properties": {"type": {"type": "string"}, "message": {"type": "string"}}}}}},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}, "cookie": {"type": "apiKey", "in": "cookie", "name": "mnemo_<store>"}},
        },
        "security": [{"bearer": []}, {"cookie": []}],
    }


def parse_json(body: bytes) -> Any:
    """A JSON request body, or InvalidInputError in one line."""
    if not body.strip():
        return None
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"the request body is not valid JSON ({str(exc).splitlines()[0][:80]})") from None
