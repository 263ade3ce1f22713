"""The rule detector's second stage: a small linear model that reads each detection in context and
drops it (a trigger word in a sentence that states nothing durable) or gives it a better type,
and reads the sentences no rule fired in and keeps the few that state a memory plainly.

Hand-written rules fire on words; on text they were not tuned on, about one detection in eight is
a false alarm, one in four has the wrong type, a quarter of the memories fire no trigger at all,
and more rules had stopped helping. This stage learns what the rules get wrong from the labelled
sets, the mistakes of each earlier pass of the rules on text it had not seen included
(``bench/capture_passes.py``), and is trained by ``bench/train_capture.py`` into
``data/capture_model.npz``; ``bench/README.md`` has the measurements.

It is three logistic regressions over the same hashed features: character unigrams and bigrams,
words and word pairs of the span, a few characters on either side of it, and what the rules said
(type, rule, confidence, explicit, role, language, how many memories the message gave). One says
whether a detection is worth keeping, one which of the nine types it has, one whether a sentence
without a trigger is a memory. Each is a sum of a few hundred weights: tens of microseconds per
detection, no download, no network. When its data file is missing or damaged the rules decide
alone, and ``mnemo doctor`` says so.
"""

from __future__ import annotations

import re
import threading
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._base.text import DATA

if TYPE_CHECKING:
    from .detect import Detection

#: number of hashed feature slots (a power of two)
DIM = 1 << 16
#: the file the trained weights ship in
MODEL_FILE = DATA / "capture_model.npz"
#: the types the type model chooses between, in the order of its output columns
TYPES = ("user_preference", "project_context", "decision", "constraint", "goal", "feedback", "workflow", "entity", "fact")

_WORD = re.compile(r"[a-z][a-z0-9_'+#.-]*[a-z0-9+#]|[a-z]")
_DIGITS = re.compile(r"\d+")
_SPACE = re.compile(r"\s+")
#: characters read on either side of a span; after normalising, the nearest six are features
CONTEXT = 12


def _norm(text: str) -> str:
    return _SPACE.sub(" ", _DIGITS.sub("0", text.lower()))


def _grams(prefix: str, text: str, sizes: tuple[int, ...]) -> list[str]:
    """``prefix``-tagged character n-grams of ``text`` (with ``^``/``$`` at its ends) and its
    words with their bigrams."""
    padded = f"^{text}$"
    out = [f"{prefix}{n}{padded[i:i + n]}" for n in sizes for i in range(len(padded) - n + 1)]
    words = _WORD.findall(text)
    out += [f"{prefix}w{w}" for w in words]
    out += [f"{prefix}b{a} {b}" for a, b in zip(words, words[1:])]
    return out


def _bucket(value: float, edges: tuple[float, ...]) -> int:
    return sum(value >= e for e in edges)


def features(text: str, start: int, end: int, mtype: str, confidence: float, rule: str, explicit: bool, role: str,
             lang: str, count: int, index: int) -> list[int]:
    """The hashed feature slots of the detection ``text[start:end]``: what it says, what is just
    around it, and what the rules made of it (``index`` of ``count`` detections in the message)."""
    names = feature_names(text, start, end, mtype, confidence, rule, explicit, role, lang, count, index)
    return [zlib.crc32(n.encode("utf-8")) & (DIM - 1) for n in names]


def feature_names(text: str, start: int, end: int, mtype: str, confidence: float, rule: str, explicit: bool, role: str,
                  lang: str, count: int, index: int) -> list[str]:
    """The features of :func:`features` by name (to see why the model decided what it did)."""
    content = _norm(text[start:end])
    before = _norm(text[max(0, start - CONTEXT):start])
    after = _norm(text[end:end + CONTEXT])
    rest = text[end:].strip()
    names = _grams("c", content, (1, 2)) + _grams("p", before[-6:], (1, 2)) + _grams("s", after[:6], (1, 2))
    head = content[:4]
    names += [
        "bias", f"t{mtype}", f"r{rule}", f"x{explicit}", f"o{role}", f"l{lang}", f"t{mtype}o{role}",
        f"k{_bucket(confidence, (0.5, 0.6, 0.7, 0.8, 0.9))}",
        f"n{min(count, 4)}", f"i{min(index, 3)}", f"e{index == count - 1}",
        f"L{_bucket(end - start, (8, 16, 32, 64, 128))}", f"M{_bucket(len(text), (40, 100, 200, 400))}",
        f"q{text.rstrip().endswith(('?', '？'))}", f"Q{rest[:1] in ('?', '？')}",
        f"whole{start < 3 and len(rest) < 3}", f"h{mtype}{head}",
    ]
    return names


class Model:
    """The trained weights: ``keep`` (DIM,) for "this detection is worth keeping" (below
    ``threshold`` it is dropped), ``types`` (DIM, len(TYPES)) for the type (it replaces the rules'
    when it beats it by ``type_margin``), and ``add`` (DIM,) for "this sentence without a trigger
    is a memory" (kept from ``add_threshold`` up). A detection whose rule confidence is
    ``protect`` or more (a strong trigger: never, must, 决定…) is never dropped, only retyped."""

    def __init__(self, keep: np.ndarray, types: np.ndarray, threshold: float, type_margin: float,
                 add: np.ndarray | None = None, add_threshold: float = 1.0, protect: float = 2.0) -> None:
        self.keep = keep.astype(np.float32)
        self.types = types.astype(np.float32)
        self.threshold = threshold
        self.type_margin = type_margin
        self.add = np.zeros(DIM, dtype=np.float32) if add is None else add.astype(np.float32)
        self.add_threshold = add_threshold
        self.protect = protect

    @classmethod
    def load(cls, path: Path | None = None) -> Model:
        """The model saved at ``path`` (default ``MODEL_FILE``) by :meth:`save` (int8 weights with
        one scale per array). Raises ValueError when the arrays do not have the expected shapes."""
        with open(path or MODEL_FILE, "rb") as fh, np.load(fh) as z:  # our handle: closed even when np.load fails
            keep, types, add = (z[name] * z[name + "_scale"] for name in ("keep", "types", "add"))
            thresholds = [float(z[name]) for name in ("threshold", "type_margin", "add_threshold", "protect")]
        if keep.shape != (DIM,) or add.shape != (DIM,) or types.shape != (DIM, len(TYPES)):
            raise ValueError(f"weights of shape {keep.shape}, {add.shape} and {types.shape}, "
                             f"expected ({DIM},) and ({DIM}, {len(TYPES)})")
        return cls(keep, types, thresholds[0], thresholds[1], add, thresholds[2], thresholds[3])

    def save(self, path: Path) -> None:
        """Write the weights, quantized to int8 with one scale per array (a quarter of float32)."""
        arrays: dict[str, Any] = {"threshold": self.threshold, "type_margin": self.type_margin,
                                  "add_threshold": self.add_threshold, "protect": self.protect}
        for name, w in (("keep", self.keep), ("types", self.types), ("add", self.add)):
            scale = float(np.abs(w).max()) / 127 or 1.0
            arrays[name] = np.round(w / scale).astype(np.int8)
            arrays[name + "_scale"] = np.float32(scale)
        np.savez_compressed(path, **arrays)

    def keep_probability(self, slots: list[int]) -> float:
        """How likely the detection with these feature slots is worth keeping."""
        return _sigmoid(float(self.keep[slots].sum()))

    def type_scores(self, slots: list[int]) -> np.ndarray:
        """The type model's log-odds for each of ``TYPES``."""
        return self.types[slots].sum(axis=0)

    def apply(self, text: str, role: str, found: list[Detection],
              reacts: Callable[[int, int], bool] = lambda s, e: True) -> list[Detection]:
        """``found`` without the detections judged not worth keeping, each with the type the
        model gives it when that type beats the rules' by ``type_margin``. An explicit instruction
        (记住… / from now on…) is never dropped, and becomes ``feedback`` only when
        ``reacts(start, end)``: when it reacts to the assistant's work (``docs/capture.md``)."""
        out = []
        for index, d in enumerate(found):
            slots = features(text, d.start, d.end, d.type, d.confidence, d.rule, d.explicit, role, d.lang, len(found), index)
            if not d.explicit and d.confidence < self.protect and self.keep_probability(slots) < self.threshold:
                continue  # a strong trigger (never, must, 决定) is not the model's to drop, only to retype
            scores = self.type_scores(slots)
            # "记住…" / "from now on…" is feedback only when it answers something the assistant did:
            # without this the model, having seen many "…, from now on do Y" reactions, makes most
            # explicit instructions feedback
            best = self._best_type(scores, not d.explicit or d.type == "feedback" or reacts(d.start, d.end))
            current = TYPES.index(d.type) if d.type in TYPES else None
            if TYPES[best] != d.type and (current is None or scores[best] - scores[current] > self.type_margin):
                d = replace(d, type=TYPES[best], rule=f"{d.rule}>model")
            out.append(d)
        return out

    def judge_sentences(self, text: str, role: str, count: int, spans: list[tuple[int, int]]) -> list[tuple[int, int, str, float]]:
        """``(start, end, type, probability)`` of the sentences ``spans`` (none of which a rule
        fired in; ``count`` detections elsewhere in the message) the model judges memories."""
        out = []
        for s, e in spans:
            slots = features(text, s, e, "", 0.0, "sentence", False, role, "", count, -1)
            p = _sigmoid(float(self.add[slots].sum()))
            if p >= self.add_threshold:
                out.append((s, e, TYPES[int(self.type_scores(slots).argmax())], p))
        return out

    @staticmethod
    def _best_type(scores: np.ndarray, feedback_ok: bool) -> int:
        """The best-scoring type; not ``feedback`` for a span that reacts to nothing."""
        if feedback_ok:
            return int(scores.argmax())
        return int(np.where(np.arange(len(TYPES)) == _FEEDBACK, -np.inf, scores).argmax())


_FEEDBACK = TYPES.index("feedback")


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + float(np.exp(-z)))


_MODEL: list[Model | None] = []
_PROBLEM: list[str] = []
_LOCK = threading.Lock()


def model() -> Model | None:
    """The shipped model, loaded once; None when its data file is missing or unreadable (the rules
    then decide alone, and ``problem()`` says why: ``mnemo doctor`` shows it)."""
    if not _MODEL:
        with _LOCK:
            if not _MODEL:
                try:
                    loaded: Model | None = Model.load()
                except FileNotFoundError:
                    loaded = None
                    _PROBLEM.append(f"{MODEL_FILE} is missing")
                except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:  # a damaged install
                    loaded = None
                    _PROBLEM.append(f"{MODEL_FILE} is unreadable ({exc})")
                _MODEL.append(loaded)
    return _MODEL[0]


def problem() -> str | None:
    """Why the second stage is off, or None when it loaded."""
    model()
    return _PROBLEM[0] if _PROBLEM else None


def reset() -> None:
    """Forget the loaded model (tests swap the data file)."""
    with _LOCK:
        _MODEL.clear()
        _PROBLEM.clear()
