"""The PostgreSQL store: the same Store port on a shared server, for a team or a large memory.

``Mnemo("postgresql://user@host/db")`` opens it (psycopg 3, imported only here). Differences
from the SQLite store, each for a reason:

* **Vectors** live in ``memories.vec`` (pgvector, the store's recorded model and dimension) with
  an HNSW cosine index. The core asks the store for a vector index (:meth:`vector_index`)
  instead of loading every vector into memory: candidates come from HNSW with
  ``hnsw.iterative_scan = relaxed_order`` (filters never starve the result) and a generous
  ``ef_search``, then are rescored exactly by cosine and re-sorted.
* **Full text**: PostgreSQL has no Chinese parser, so the core's own tokens (segmented by
  jieba, normalised, stemmed) are stored as postings (term, memory, frequency) with a btree on
  the term — under row-level security a GIN index on a tsvector is never used (``@@`` is not
  leakproof), text equality is. Scores are BM25 with FTS5's formula, so ``_recall.rank`` fuses the
  same numbers on both backends.
* **Concurrency**: every write transaction takes one advisory lock for the store first — the
  equivalent of SQLite's ``BEGIN IMMEDIATE``: dedup and supersede decisions made inside it see
  every committed write and no two writers decide on the same state. Reads never wait.
* **Team**: memories carry the database role that wrote them and a visibility; row-level
  security (in the schema, forced) hides other roles' private memories. A client cannot get
  round it by editing its config: the server decides from the role it authenticated as.
* **Connections**: ``connect_timeout`` bounds an unreachable server to a few seconds; a
  connection lost outside a transaction (a server restart) is reopened and the statement
  retried once; inside a transaction the write is rolled back and reported.

What both backends do alike (transactions, filtered reads, history, the auxiliary tables) is
``shared.SharedStore``, the row mapping ``rows``, the filters' SQL ``sql``; the team methods
are ``postgres_team.PgTeam``; the schema is ``postgres_schema``.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

import numpy as np

from .._base.models import Memory, format_time, utcnow
from ..errors import SchemaTooNewError, StoreError, StoreKeyError, StoreMissingError, StorePrivilegeError, StoreUnreachableError
from .base import Filters
from .postgres_schema import EXTENSIONS, GRANTS, LATEST_VERSION, MIGRATIONS
from .postgres_team import PgTeam
from .rows import MEMORY_COLUMNS as _COLUMNS
from .rows import memory_values, row_to_memory, update_values
from .shared import SharedStore
from .sql import POSTGRES, filter_clause, marks, pyformat
from .traces import PurgeTraces

#: BM25 parameters of FTS5's bm25() (k1, b), and the least a match counts for (as in SQLite)
K1, B = 1.2, 0.75
MIN_MATCH_BM25 = 0.5
#: HNSW candidates examined per query; with iterative scans filters do not starve the result
EF_SEARCH = 400
#: seconds to wait for an unreachable server, and for a restarting one to come back
CONNECT_TIMEOUT = 5
RECONNECT_FOR = 15.0
#: corpus statistics (rows, mean length) for BM25 are reused this long between own writes
STATS_TTL = 30.0
#: one advisory lock key per store: writers queue on it like on SQLite's write lock
_WRITE_LOCK = 0x6D6E656D6F  # "mnemo"



def redact_url(url: str) -> str:
    """The URL without its password (for messages and ``stats``): ``user:***@``, and a
    ``password=`` query parameter as ``password=***``."""
    url = re.sub(r"(://[^:/@]+):[^@/]*@", r"\1:***@", url)
    return re.sub(r"([?&]password=)[^&#]*", r"\1***", url)


def split_password(url: str) -> tuple[str, str | None]:
    """``url`` without its password (neither in the user part nor as a ``password=`` query
    parameter; nothing else changes) and the password itself, decoded, or None."""
    parts = urlsplit(url)
    password: str | None = None
    netloc = parts.netloc
    userinfo, at, hostport = netloc.rpartition("@")
    if at and ":" in userinfo:
        user, _, raw = userinfo.partition(":")
        password, netloc = unquote(raw), f"{user}@{hostport}"
    query = parts.query
    if query:
        kept = []
        for piece in query.split("&"):
            name, _, value = piece.partition("=")
            if unquote(name) == "password":
                password = unquote(value)  # libpq decodes %XX only (a "+" is a plus)
            else:
                kept.append(piece)
        query = "&".join(kept)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment)), password


def _vec(blob: bytes | np.ndarray) -> list[float]:
    """A float32 vector as the list psycopg sends as ``real[]`` (cast to ``vector`` in SQL)."""
    arr = np.frombuffer(blob, dtype=np.float32) if isinstance(blob, (bytes, bytearray, memoryview)) else np.asarray(blob, np.float32)
    return arr.astype(np.float64).tolist()


def term_counts(tokens: str) -> tuple[list[str], list[int]]:
    """The core's space-separated index tokens as postings: distinct terms and their counts
    (a term too long for a btree key is left out: no query term is that long)."""
    counts = Counter(t for t in tokens.split() if len(t) <= 500)
    return list(counts), list(counts.values())


def _fts_words(match: str) -> list[str]:
    """The words of the quoted terms and phrases of an FTS5 OR-expression (``fts_match_expression``):
    a phrase counts through its words."""
    return list(dict.fromkeys(w for p in re.findall(r'"([^"]*)"', match) for w in p.split()))


def _filter_sql(filters: Filters) -> tuple[str, list[Any]]:
    """The WHERE condition for ``filters`` over alias ``m``, in psycopg's placeholders (for the
    statements of this module, which are written in them)."""
    where, args = filter_clause(filters, POSTGRES)
    return pyformat(where), args


class PgVectorIndex:
    """The core's vector-index interface (``search``/``start_search``/``similarity``/``vectors``, as
    :class:`~mnemo._recall.vindex.VectorIndex`) answered by pgvector in the server."""

    def __init__(self, store: "PostgresStore", model: str, generation: str | None):
        self.store = store
        self.model = model
        self.generation = generation
        self.seq = 0

    def search(self, query: np.ndarray, k: int, filters: Filters | None = None) -> list[tuple[int, float]]:
        """Top ``k`` ``(pk, cosine)`` among the rows that pass ``filters`` (all of them, tags and
        expiry included, applied in SQL inside the scan), best first."""
        return self.store.vector_search(self.model, query, filters or Filters(statuses=()), k)

    def start_search(self, query: np.ndarray, k: int, filters: Filters | None = None) -> Callable[[], list[tuple[int, float]]]:
        """:meth:`search`, run now (the store's one connection runs nothing beside it)."""
        hits = self.search(query, k, filters)
        return lambda: hits

    def similarity(self, query: np.ndarray, pks: list[int]) -> dict[int, float]:
        """Exact cosine of ``query`` with the given memories (those that have a vector)."""
        if not pks or not self.store._vectors_ready(self.model):
            return {}
        rows = self.store._q("SELECT pk, 1 - (vec <=> %s::real[]::vector) FROM memories WHERE pk = ANY(%s) AND vec IS NOT NULL",
                             (_vec(query), list(pks)))
        return {int(pk): float(s) for pk, s in rows}

    def vectors(self, pks: list[int]) -> dict[int, np.ndarray]:
        """The stored vectors of those memories that have one."""
        if not pks or not self.store._vectors_ready(self.model):
            return {}
        rows = self.store._q("SELECT pk, vec::real[] FROM memories WHERE pk = ANY(%s) AND vec IS NOT NULL", (list(pks),))
        return {int(pk): np.asarray(v, np.float32) for pk, v in rows}


class PostgresStore(SharedStore, PurgeTraces, PgTeam):
    """Memories, history, relations and the derived index in a PostgreSQL database."""

    encrypted = False
    _DIALECT = POSTGRES
    _OWNER_KEY = "owner, "  # session state and usage are per role (schema migration 4)

    def __init__(self, url: str, *, create: bool = True, key: str | None = None):
        """Open the mnemo schema in the database at ``url`` (creating it with ``create``)."""
        if key:
            raise StoreKeyError("encryption keys are for SQLite stores; a PostgreSQL store relies on the server's "
                                "own protection (TLS, disk encryption) — unset MNEMO_KEY / encrypt for this store")
        try:
            import psycopg
        except ImportError:  # pragma: no cover - a dependency, but say how to fix a broken install
            raise StoreError("PostgreSQL stores need psycopg: pip install 'psycopg[binary]'") from None
        self._psycopg = psycopg
        self.url = redact_url(url)
        self._dsn = url
        parts = urlsplit(url)
        self.path = Path(parts.path.lstrip("/") or "postgres")
        self._where_text = f"{parts.hostname or dict(parse_qsl(parts.query)).get('host', 'localhost')}" + (
            f":{parts.port}" if parts.port else "")
        self._txn_depth = 0
        self._stats: tuple[float, int, float] | None = None
        self._ready: tuple[str, int] | None = None
        self._model_cache: tuple[tuple[str, int] | None] | None = None
        self._df: dict[str, int] = {}  # document frequencies, as long as the corpus statistics
        self.conn: Any = None
        self._connect()
        try:
            self._check_and_migrate(create)
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------ connection

    def child_connection(self) -> tuple[str, dict[str, str]]:
        """How a child process (the background capture worker, ``mnemo auto --worker``) opens
        this store again: ``(url, env)``. ``url`` is the store's URL without its password (a
        command line is readable by every user of the machine, ``ps``); ``env`` holds what the
        child's environment needs on top of this process's: ``PGPASSWORD`` when the URL had a
        password (libpq reads it when the URL has none; an environment is readable only by its
        owner). ``url`` alone serves when the password comes from ``~/.pgpass`` or is already
        in the environment. (``self.url`` is for messages: its ``***`` is no password.)

        A caller starts the child as
        ``subprocess.Popen([..., "--db", url], env={**os.environ, **env})``."""
        url, password = split_password(self._dsn)
        return url, ({"PGPASSWORD": password} if password is not None else {})

    def _connect(self) -> None:
        psycopg = self._psycopg
        params: dict[str, Any] = {"autocommit": True}
        if "connect_timeout" not in self._dsn:
            params["connect_timeout"] = CONNECT_TIMEOUT
        try:
            self.conn = psycopg.connect(self._dsn, **params)
        except psycopg.OperationalError as exc:
            detail = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
            raise StoreUnreachableError(f"cannot connect to PostgreSQL at {self._where_text} ({self.url}): {detail}") from None
        except psycopg.ProgrammingError as exc:
            raise StoreError(f"{self.url} is not a usable PostgreSQL URL: {exc}") from None
        # placeholders until pgvector is loaded; validated by the extension on first use
        self.conn.execute(f"SET hnsw.ef_search = {EF_SEARCH}")
        self.conn.execute("SET hnsw.iterative_scan = relaxed_order")

    def _reconnect(self) -> None:
        """Reopen a lost connection, waiting a little for a restarting server."""
        try:
            self.conn.close()
        except Exception:
            pass
        deadline = time.monotonic() + RECONNECT_FOR
        while True:
            try:
                self._connect()
                return
            except StoreUnreachableError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def _execute(self, sql: str, args: Any = None) -> Any:
        """Run one statement; outside a transaction a lost connection is reopened and the
        statement retried once (a server restart is not the user's problem)."""
        psycopg = self._psycopg
        try:
            return self.conn.execute(sql, args)
        except psycopg.errors.InsufficientPrivilege as exc:
            raise StorePrivilegeError(f"PostgreSQL refused ({self.url}): {exc.diag.message_primary}") from None
        except psycopg.OperationalError as exc:
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            if not (self.conn.broken or self.conn.closed):
                raise StoreError(f"PostgreSQL: {message}") from None
            if self._txn_depth:
                raise StoreError(f"lost the connection to PostgreSQL during a write; it was rolled back ({message})") from None
            self._reconnect()
            return self.conn.execute(sql, args)

    def _q(self, sql: str, args: Any = None) -> list[tuple[Any, ...]]:
        return self._execute(sql, args).fetchall()

    def _one(self, sql: str, args: Any = None) -> tuple[Any, ...] | None:
        return self._execute(sql, args).fetchone()

    # the primitives of the shared methods (shared.py): ``?`` placeholders, made psycopg's here

    def _rows(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._q(pyformat(sql), args)

    def _row(self, sql: str, args: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        return self._one(pyformat(sql), args)

    def _run(self, sql: str, args: Sequence[Any] = ()) -> int:
        return int(self._execute(pyformat(sql), args).rowcount)

    def _run_many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        with self.conn.cursor() as cur:
            cur.executemany(pyformat(sql), list(rows))

    def close(self) -> None:
        """Close the connection (idempotent)."""
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    @contextmanager
    def _outer_transaction(self) -> Iterator[None]:
        """The outermost write transaction. It first takes the store's write lock, so writers
        run one after another, as on SQLite; readers never wait."""
        if self.conn.broken or self.conn.closed:
            self._reconnect()
        with self._begin():
            self._execute("SELECT pg_advisory_xact_lock(%s)", (_WRITE_LOCK,))
            self._stats = None
            self._model_cache = None
            self._txn_depth = 1
            try:
                yield
            finally:
                self._txn_depth = 0
                self._model_cache = None

    @contextmanager
    def _begin(self, *, rollback: bool = False) -> Iterator[None]:
        psycopg = self._psycopg
        try:
            with self.conn.transaction(force_rollback=rollback):
                yield
        except psycopg.errors.InsufficientPrivilege as exc:
            raise StorePrivilegeError(f"PostgreSQL refused: {exc.diag.message_primary}") from None
        except psycopg.OperationalError as exc:
            raise StoreError(f"lost the connection to PostgreSQL during a write; it was rolled back ({str(exc).strip()})") from None

    @contextmanager
    def rolled_back(self) -> Iterator[None]:
        """A write transaction that is always rolled back (self-tests that must leave no trace)."""
        with self._begin(rollback=True):
            self._txn_depth = 1
            try:
                yield
            finally:
                self._txn_depth = 0

    # ------------------------------------------------------------ schema

    def _check_and_migrate(self, create: bool) -> None:
        version = self._current_version()
        if version > LATEST_VERSION:
            raise SchemaTooNewError(f"{self.url} has mnemo schema version {version}, newer than this mnemo understands "
                                    f"({LATEST_VERSION}); upgrade mnemo (pip install -U mnemo)")
        if version == LATEST_VERSION:
            return
        if version == 0 and not create:
            raise StoreMissingError(f"no mnemo store in {self.url} (run `mnemo init --db {self.url}` to create one)")
        self._create_extensions()
        psycopg = self._psycopg
        try:
            with self.conn.transaction():
                self._execute("SELECT pg_advisory_xact_lock(%s)", (_WRITE_LOCK,))
                current = self._current_version()  # another client may have migrated meanwhile
                if current == 0:
                    self._execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)")
                for number, name, sql in MIGRATIONS:
                    if number <= current:
                        continue
                    self._execute(sql)
                    self._execute("INSERT INTO schema_migrations VALUES (%s, %s, %s)", (number, name, format_time(utcnow())))
                schema = self._one("SELECT current_schema()")[0]  # type: ignore[index]
                self._execute(GRANTS.format(schema=_ident(schema)))
                self._execute("GRANT SELECT ON schema_migrations TO PUBLIC")
        except psycopg.errors.InsufficientPrivilege as exc:
            raise StorePrivilegeError(
                f"cannot create mnemo's tables in {self.url}: {exc.diag.message_primary} — the role needs CREATE on "
                "the database's schema (e.g. GRANT CREATE ON SCHEMA public TO <role>, or make it the database owner)") from None
        except psycopg.errors.DuplicateTable as exc:
            raise StoreError(f"{self.url} already has tables mnemo did not create ({exc.diag.message_primary}); "
                             "use an empty database or schema") from None

    def _current_version(self) -> int:
        if self._one("SELECT to_regclass('schema_migrations')")[0] is None:  # type: ignore[index]
            return 0
        return int(self._one("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")[0])  # type: ignore[index]

    def _create_extensions(self) -> None:
        """Create the extensions the schema needs, or say exactly which privilege is missing."""
        psycopg = self._psycopg
        have = {r[0] for r in self._q("SELECT extname FROM pg_extension")}
        for ext in EXTENSIONS:
            if ext in have:
                continue
            available = self._one("SELECT 1 FROM pg_available_extensions WHERE name = %s", (ext,))
            if available is None:
                raise StorePrivilegeError(
                    f"the PostgreSQL server at {self._where_text} has no '{ext}' extension installed (pgvector); "
                    "install it on the server (see docs/postgres.md, or scripts/pg-setup)")
            try:
                self._execute(f"CREATE EXTENSION IF NOT EXISTS {ext}")
            except (psycopg.errors.InsufficientPrivilege, StoreError) as exc:
                db = self._one("SELECT current_database(), current_user")
                raise StorePrivilegeError(
                    f"mnemo needs the '{ext}' extension in database {db[0]}, and role {db[1]} may not create it "  # type: ignore[index]
                    f"(pgvector is not a trusted extension: it takes a superuser). Ask an administrator to run "
                    f"`CREATE EXTENSION {ext};` in {db[0]}, then run `mnemo init` again ({exc})") from None  # type: ignore[index]

    @property
    def schema_version(self) -> int:
        """The store's schema version (the last migration recorded in ``schema_migrations``)."""
        return self._current_version()

    def schema_versions(self) -> tuple[int, int]:
        """``(this store's schema version, the latest this code knows)`` (``mnemo doctor``)."""
        return self._current_version(), LATEST_VERSION

    # ------------------------------------------------------------ meta

    def get_meta(self, key: str) -> str | None:
        row = self._one("SELECT value FROM meta WHERE key = %s", (key,))
        return None if row is None else row[0]

    def set_meta(self, key: str, value: str) -> None:
        self._model_cache = None
        self._execute("INSERT INTO meta VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = excluded.value", (key, value))
        if key in ("embedder", "dim"):
            self._sync_vectors()

    def delete_meta(self, key: str) -> None:
        self._model_cache = None
        self._execute("DELETE FROM meta WHERE key = %s", (key,))
        if key in ("embedder", "dim"):
            self._ready = None

    def _model(self) -> tuple[str, int] | None:
        """The store's recorded model and dimension (what ``memories.vec`` holds); read once
        per write transaction (under the write lock nobody else can change it)."""
        if self._txn_depth and self._model_cache is not None:
            return self._model_cache[0]
        rows = dict(self._q("SELECT key, value FROM meta WHERE key IN ('embedder', 'dim')"))
        rec = (rows["embedder"], int(rows["dim"])) if "embedder" in rows and "dim" in rows else None
        self._model_cache = (rec,) if self._txn_depth else None
        return rec

    def _vec_dim(self) -> int | None:
        row = self._one("SELECT atttypmod FROM pg_attribute WHERE attrelid = 'memories'::regclass AND attname = 'vec'")
        return None if row is None or row[0] is None or row[0] < 0 else int(row[0])

    def _sync_vectors(self) -> None:
        """Point ``memories.vec`` at the recorded model's vectors (after a model is claimed or
        the index rebuilt): the column gets the model's dimension and an HNSW index."""
        model = self._model()
        self._ready = None
        if model is None:
            return
        name, dim = model
        if self._vec_dim() != dim:
            self._execute("SELECT mnemo_set_vector_dim(%s)", (int(dim),))
        self._execute(
            "UPDATE memories m SET vec = e.vector FROM embeddings e WHERE e.model = %s AND e.dim = %s AND e.text_hash = m.embed_hash "
            "AND m.vec IS DISTINCT FROM e.vector", (name, dim))
        self._execute(
            "UPDATE memories m SET vec = NULL WHERE vec IS NOT NULL AND NOT EXISTS "
            "(SELECT 1 FROM embeddings e WHERE e.model = %s AND e.dim = %s AND e.text_hash = m.embed_hash)", (name, dim))

    def _vectors_ready(self, model: str) -> bool:
        """True when ``memories.vec`` holds ``model``'s vectors."""
        if self._ready is None or self._ready[0] != model:
            rec = self._model()
            if rec is None or rec[0] != model or self._vec_dim() != rec[1]:
                return False
            self._ready = rec
        return True

    # ------------------------------------------------------------ writes (call inside transaction())

    def insert(self, mem: Memory, *, embed_hash: str, tokens: str, cause: str) -> None:
        """Insert a memory (with its full-text row and, when there is one, its vector) and its
        'created' event."""
        rec = self._model()
        row = self._one(
            f"INSERT INTO memories ({_COLUMNS}, embed_hash, ntok, vec) VALUES ({marks(22, '%s')}, "
            "(SELECT e.vector FROM embeddings e WHERE e.model = %s AND e.dim = %s AND e.text_hash = %s)) RETURNING pk, vec IS NULL",
            (*memory_values(mem), embed_hash, len(tokens.split()), rec[0] if rec else None, rec[1] if rec else None, embed_hash),
        )
        if rec is not None and row[1]:  # type: ignore[index]
            self._vector_after_write(int(row[0]), rec)  # type: ignore[index]
        self._put_terms(int(row[0]), tokens)  # type: ignore[index]
        self.add_event(mem.id, "created", cause, {"source": mem.source})

    def _vector_after_write(self, pk: int, rec: tuple[str, int]) -> None:
        """Give a just-written memory its vector when the cache row was not readable before it:
        another role wrote that text's vector for a memory this role cannot see, and a vector
        is readable only through a visible memory of its text (row-level security) — as this
        one now is."""
        self._execute("UPDATE memories m SET vec = e.vector FROM embeddings e WHERE m.pk = %s AND e.model = %s AND e.dim = %s "
                      "AND e.text_hash = m.embed_hash", (pk, rec[0], rec[1]))

    def add_event(self, memory_id: str, kind: str, cause: str | None, data: dict[str, Any] | None = None) -> None:
        self._execute("INSERT INTO events (memory_id, kind, at, cause, data) VALUES (%s, %s, %s, %s, %s)",
                      (memory_id, kind, format_time(utcnow()), cause, json.dumps(data or {}, ensure_ascii=False)))

    def set_status(self, memory_id: str, status: str, *, superseded_by: str | None = None) -> None:
        self._execute("UPDATE memories SET status = %s, superseded_by = %s, updated_at = %s, seq = nextval('memories_seq') WHERE id = %s",
                      (status, superseded_by, format_time(utcnow()), memory_id))

    def put_embeddings(self, model: str, rows: Iterable[tuple[str, int, bytes]]) -> None:
        rows = list(rows)
        if not rows:
            return
        rec = self._model()
        if rec is not None and rec[0] == model:
            for h, d, _ in rows:
                if int(d) != rec[1]:
                    raise StoreError(f"a {d}-d vector for {model}, but this store's index is {rec[1]}-d (dimension mismatch); "
                                     "run `mnemo reindex`")
        with self.conn.cursor() as cur:
            cur.executemany("INSERT INTO embeddings (model, text_hash, dim, vector) VALUES (%s, %s, %s, %s::real[]::vector) "
                            "ON CONFLICT (model, text_hash) DO NOTHING", [(model, h, int(d), _vec(v)) for h, d, v in rows])
        if rec is not None and rec[0] == model and self._vec_dim() == rec[1]:
            self._execute("UPDATE memories m SET vec = e.vector FROM embeddings e WHERE e.model = %s AND e.text_hash = m.embed_hash "
                          "AND m.embed_hash = ANY(%s) AND m.vec IS NULL", (model, [h for h, _, _ in rows]))

    def update_fields(self, memory_id: str, **fields: Any) -> None:
        """Change fields of a memory and bump ``updated_at`` and ``seq``. ``tokens`` rewrites its
        full-text row; ``embed_hash`` points it at another vector."""
        values, tokens = update_values(fields)
        sets = "".join(f"{k} = %s, " for k in values)
        args: list[Any] = list(values.values())
        if tokens is not None:
            sets += "ntok = %s, "
            args.append(len(tokens.split()))
        if "embed_hash" in values:
            rec = self._model()
            sets += "vec = (SELECT e.vector FROM embeddings e WHERE e.model = %s AND e.dim = %s AND e.text_hash = %s), "
            args += [rec[0] if rec else None, rec[1] if rec else None, values["embed_hash"]]
        row = self._one(f"UPDATE memories SET {sets}updated_at = %s, seq = nextval('memories_seq') WHERE id = %s RETURNING pk, vec IS NULL",
                        (*args, format_time(utcnow()), memory_id))
        if "embed_hash" in values and row is not None and row[1] and rec is not None:
            self._vector_after_write(int(row[0]), rec)
        if tokens is not None and row is not None:
            self._put_terms(int(row[0]), tokens)

    def add_relation(self, src: str, dst: str, kind: str, strength: float) -> None:
        self._execute("INSERT INTO relations (src, dst, kind, strength, created_at) VALUES (%s, %s, %s, %s, %s) "
                      "ON CONFLICT (src, dst, kind) DO UPDATE SET strength = excluded.strength",
                      (src, dst, kind, float(strength), format_time(utcnow())))

    def set_fts(self, pk: int, tokens: str) -> None:
        self._execute("UPDATE memories SET ntok = %s WHERE pk = %s", (len(tokens.split()), pk))
        self._put_terms(pk, tokens)

    def _put_terms(self, pk: int, tokens: str) -> None:
        """Replace a memory's postings; they carry its owner and visibility (row-level security)."""
        terms, counts = term_counts(tokens)
        self._execute("DELETE FROM memory_terms WHERE pk = %s", (pk,))
        self._execute("INSERT INTO memory_terms (term, pk, tf, owner, visibility) SELECT u.t, m.pk, u.n, m.owner, m.visibility "
                      "FROM memories m, unnest(%s::text[], %s::int[]) u(t, n) WHERE m.pk = %s", (terms, counts, pk))

    def touch(self, ids: Sequence[str], at: str) -> None:
        """Count an access (does not bump ``seq``)."""
        self._execute("UPDATE memories SET access_count = access_count + 1, last_accessed_at = %s WHERE id = ANY(%s)", (at, list(ids)))

    def purge_rows(self, memory_ids: Sequence[str]) -> int:
        """Hard-delete memories with their relations, unshared vectors and history, leaving one
        content-free ``purged`` tombstone event each. Returns how many."""
        n = 0
        for mid in memory_ids:
            if self._one("SELECT 1 FROM memories WHERE id = %s", (mid,)) is None:
                continue
            # links first: a link is visible (and deletable) while both its memories are
            self._execute("DELETE FROM relations WHERE src = %s OR dst = %s", (mid, mid))
            row = self._one("DELETE FROM memories WHERE id = %s RETURNING embed_hash, pk, owner, visibility", (mid,))
            if row is None:
                continue
            self._execute("DELETE FROM memory_terms WHERE pk = %s", (row[1],))
            self._execute("DELETE FROM embeddings e WHERE e.text_hash = %s AND NOT EXISTS "
                          "(SELECT 1 FROM memories m WHERE m.embed_hash = e.text_hash)", (row[0],))
            self._execute("DELETE FROM events WHERE memory_id = %s", (mid,))
            # the tombstone of a private memory stays as private as the memory was
            self._execute("INSERT INTO events (memory_id, kind, at, cause, data, mem_owner, mem_visibility) "
                          "VALUES (%s, 'purged', %s, 'purge', '{}', %s, %s)", (mid, format_time(utcnow()), row[2], row[3]))
            n += 1
        return n

    def purge_everything(self) -> int:
        """Delete every memory (this role can see), event, relation, vector and aux row."""
        n = int(self._one("SELECT COUNT(*) FROM memories")[0])  # type: ignore[index]
        # links first: a link is visible (and deletable) while both its memories are
        for table in ("relations", "memory_terms", "memories", "events", "embeddings", "sources", "injections", "session_state", "jobs"):
            self._execute(f"DELETE FROM {table}")
        for key in ("embedder", "dim"):
            self.delete_meta(key)
        return n

    def scrub(self, *, wait: float = 10.0) -> bool:
        """Ask the server to reclaim deleted rows: VACUUM every table a purge touches. Returns
        False when it could not (VACUUM needs the table's owner, and a transaction may not be
        open): the dead rows then stay in the table files until the server's autovacuum runs."""
        if self._txn_depth:
            return False
        done = True
        for table in ("memories", "memory_terms", "events", "embeddings", "relations", "injections", "sources"):
            try:
                self._execute(f"VACUUM {table}")
            except StoreError:
                done = False
        return done

    def conversion_leftovers(self) -> list[str]:
        """Encryption leftovers beside a store file: a PostgreSQL store has no file (none)."""
        return []

    def backup_files(self) -> list[Path]:
        """Backups are the server's business (pg_dump); mnemo writes no files beside it."""
        return []

    def drop_embeddings_except(self, model: str) -> int:
        row = self._one("WITH d AS (DELETE FROM embeddings WHERE model != %s RETURNING 1) SELECT COUNT(*) FROM d", (model,))
        return int(row[0])  # type: ignore[index]

    # ------------------------------------------------------------ reads

    def get(self, memory_id: str) -> Memory | None:
        row = self._one(f"SELECT {_COLUMNS} FROM memories WHERE id = %s", (memory_id,))
        return None if row is None else row_to_memory(row)

    def get_many_by_pk(self, pks: Sequence[int]) -> dict[int, Memory]:
        if not pks:
            return {}
        return {int(r[0]): row_to_memory(r[1:]) for r in self._q(f"SELECT pk, {_COLUMNS} FROM memories WHERE pk = ANY(%s)", (list(pks),))}

    def scoring_rows(self, pks: Sequence[int]) -> dict[int, tuple[Any, ...]]:
        """``pk -> (importance, confidence, access_count, created_epoch, last_accessed_epoch,
        stored_epoch, pinned, type, scope)`` for the candidates (which passed the filters in their channel)."""
        if not pks:
            return {}
        rows = self._rows(
            "SELECT pk, importance, confidence, access_count, extract(epoch FROM created_at::timestamptz), "
            "extract(epoch FROM last_accessed_at::timestamptz), extract(epoch FROM COALESCE(stored_at, created_at)::timestamptz), "
            "pinned, type, scope FROM memories WHERE pk = ANY(?)", [list(pks)])
        return {int(pk): (imp, conf, acc, float(c), None if last is None else float(last), float(s), bool(p), kind, scope)
                for pk, imp, conf, acc, c, last, s, p, kind, scope in rows}

    def relations(self, memory_id: str) -> list[dict[str, Any]]:
        """Links from and to a memory: ``{"id", "kind", "direction", "strength"}``."""
        rows = self._q("SELECT src, dst, kind, strength FROM relations WHERE src = %s OR dst = %s ORDER BY strength DESC, created_at",
                       (memory_id, memory_id))
        return [{"id": dst if src == memory_id else src, "kind": kind, "direction": "out" if src == memory_id else "in",
                 "strength": strength} for src, dst, kind, strength in rows]

    def expired(self, now: str, limit: int) -> list[Memory]:
        return [row_to_memory(r) for r in self._q(
            f"SELECT {_COLUMNS} FROM memories WHERE status = 'active' AND expires_at IS NOT NULL AND expires_at <= %s "
            "ORDER BY expires_at LIMIT %s", (now, limit))]

    def unused_since(self, cutoff: str, *, min_importance: float, limit: int) -> list[Memory]:
        return [row_to_memory(r) for r in self._q(
            f"SELECT {_COLUMNS} FROM memories WHERE status = 'active' AND NOT pinned AND importance < %s "
            "AND GREATEST(COALESCE(last_accessed_at, ''), COALESCE(stored_at, created_at)) < %s ORDER BY stored_at LIMIT %s",
            (min_importance, cutoff, limit))]

    def pk_of(self, memory_id: str) -> int | None:
        row = self._one("SELECT pk FROM memories WHERE id = %s", (memory_id,))
        return None if row is None else int(row[0])

    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        return {r[0] for r in self._q("SELECT id FROM memories WHERE id = ANY(%s)", (list(ids),))} if ids else set()

    def existing_hashes(self, pairs: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
        """Which ``(content_hash, scope)`` pairs already have a memory (any status but deleted)."""
        if not pairs:
            return set()
        rows = self._q("SELECT DISTINCT content_hash, scope FROM memories WHERE content_hash = ANY(%s) AND status != 'deleted'",
                       (list({h for h, _ in pairs}),))
        want = set(pairs)
        return {(h, s) for h, s in rows if (h, s) in want}

    def find_by_hash(self, content_hash: str, scope: str) -> Memory | None:
        row = self._one(f"SELECT {_COLUMNS} FROM memories WHERE content_hash = %s AND scope = %s AND status = 'active' ORDER BY pk LIMIT 1",
                        (content_hash, scope))
        return None if row is None else row_to_memory(row)

    def get_embeddings(self, model: str, hashes: Sequence[str]) -> dict[str, bytes]:
        if not hashes:
            return {}
        rows = self._q("SELECT text_hash, vector::real[] FROM embeddings WHERE model = %s AND text_hash = ANY(%s)", (model, list(hashes)))
        return {h: np.asarray(v, np.float32).tobytes() for h, v in rows}

    def iter_all(self, statuses: Sequence[str] | None = None) -> Iterator[Memory]:
        """Every memory in insert order, fetched in pages (a large store never sits in memory twice)."""
        after = 0
        while True:
            cond, args = ("AND status = ANY(%s)", [list(statuses)]) if statuses else ("", [])
            rows = self._q(f"SELECT pk, {_COLUMNS} FROM memories WHERE pk > %s {cond} ORDER BY pk LIMIT 1000", [after, *args])
            if not rows:
                return
            for r in rows:
                yield row_to_memory(r[1:])
            after = int(rows[-1][0])

    # ------------------------------------------------------------ full text (BM25 over postings)

    def _corpus(self) -> tuple[int, float]:
        """Rows and mean token count, cached briefly (they move slowly; own writes reset them)."""
        now = time.monotonic()
        if self._stats is None or now - self._stats[0] > STATS_TTL:
            self._df = {}
            n, avg = self._one("SELECT COUNT(*), COALESCE(AVG(ntok), 0) FROM memories")  # type: ignore[misc]
            self._stats = (now, int(n), float(avg))
        return self._stats[1], self._stats[2]

    def fts_row_count(self) -> int:
        return self._corpus()[0]

    def doc_freqs(self, terms: Sequence[str]) -> dict[str, int]:
        """How many rows contain each single-token term (one index lookup, cached with the corpus statistics)."""
        if not terms:
            return {}
        self._corpus()  # expires the cache together with the corpus statistics
        todo = [t for t in dict.fromkeys(terms) if t not in self._df]
        if todo:
            counts = dict(self._q("SELECT term, COUNT(*) FROM memory_terms WHERE term = ANY(%s) GROUP BY term", (todo,)))
            self._df.update({t: int(counts.get(t, 0)) for t in todo})
        return {t: self._df[t] for t in terms}

    def fts_search(self, match: str, filters: Filters, limit: int) -> list[tuple[int, float]]:
        """Up to ``limit`` ``(pk, bm25)`` pairs, best first: FTS5's BM25 (k1 1.2, b 0.75) over the
        postings; a phrase counts through its words (a memory with any of them matches)."""
        words = _fts_words(match or "")
        if not words:
            return []
        n, avgdl = self._corpus()
        df = self.doc_freqs(words)
        idf = [max(np.log((n - df[w] + 0.5) / (df[w] + 0.5)), 1e-6) if n else 1e-6 for w in words]
        where, args = _filter_sql(filters)
        rows = self._q(
            "WITH q(term, idf) AS (SELECT * FROM unnest(%s::text[], %s::float8[])) "
            "SELECT m.pk, SUM(q.idf * (t.tf * %s) / (t.tf + %s * (1 - %s + %s * m.ntok / %s))) AS s "
            f"FROM q JOIN memory_terms t ON t.term = q.term JOIN memories m ON m.pk = t.pk WHERE {where} "
            "GROUP BY m.pk ORDER BY s DESC, m.pk LIMIT %s",
            [words, idf, K1 + 1, K1, B, B, max(avgdl, 1.0), *args, limit])
        return [(int(pk), max(float(s), MIN_MATCH_BM25)) for pk, s in rows]

    def fts_rows_after(self, after_pk: int, limit: int) -> list[tuple[int, str]]:
        return [(int(r[0]), r[1]) for r in self._q("SELECT pk, content FROM memories WHERE pk > %s ORDER BY pk LIMIT %s", (after_pk, limit))]

    # ------------------------------------------------------------ vectors

    def vector_index(self, model: str) -> PgVectorIndex:
        """The vector channel for ``model``, answered by pgvector (see :class:`PgVectorIndex`)."""
        return PgVectorIndex(self, model, self.get_meta("generation"))

    def vector_search(self, model: str, query: np.ndarray, filters: Filters, k: int) -> list[tuple[int, float]]:
        """Top ``k`` ``(pk, cosine)`` by HNSW (iterative scan under the filters), rescored exactly."""
        if k <= 0 or not self._vectors_ready(model):
            return []
        where, args = _filter_sql(filters)
        q = _vec(query)
        rows = self._q(f"SELECT m.pk, m.vec <=> %s::real[]::vector AS d FROM memories m WHERE m.vec IS NOT NULL AND {where} "
                       "ORDER BY d LIMIT %s", [q, *args, k])
        if len(rows) < k:
            # Short: either fewer than k rows match, or the iterative HNSW scan gave up
            # (hnsw.max_scan_tuples) before finding k rows that pass a selective filter (15 tagged
            # rows among 40k came back 7 of 10). The matching rows are then few: score them exactly.
            rows = self._q(f"WITH c AS MATERIALIZED (SELECT m.pk, m.vec FROM memories m WHERE m.vec IS NOT NULL AND {where}) "
                           "SELECT pk, vec <=> %s::real[]::vector AS d FROM c ORDER BY d LIMIT %s", [*args, q, k])
        # relaxed_order may return neighbours slightly out of order: re-sort on the exact distance
        out = sorted(((int(pk), 1.0 - float(d)) for pk, d in rows), key=lambda r: (-r[1], r[0]))
        return out

    def max_seq(self) -> int:
        return int(self._one("SELECT COALESCE(MAX(seq), 0) FROM memories")[0])  # type: ignore[index]

    def vector_rows(self, model: str, after_seq: int) -> Iterator[tuple[Any, ...]]:
        """``(pk, seq, scope, type, status, created_epoch, expires_epoch|None, tags_json, vector|None, importance)``
        changed after ``after_seq`` (the in-memory index's rows; this store searches with pgvector)."""
        rows = self._q(
            "SELECT m.pk, m.seq, m.scope, m.type, m.status, extract(epoch FROM m.created_at::timestamptz), "
            "extract(epoch FROM m.expires_at::timestamptz), m.tags, e.vector::real[], m.importance "
            "FROM memories m LEFT JOIN embeddings e ON e.model = %s AND e.text_hash = m.embed_hash WHERE m.seq > %s ORDER BY m.seq",
            (model, after_seq))
        for pk, seq, scope, mtype, status, created, expires, tags, vec, importance in rows:
            yield (pk, seq, scope, mtype, status, float(created), None if expires is None else float(expires), tags,
                   None if vec is None else np.asarray(vec, np.float32).tobytes(), float(importance))

    def missing_embeddings(self, model: str, after_pk: int, limit: int) -> list[tuple[int, str, str, str]]:
        return [(int(r[0]), r[1], r[2], r[3]) for r in self._q(
            "SELECT m.pk, m.id, m.content, m.embed_hash FROM memories m WHERE m.pk > %s AND NOT EXISTS "
            "(SELECT 1 FROM embeddings e WHERE e.model = %s AND e.text_hash = m.embed_hash) ORDER BY m.pk LIMIT %s",
            (after_pk, model, limit))]

    def count_missing_embeddings(self, model: str) -> int:
        return int(self._one("SELECT COUNT(*) FROM memories m WHERE NOT EXISTS "
                             "(SELECT 1 FROM embeddings e WHERE e.model = %s AND e.text_hash = m.embed_hash)", (model,))[0])  # type: ignore[index]

    # ------------------------------------------------------------ counts, health

    def count_embeddings(self, model: str | None = None) -> int:
        if model is None:
            return int(self._one("SELECT COUNT(*) FROM embeddings")[0])  # type: ignore[index]
        return int(self._one("SELECT COUNT(*) FROM embeddings WHERE model = %s", (model,))[0])  # type: ignore[index]

    def size_bytes(self) -> int:
        row = self._one("SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r'")
        return int(row[0])  # type: ignore[index]

    def integrity_problems(self) -> list[str]:
        """What is wrong with the schema as PostgreSQL sees it (the server keeps pages sound)."""
        problems = []
        have = {r[0] for r in self._q("SELECT extname FROM pg_extension")}
        problems += [f"the {ext} extension is missing" for ext in EXTENSIONS if ext not in have]
        rec = self._model()
        if rec is not None and self._vec_dim() != rec[1]:
            problems.append(f"memories.vec is not {rec[1]}-d as the recorded model {rec[0]} is (run `mnemo reindex`)")
        return problems


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
