"""Capture: detect what is worth remembering in conversation (rules first, an LLM when asked).

``CaptureOps`` is a mixin of :class:`mnemo.Mnemo`: ``auto`` reads a message or a conversation,
``auto_transcript`` a transcript file incrementally (optionally in a detached worker).

Two extractors produce candidate memories:

* the **rule detector** (``mnemo._capture.detect``, the default): local, no network, well under a
  millisecond per message;
* the **LLM extractor** (opt-in, ``llm=True``): the configured OpenAI-compatible chat endpoint
  reads the redacted conversation and answers JSON, validated against a schema. Daily budgets
  of calls and tokens are counted in the store's ``usage`` table (``mnemo stats`` shows them).
  Any failure — over budget, unreachable, timeout, HTTP error, malformed or invalid answer —
  falls back to the rules and says why; nothing is written until every answer validated.

Candidates are saved through the lifecycle write path (``remember_many`` with dedup), so a
statement made again merges into the memory it repeats and raises its importance (the
frequency signal). ``<private>…</private>`` spans are removed before anything is detected,
stored, embedded or sent.
"""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
import uuid
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._base.models import MEMORY_TYPES, format_time, utcnow
from .._base.text import has_han
from .._base.tokens import estimate_tokens
from .._capture.transcript import Message, detect_format, parse, parse_claude_lines, parse_messages
from .._privacy.redact import _PRIVATE  # the redactor's own definition of a <private> span (unclosed: to the end)
from ..errors import InvalidInputError

if TYPE_CHECKING:
    from .mnemo import Mnemo

#: the usage-table kind LLM extraction is counted under
USAGE_KIND = "capture_llm"
#: at most this much conversation per LLM call; a longer one takes several calls
CHUNK_CHARS = 8000
#: an LLM memory longer than this is not one statement
MAX_MEMORY_CHARS = 1000
#: a conversation larger than this is refused (split it, or use a transcript file)
MAX_INPUT_CHARS = 2_000_000
#: a running extraction not heard from for this long is taken to have died
STALE_AFTER = timedelta(minutes=10)

#: the types as docs/capture.md defines them, in its order: the first that applies wins
TYPE_GUIDE = (
    "feedback: a reaction to something the assistant did, with the instruction it gives for the future; "
    "decision: a choice that was made (chose, switched to, standardized on); "
    "goal: an outcome wanted in the future; "
    "constraint: a hard rule or limit from the project, team, platform, law or environment; "
    "user_preference: how the user likes things done (style, format, language, tools), even as always/never; "
    "workflow: how something is done (steps, procedure, routine, schedule, who to ask before what); "
    "entity: who or what a named person, project, service, team or vendor is; "
    "project_context: the project as it is (purpose, users, stack, architecture, infrastructure, data); "
    "fact: any other durable fact, e.g. about the user (background, machine, time zone, accessibility)"
)

EXTRACT_SYSTEM = (
    "You read a conversation between a user and an AI assistant and pick out what is worth remembering in "
    "future sessions. Leave out chit-chat, acknowledgements, questions, hypotheticals, one-off requests, "
    "transient steps, verdicts on the current answer alone, pasted logs and code, and the assistant explaining "
    "general knowledge. Each memory is one short self-contained statement, written in the language of the "
    "conversation. Types, in order (when several fit, the first wins): " + TYPE_GUIDE + ". Answer with a "
    'JSON object {"memories": [{"content": "...", "type": T, "confidence": C, "tags": ["..."], "speaker": S}]} '
    f"where T is one of {', '.join(t for t in MEMORY_TYPES if t != 'note')}; C is 0..1; S is \"user\" or "
    '"assistant" (who said it). '
    'Answer {"memories": []} when nothing is worth remembering.'
)


class CaptureFallback(Exception):
    """The LLM extractor cannot be used for this conversation; the message says why."""


@dataclass
class LLMBudget:
    """Daily limits on LLM extraction (the CLI sets them from ``llm_max_*_per_day``)."""

    max_calls_per_day: int = 200
    max_tokens_per_day: int = 200_000


def strip_private(text: str) -> str:
    """``text`` without its ``<private>…</private>`` spans (an unclosed tag hides the rest)."""
    return _PRIVATE.sub("", text) if "<" in text else text


class CaptureOps:
    """Operations that turn conversation into memories (``auto``, ``auto_transcript``)."""

    llm_budget: LLMBudget = LLMBudget()

    # ------------------------------------------------------------ messages in, memories out

    def auto(
        self: "Mnemo",
        text_or_messages: str | list[Any],
        *,
        scope: str | None = None,
        dry_run: bool = False,
        llm: bool = False,
        session: str | None = None,
        source_role: str | None = None,
    ) -> dict[str, Any]:
        """Detect the memories in a message or conversation and save them.

        ``text_or_messages``: plain text (said by ``source_role``, default the user), a JSON
        string of ``{role, content}`` messages or of Claude Code transcript lines, or a list of
        ``{role, content}`` dicts. ``llm`` uses the configured chat endpoint instead of the rules
        (falling back to them, with the reason, when it cannot). ``dry_run`` saves nothing.
        Returns the extractor used, the fallback reason, the detected candidates and what was
        saved (``created`` / ``merged`` / ``related`` / ``superseded``)."""
        if isinstance(text_or_messages, str):
            if len(text_or_messages) > MAX_INPUT_CHARS:
                raise InvalidInputError(f"the conversation is {len(text_or_messages):,} characters; at most {MAX_INPUT_CHARS:,}")
            messages = parse(text_or_messages, "text" if source_role else "auto", role=source_role or "user")
        elif isinstance(text_or_messages, list):
            messages = parse_messages(text_or_messages)
        else:
            raise InvalidInputError("auto takes text or a list of {role, content} messages")
        return self._capture(messages, scope=scope, dry_run=dry_run, llm=llm, session=session)

    def queue_capture(self: "Mnemo", folder: str | os.PathLike[str], messages: list[dict[str, Any]], *, scope: str | None = None,
                      session: str | None = None, llm: bool = False) -> Path:
        """Hand an exchange (``{role, content}`` messages) over for capture later: written,
        redacted, as one JSON file (0600) in ``folder``, which :meth:`run_capture_queue` reads.
        A chat answer is shown before its capture runs; the file keeps the capture from being
        lost when the process ends first (the next run of any surface catches up)."""
        import json

        if not isinstance(messages, list) or not all(isinstance(m, dict) and isinstance(m.get("content"), str) for m in messages):
            raise InvalidInputError("queue_capture takes a list of {role, content} messages with text content")
        clean = [{"role": str(m.get("role") or "user"), "content": self._scrub(m["content"])} for m in messages if m["content"].strip()]
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        name = f"{utcnow().strftime('%Y%m%dT%H%M%S%f')}-{uuid.uuid4().hex[:8]}.json"
        tmp = folder / f".{name}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"messages": clean, "scope": scope or self.scope, "session": session, "llm": bool(llm)}, f, ensure_ascii=False)
        os.replace(tmp, folder / name)
        return folder / name

    def run_capture_queue(self: "Mnemo", folder: str | os.PathLike[str], *, only: Path | None = None) -> list[dict[str, Any]]:
        """Capture the exchanges queued in ``folder`` (oldest first; ``only``: just that one),
        each file removed once its memories are stored. A file that is not a queued exchange
        is set aside as ``*.bad`` (said in the result), never retried forever."""
        import json

        folder = Path(folder)
        files = [only] if only is not None else sorted(folder.glob("*.json")) if folder.is_dir() else []
        done: list[dict[str, Any]] = []
        for path in files:
            if not path.exists():
                continue  # another process took it
            try:
                job = json.loads(path.read_text("utf-8"))
                result = self.auto(job["messages"], scope=job.get("scope"), session=job.get("session"), llm=bool(job.get("llm")))
            except (ValueError, KeyError, TypeError, InvalidInputError) as exc:
                path.replace(path.with_suffix(".bad"))
                done.append({"file": path.name, "error": str(exc).splitlines()[0] if str(exc) else type(exc).__name__})
                continue
            path.unlink(missing_ok=True)
            done.append({"file": path.name, "saved": result["saved"], "counts": result["counts"], "extractor": result["extractor"]})
        return done

    def _capture(self: "Mnemo", messages: list[Message], *, scope: str | None, dry_run: bool, llm: bool,
                 session: str | None, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        result = self._extract(messages, llm=llm)
        result.update(dry_run=dry_run, **(extra or {}))
        if not dry_run:
            self._save(result, scope=scope, session=session)
        return result

    def _extract(self: "Mnemo", messages: list[Message], *, llm: bool) -> dict[str, Any]:
        """Candidates by the LLM (when asked and it can) or the rules; nothing is written."""
        # each message is redacted whole before the rules or the LLM cut it into statements
        messages = [Message(m.role, t) for m in messages if (t := self._scrub(strip_private(m.text)).strip())]
        extractor, fallback, candidates = "rules", None, None
        if llm:
            if self.chat is None:
                raise InvalidInputError("no LLM endpoint is configured: set llm_base_url and llm_model (or capture without --llm)")
            try:
                candidates = self._llm_candidates(messages)
                extractor = "llm"
            except CaptureFallback as exc:
                fallback = f"{exc}; the rules were used instead"
        if candidates is None:
            candidates = _rule_candidates(messages)
        return {"extractor": extractor, "fallback": fallback, "messages": len(messages), "detected": candidates,
                "saved": [], "counts": {"created": 0, "merged": 0, "related": 0, "superseded": 0}}

    def _save(self: "Mnemo", result: dict[str, Any], *, scope: str | None, session: str | None) -> None:
        """Write the candidates of ``result`` in one transaction (all or none) and record what happened."""
        records = [self._record(c, result["extractor"], scope, session) for c in result["detected"]]
        if not records:
            return
        for mem, action in self.remember_many(records, cause="auto", dedup=True):
            result["counts"][action] += 1
            result["saved"].append({"action": action, "id": mem.id, "type": mem.type, "content": mem.content,
                                    "confidence": round(mem.confidence, 3), "importance": round(mem.importance, 3),
                                    "speaker": mem.metadata.get("speaker", "user")})

    def _record(self: "Mnemo", c: dict[str, Any], extractor: str, scope: str | None, session: str | None) -> dict[str, Any]:
        metadata: dict[str, Any] = {"speaker": c["speaker"], "extractor": extractor}
        if c.get("rule"):
            metadata["rule"] = c["rule"]
        return dict(content=c["content"], type=c["type"], scope=scope, tags=c.get("tags") or None, importance=c["importance"],
                    confidence=c["confidence"], source="llm" if extractor == "llm" else "auto", source_session=session,
                    metadata=metadata)

    # ------------------------------------------------------------ the LLM extractor

    def _llm_candidates(self: "Mnemo", messages: list[Message]) -> list[dict[str, Any]]:
        """Candidates from the LLM, every chunk's answer validated before any is used; raises
        :class:`CaptureFallback` (over budget, endpoint failure, invalid answer)."""
        from .._llm.chat import ChatError

        assert self.chat is not None
        lines = [f"{m.role}: {self._clean_query(m.text)}" for m in messages]  # redacted before it leaves the machine
        lines = [ln for ln in lines if ln.split(": ", 1)[1].strip()]
        if not lines:
            return []
        chunks: list[list[str]] = [[]]
        for ln in lines:
            if chunks[-1] and sum(len(x) for x in chunks[-1]) + len(ln) > CHUNK_CHARS:
                chunks.append([])
            chunks[-1].append(ln[:CHUNK_CHARS])
        out: list[dict[str, Any]] = []
        for chunk in chunks:
            convo = "\n".join(chunk)
            hint = "The conversation is in Chinese: write the memories in Chinese." if has_han(convo) else \
                "Write the memories in the language of the conversation."
            prompt = f"{hint}\n\n{convo}"
            self._check_budget(estimate_tokens(EXTRACT_SYSTEM + prompt))
            try:
                answer = self.chat.json(EXTRACT_SYSTEM, prompt)
            except ChatError as exc:
                self._count_usage(EXTRACT_SYSTEM + prompt, None)
                raise CaptureFallback(f"LLM extraction failed: {exc}") from None
            self._count_usage(EXTRACT_SYSTEM + prompt, answer)
            out.extend(validate_llm_answer(answer, self.chat.base_url))
        return _dedupe(out)

    def _check_budget(self: "Mnemo", tokens: int) -> None:
        budget = self.llm_budget
        used = self.store.usage(format_time(utcnow())[:10]).get(USAGE_KIND, {"calls": 0, "tokens": 0})
        if used["calls"] + 1 > budget.max_calls_per_day:
            raise CaptureFallback(f"the daily LLM budget is spent ({used['calls']}/{budget.max_calls_per_day} calls today)")
        if used["tokens"] + tokens > budget.max_tokens_per_day:
            raise CaptureFallback(f"the daily LLM budget is spent ({used['tokens']:,} of {budget.max_tokens_per_day:,} tokens "
                                  f"used today; this call needs about {tokens:,})")

    def _count_usage(self: "Mnemo", prompt: str, answer: Any) -> None:
        """Count one call: the endpoint's reported tokens, else an estimate (a failed call costs too)."""
        usage = getattr(self.chat, "last_usage", None) or {}
        tokens = usage.get("total_tokens")
        if not isinstance(tokens, int) or tokens < 0:
            tokens = estimate_tokens(prompt) + (estimate_tokens(str(answer)) if answer is not None else 0)
        with self.store.transaction():
            self.store.add_usage(format_time(utcnow())[:10], USAGE_KIND, calls=1, tokens=tokens)

    # ------------------------------------------------------------ transcripts, incrementally

    def auto_transcript(
        self: "Mnemo",
        path: str | os.PathLike[str],
        *,
        session: str | None = None,
        scope: str | None = None,
        llm: bool = False,
        background: bool = False,
        fmt: str = "auto",
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Capture from a transcript file, only the part not processed before (a Claude Code
        JSONL transcript is read from where the last run stopped; another file again when its
        content changed). Only one extraction of a file runs at a time (the job table).

        ``background`` starts a detached worker process (``mnemo auto --file … --worker``) that
        survives the caller and returns at once with its pid; the worker reads the settings
        (encryption key, redaction, LLM budgets), and ``llm=False`` there leaves the choice to
        the ``capture_llm`` setting."""
        file = Path(path).expanduser().resolve()
        if not file.is_file():
            raise InvalidInputError(f"no transcript file at {file}")
        key = f"capture:{file}"
        if background:
            return self._spawn_worker(file, key, session=session, scope=scope, llm=llm, fmt=fmt)
        owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        now = utcnow()
        if not dry_run:
            with self.store.transaction():
                claimed = self.store.claim_job(key, owner, at=format_time(now), stale_before=format_time(now - STALE_AFTER))
            if not claimed:
                return {"job": key, "skipped": "another extraction of this transcript is running", "saved": [], "detected": []}
        job = self.store.get_job(key)
        progress = dict(job["progress"]) if job else {}
        progress.pop("error", None)
        try:
            messages, new_progress = _read_new(file, fmt, progress)
            session = session or new_progress.pop("session_id", None) or file.stem
            result = self._extract(messages, llm=llm)
            result.update(dry_run=dry_run, job=key, file=str(file), from_line=progress.get("lines", 0) + 1,
                          to_line=new_progress.get("lines"), session=session, skipped_lines=new_progress.get("bad_lines", []))
            if not dry_run:
                # the memories and the progress are one transaction: a crash re-reads, never skips or doubles
                with self.store.transaction():
                    self._save(result, scope=scope, session=session)
                    self.store.update_job(key, state="done", at=format_time(utcnow()), progress=new_progress)
            return result
        except BaseException as exc:
            if not dry_run:
                with self.store.transaction():
                    self.store.update_job(key, state="failed", at=format_time(utcnow()), progress={**progress, "error": str(exc)[:500]})
            raise

    def _spawn_worker(self: "Mnemo", file: Path, key: str, *, session: str | None, scope: str | None, llm: bool, fmt: str) -> dict[str, Any]:
        """Start ``mnemo auto --file … --worker`` detached (its own session, no terminal), so it
        outlives a hook that must return at once. Its output goes nowhere: it reports through
        the job row (in the store, so an encrypted store leaks nothing into a log file)."""
        job = self.store.get_job(key)
        if job and job["state"] == "running" and job["updated_at"] >= format_time(utcnow() - STALE_AFTER):
            return {"job": key, "background": True, "started": False, "reason": "an extraction of this transcript is already running"}
        # the store as a child opens it: a PostgreSQL password goes by environment, never argv
        db, extra = self.store.child_connection()
        cmd = [sys.executable, "-m", "mnemo", "auto", "--file", str(file), "--format", fmt, "--worker", "--json", "--db", db]
        if self._embedder is None:
            cmd += ["--model", self._model_name]
        cmd += ["--session", session] if session else []
        cmd += ["--scope", scope or self.scope]  # this store's default scope, not the worker's configured one
        cmd += ["--llm"] if llm else []
        kwargs: dict[str, Any] = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "close_fds": True}
        if os.name == "nt":  # pragma: no cover - Windows
            kwargs["creationflags"] = subprocess.DETACHED_PROCESS | subprocess.CREATE_NEW_PROCESS_GROUP  # type: ignore[attr-defined]
        else:
            kwargs["start_new_session"] = True
        proc = subprocess.Popen(cmd, env={**os.environ, **extra} if extra else None, **kwargs)
        return {"job": key, "background": True, "started": True, "pid": proc.pid}

    def capture_job(self: "Mnemo", path: str | os.PathLike[str]) -> dict[str, Any] | None:
        """The state of the extraction job of a transcript file (running / done / failed, progress)."""
        return self.store.get_job(f"capture:{Path(path).expanduser().resolve()}")


# ---------------------------------------------------------------- helpers

def _rule_candidates(messages: list[Message]) -> list[dict[str, Any]]:
    from .._capture import detect as _detect  # its rules and model load when capture runs, not with every command (~10 ms)

    out = []
    for m in messages:
        for d in _detect.detect(m.text, role=m.role):
            out.append({"content": d.content, "type": d.type, "confidence": d.confidence, "importance": d.importance,
                        "tags": [], "speaker": m.role, "explicit": d.explicit, "rule": d.rule})
    return _dedupe(out)


def _dedupe(cands: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One candidate per text: the user's word over the assistant's, then the more confident."""
    best: dict[str, dict[str, Any]] = {}
    for c in cands:
        k = c["content"].strip().lower()
        old = best.get(k)
        if old is None or (c["speaker"] == "user", c["confidence"]) > (old["speaker"] == "user", old["confidence"]):
            best[k] = c
    return list(best.values())


def validate_llm_answer(answer: Any, where: str = "the LLM") -> list[dict[str, Any]]:
    """The memories of an LLM answer, checked against the schema
    ``{"memories": [{"content", "type", "confidence", "tags"?, "speaker"?}]}``; any violation
    raises :class:`CaptureFallback` (so nothing of a bad answer is used)."""
    from .._capture import detect as _detect

    items = answer.get("memories") if isinstance(answer, dict) else None
    if not isinstance(items, list):
        raise CaptureFallback(f"{where} answered without a \"memories\" list")
    out = []
    for i, item in enumerate(items, 1):
        def bad(why: str) -> CaptureFallback:
            return CaptureFallback(f"{where} answered an invalid memory {i}: {why}")

        if not isinstance(item, dict):
            raise bad("not an object")
        content = item.get("content")
        if not isinstance(content, str) or not content.strip():
            raise bad("no content")
        if len(content) > MAX_MEMORY_CHARS:
            raise bad(f"content longer than {MAX_MEMORY_CHARS} characters")
        mtype = item.get("type")
        if mtype not in MEMORY_TYPES:
            raise bad(f"type {mtype!r} is not one of {', '.join(MEMORY_TYPES)}")
        conf = item.get("confidence")
        if isinstance(conf, bool) or not isinstance(conf, (int, float)) or not 0.0 <= float(conf) <= 1.0:
            raise bad(f"confidence {conf!r} is not a number between 0 and 1")
        tags = item.get("tags", [])
        if tags is None:
            tags = []
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags) or len(tags) > 16:
            raise bad("tags is not a list of at most 16 strings")
        speaker = item.get("speaker", "user")
        if speaker not in ("user", "assistant"):
            raise bad(f"speaker {speaker!r} is not user or assistant")
        conf = float(conf) * (_detect.ASSISTANT_FACTOR if speaker == "assistant" else 1.0)
        out.append({"content": strip_private(content).strip(), "type": mtype, "confidence": round(conf, 3),
                    "importance": _detect.DEFAULT_IMPORTANCE, "tags": [t.strip()[:64] for t in tags if t.strip()],
                    "speaker": speaker, "explicit": False, "rule": None})
    return [c for c in out if c["content"]]


def _read_new(file: Path, fmt: str, progress: dict[str, Any]) -> tuple[list[Message], dict[str, Any]]:
    """The messages of ``file`` not processed yet, and the progress to record once they are."""
    size = file.stat().st_size
    with file.open("rb") as fh:
        head = fh.read(4096).decode("utf-8", "replace")
        kind = detect_format(head) if fmt == "auto" else fmt
        if kind == "claude-jsonl":
            offset = int(progress.get("offset", 0))
            lines_done = int(progress.get("lines", 0))
            if offset > size:  # the file was replaced by a shorter one: start again
                offset, lines_done = 0, 0
            fh.seek(offset)
            data = fh.read()
            complete = data[: data.rfind(b"\n") + 1]  # a line still being written waits for the next run
            try:
                lines = complete.decode("utf-8").split("\n")[:-1] if complete else []
            except UnicodeDecodeError:
                raise InvalidInputError(f"{file} is not UTF-8 text") from None
            bad: list[int] = []
            messages = parse_claude_lines(lines, first_line=lines_done + 1, bad=bad)
            new: dict[str, Any] = {"format": kind, "offset": offset + len(complete), "lines": lines_done + len(lines)}
            if bad:
                new["bad_lines"] = bad[:20]
            sid = _session_id(lines)
            if sid:
                new["session_id"] = sid
            return messages, new
        fh.seek(0)
        raw = fh.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInputError(f"{file} is not UTF-8 text") from None
    # Text and message lists are read again whole; what was processed before is skipped when the
    # file still starts with it (appended to), so a re-run does not count old statements twice.
    def digest(data: bytes) -> str:
        return hashlib.sha256(data).hexdigest()

    if kind == "messages":
        messages = parse(text, kind)
        done = int(progress.get("messages", 0))
        seen = "\n".join(f"{m.role}:{m.text}" for m in messages[:done]).encode()
        start = done if done <= len(messages) and progress.get("prefix_sha256") == digest(seen) else 0
        everything = "\n".join(f"{m.role}:{m.text}" for m in messages).encode()
        return messages[start:], {"format": kind, "messages": len(messages), "prefix_sha256": digest(everything),
                                  "lines": text.count("\n") + 1}
    done = int(progress.get("offset", 0))
    start = done if done <= len(raw) and progress.get("prefix_sha256") == digest(raw[:done]) else 0
    rest = raw[start:].decode("utf-8", "replace")
    return parse(rest, kind), {"format": kind, "offset": len(raw), "prefix_sha256": digest(raw), "lines": text.count("\n") + 1}


def _session_id(lines: list[str]) -> str | None:
    import json

    for line in lines[:20]:
        try:
            sid = json.loads(line).get("sessionId")
        except (ValueError, AttributeError):
            continue
        if isinstance(sid, str) and sid:
            return sid
    return None
