"""Claude Code hook handlers: read a hook's JSON payload, answer in Claude Code's hook format.

Events (``mnemo hook EVENT``; Claude Code's name in brackets):

* ``session-start`` [SessionStart]: the project's key memories (constraints, preferences, recent
  decisions, project context; global ones too). After a compaction (``source == "compact"``)
  the memories injected before it are offered again, since the summary may have dropped them.
* ``user-prompt`` [UserPromptSubmit]: the memories relevant to the prompt, never one already
  injected into this session.
* ``pre-compact`` [PreCompact]: Claude Code takes no context from PreCompact, so the hook
  remembers what had been injected and clears the session's "already injected" set; the
  SessionStart that follows compaction (or, failing that, the next prompt) re-injects them.
* ``stop`` [Stop] and ``session-end`` [SessionEnd]: capture new memories from the transcript
  in the background (rules, or the LLM when configured).

The answer for SessionStart/UserPromptSubmit is ``{"hookSpecificOutput": {"hookEventName":
…, "additionalContext": …}}`` on stdout. Hooks never block the user: every failure of ours is
a message on stderr with exit code 1 (a non-blocking error for Claude Code), never 2.
"""

from __future__ import annotations

import os

from ..errors import MnemoError, PayloadError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on the hook's fast path
if TYPE_CHECKING:
    from typing import Any

    from .._core.mnemo import Mnemo

#: mnemo's event names → Claude Code's
EVENTS = {
    "session-start": "SessionStart",
    "user-prompt": "UserPromptSubmit",
    "pre-compact": "PreCompact",
    "stop": "Stop",
    "session-end": "SessionEnd",
}
#: events that put text into the model's context
INJECTING = ("session-start", "user-prompt")



def check_payload(event: str, payload: Any) -> dict[str, Any]:
    """The payload if it is usable for ``event``, else :class:`PayloadError` with the reason."""
    if event not in EVENTS:
        raise PayloadError(f"unknown hook event {event!r}; choose from {', '.join(EVENTS)}")
    if not isinstance(payload, dict):
        raise PayloadError("the hook payload must be a JSON object")
    sid = payload.get("session_id")
    if sid is not None and not isinstance(sid, str):
        raise PayloadError("session_id must be a string")
    cwd = payload.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise PayloadError("cwd must be a string")
    if event == "user-prompt" and not isinstance(payload.get("prompt"), str):
        raise PayloadError("a UserPromptSubmit payload needs a string 'prompt'")
    if event in ("stop", "session-end") and payload.get("transcript_path") is not None and not isinstance(payload["transcript_path"], str):
        raise PayloadError("transcript_path must be a string")
    return payload


def answer(event: str, text: str) -> str:
    """Claude Code's hook output carrying ``text`` into the model's context ('' when nothing)."""
    import json

    if not text or event not in INJECTING:
        return ""
    return json.dumps({"hookSpecificOutput": {"hookEventName": EVENTS[event], "additionalContext": text}}, ensure_ascii=False)


def run_hook(m: "Mnemo", event: str, payload: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    """Handle one hook event against an open store.

    ``settings`` holds ``context_top_k``, ``context_budget_tokens`` and ``scope``, the scope
    setting as configured (value, origin), resolved here for the payload's working folder by the
    rule every surface shares. Returns ``{"stdout", "stderr", "exit", "memory_ids"}``: what the
    hook process prints and its exit code."""
    from .._settings.scope import scope_from_setting  # here, not at the top: the hook client only checks payloads

    payload = check_payload(event, payload)
    session = payload.get("session_id") or None
    cwd = payload.get("cwd") or os.getcwd()
    scope = scope_from_setting(cwd, *(settings.get("scope") or ("global", "default"))).scope
    top_k = int(settings.get("context_top_k", 5))
    budget = int(settings.get("context_budget_tokens", 400))
    # the OpenCode plugin marks its payloads; the log says which assistant was told what
    surface = f"{'opencode' if payload.get('mnemo_client') == 'opencode' else 'claude-code'}:{event}"
    out: dict[str, Any] = {"stdout": "", "stderr": "", "exit": 0, "memory_ids": [], "scope": scope}
    if event == "session-start":
        m.prune_sessions()
        # after a compaction, what was injected before comes back (ranked with the key memories)
        extra = (m.after_compaction(session) or None) if session and payload.get("source") == "compact" else None
        res = m.context(None, scope=scope, session=session, top_k=top_k + 3, budget_tokens=int(budget * 1.5),
                        surface=surface, extra_ids=extra)
        out.update(stdout=answer(event, res["text"]), memory_ids=[x["id"] for x in res["memories"]])
    elif event == "user-prompt":
        prompt = payload["prompt"]
        texts, ids = [], []
        pending = m.after_compaction(session) if session else None
        if pending is not None:  # compaction happened and no SessionStart(compact) re-injected: do it now
            res = m.context(None, scope=scope, session=session, top_k=top_k, budget_tokens=budget, surface=surface,
                            extra_ids=pending or None)
            texts.append(res["text"])
            ids += [x["id"] for x in res["memories"]]
        if prompt.strip():
            if settings.get("retry") and session:  # the service took this prompt and its answer was lost
                m.retract_injection(session, prompt)
            res = m.context(prompt, scope=scope, session=session, top_k=top_k, budget_tokens=budget, surface=surface)
            texts.append(res["text"])
            ids += [x["id"] for x in res["memories"]]
        out.update(stdout=answer(event, "\n".join(t for t in texts if t)), memory_ids=ids)
    elif event == "pre-compact":
        if session:
            m.before_compaction(session)
    else:  # stop, session-end
        out.update(capture(m, payload, session=session, scope=scope))
    return out


def capture(m: "Mnemo", payload: dict[str, Any], *, session: str | None, scope: str) -> dict[str, Any]:
    """Start the background capture of the transcript (``Mnemo.auto_transcript``)."""
    path = payload.get("transcript_path")
    if not path:
        return {"stderr": "mnemo: no transcript_path in the payload; nothing to capture\n"}
    if not os.path.isfile(path):
        return {"stderr": f"mnemo: transcript {path} does not exist; nothing to capture\n"}
    try:
        report = m.auto_transcript(path, session=session, scope=scope, background=True)
    except MnemoError as exc:
        return {"stderr": f"mnemo: capture failed: {exc}\n", "exit": 1}
    return {"capture": report}
