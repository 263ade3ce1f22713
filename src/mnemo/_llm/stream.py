"""Talking to an OpenAI-compatible chat endpoint with memory: the pieces ``mnemo ask``, ``mnemo
chat`` and ``mnemo proxy`` share.

* :func:`with_memory` puts the memory block into a conversation as a system message of its own,
  after the client's own system prompt (which stays first and unchanged);
* :func:`last_user_text` is what recall reads: the latest user turn (text parts of a
  multi-part message joined);
* :func:`stream_chat` streams an answer's text as it arrives (``stream: true``, Server-Sent
  Events), standard library only;
* :func:`reply_text` reads the assistant's text back out of an answer, streamed or not, for
  capture.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from ..errors import ChatError

#: how a memory block is introduced to the model (the block itself says it is reference material)
MEMORY_ROLE = "system"


def content_text(content: Any) -> str:
    """A message's text: a string, or the text parts of a list of parts (images and audio left out)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") in ("text", "input_text"))
    return ""


def last_user_text(messages: Any) -> str | None:
    """The text of the latest user message, or None when there is none (or it has no text)."""
    if not isinstance(messages, list):
        return None
    for msg in reversed(messages):
        if isinstance(msg, dict) and msg.get("role") == "user":
            text = content_text(msg.get("content")).strip()
            return text or None
    return None


def with_memory(messages: list[dict[str, Any]], block: str) -> list[dict[str, Any]]:
    """``messages`` with the memory ``block`` as a system message after the leading system (or
    developer) messages; unchanged when the block is empty."""
    if not block.strip():
        return messages
    at = 0
    while at < len(messages) and isinstance(messages[at], dict) and messages[at].get("role") in ("system", "developer"):
        at += 1
    return [*messages[:at], {"role": MEMORY_ROLE, "content": block}, *messages[at:]]


def sse_events(data: bytes) -> Iterator[dict[str, Any]]:
    """The JSON payloads of the ``data:`` lines of a Server-Sent Events body (``[DONE]`` and
    anything that is not JSON skipped)."""
    for line in data.decode("utf-8", "replace").splitlines():
        if line.startswith("data:"):
            payload = line[5:].strip()
            if payload and payload != "[DONE]":
                try:
                    event = json.loads(payload)
                except ValueError:
                    continue
                if isinstance(event, dict):
                    yield event


def reply_text(body: bytes, *, streamed: bool) -> str:
    """The assistant's text in an answer body: the deltas of a stream joined, or the message of
    a JSON answer (first choice); empty when there is none (a tool call, an error)."""
    if streamed:
        parts = []
        for event in sse_events(body):
            for choice in event.get("choices") or []:
                if isinstance(choice, dict) and choice.get("index", 0) == 0:
                    delta = choice.get("delta") or {}
                    if isinstance(delta, dict) and isinstance(delta.get("content"), str):
                        parts.append(delta["content"])
        return "".join(parts)
    try:
        answer = json.loads(body)
        return content_text(answer["choices"][0]["message"].get("content"))
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return ""


def stream_chat(base_url: str, model: str, messages: list[dict[str, Any]], *, api_key_env: str = "MNEMO_LLM_API_KEY",
                timeout: float = 60.0) -> Iterator[str]:
    """Ask the endpoint for a streamed answer and yield its text as it arrives.

    Raises :class:`ChatError` with the endpoint's own message when it answers an error, and
    when it cannot be reached. Closing the generator (Ctrl-C) closes the connection."""
    import http.client

    if not base_url.startswith(("http://", "https://")):
        raise ChatError(f"chat endpoint {base_url!r} must start with http:// or https:// (setting llm_base_url)")
    parts = urlsplit(base_url.rstrip("/") + "/chat/completions")
    conn_type = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    key = os.environ.get(api_key_env, "")
    body = json.dumps({"model": model, "messages": messages, "stream": True}).encode()
    headers = {"Content-Type": "application/json", "Accept": "text/event-stream", **({"Authorization": f"Bearer {key}"} if key else {})}
    conn = conn_type(parts.hostname or "", parts.port, timeout=timeout)
    try:
        try:
            conn.request("POST", parts.path + (f"?{parts.query}" if parts.query else ""), body=body, headers=headers)
            resp = conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            raise ChatError(f"chat endpoint {base_url} is unreachable: {exc}") from None
        if resp.status != 200:
            raise ChatError(f"chat endpoint {base_url} answered HTTP {resp.status}: {error_message(resp.read())}")
        while True:
            try:
                line = resp.readline()
            except (OSError, http.client.HTTPException) as exc:
                raise ChatError(f"chat endpoint {base_url} broke off its answer: {exc}") from None
            if not line:
                return
            for event in sse_events(line):
                for choice in event.get("choices") or []:
                    delta = choice.get("delta") if isinstance(choice, dict) else None
                    if isinstance(delta, dict) and isinstance(delta.get("content"), str) and delta["content"]:
                        yield delta["content"]
    finally:
        conn.close()


def error_message(body: bytes) -> str:
    """The one-line message of an endpoint's error body (OpenAI's ``{"error": {"message"}}``, or its text)."""
    try:
        data = json.loads(body)
        err = data.get("error") if isinstance(data, dict) else None
        message = err.get("message") if isinstance(err, dict) else (err if isinstance(err, str) else None)
        if message:
            return str(message).splitlines()[0][:300]
    except ValueError:
        pass
    text = body.decode("utf-8", "replace").strip().splitlines()
    return (text[0][:300] if text else "no message")
