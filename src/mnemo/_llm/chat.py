"""The Chat port: an OpenAI-compatible ``/chat/completions`` endpoint (Ollama, DeepSeek, vLLM,
OpenAI…), optional and off by default. Used where rules are not enough: judging an unclear
pair of memories, and writing consolidation summaries.

Only text that was already redacted (stored memories, redacted new content) is ever sent. Every
failure — unreachable, HTTP error, timeout, an answer that is not the JSON asked for — raises
:class:`ChatError`; callers fall back to their rules and say so.
"""

from __future__ import annotations

import json
import os
from typing import Any

from ..errors import ChatError


class ChatClient:
    """A minimal JSON-answering client for an OpenAI-compatible chat endpoint."""

    def __init__(self, base_url: str, model: str, *, api_key_env: str = "MNEMO_LLM_API_KEY", timeout: float = 20.0):
        if not base_url.startswith(("http://", "https://")):
            raise ChatError(f"chat endpoint {base_url!r} must start with http:// or https://")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self._key = os.environ.get(api_key_env, "")
        self._timeout = timeout
        #: the ``usage`` object of the last answer (prompt/completion/total tokens), when the endpoint sent one
        self.last_usage: dict[str, Any] | None = None

    def json(self, system: str, user: str) -> dict[str, Any]:
        """Ask for a JSON object; returns it parsed, or raises :class:`ChatError`."""
        import urllib.error
        import urllib.request

        body = json.dumps({
            "model": self.model, "temperature": 0, "response_format": {"type": "json_object"},
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        }).encode()
        headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {self._key}"} if self._key else {})}
        req = urllib.request.Request(self.base_url + "/chat/completions", data=body, headers=headers)
        self.last_usage = None
        try:
            with urllib.request.urlopen(req, timeout=self._timeout) as resp:
                payload = json.loads(resp.read())
            self.last_usage = payload.get("usage") if isinstance(payload.get("usage"), dict) else None
            content = payload["choices"][0]["message"]["content"]
        except urllib.error.HTTPError as exc:
            raise ChatError(f"chat endpoint {self.base_url} answered HTTP {exc.code}") from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise ChatError(f"chat endpoint {self.base_url} is unreachable: {exc}") from None
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise ChatError(f"chat endpoint {self.base_url} sent an unexpected answer ({exc})") from None
        text = str(content).strip()
        if text.startswith("```"):  # some models fence their JSON despite response_format
            text = text.strip("`").removeprefix("json").strip()
        try:
            data = json.loads(text)
        except ValueError:
            raise ChatError(f"chat endpoint {self.base_url} answered with text that is not JSON") from None
        if not isinstance(data, dict):
            raise ChatError(f"chat endpoint {self.base_url} answered JSON that is not an object")
        return data


JUDGE_SYSTEM = (
    "You compare two short memories kept by an AI assistant. Answer with a JSON object "
    '{"relation": R, "reason": "..."} where R is one of: "duplicate" (the same statement, '
    'nothing new), "conflicting" (B replaces or contradicts A: a changed value, choice or '
    'preference), "related" (same subject, B adds a different fact worth keeping), "different".'
)
SUMMARY_SYSTEM = (
    "You merge several short memories about one topic into one self-contained statement that "
    "keeps every fact and decision, in the language the memories are written in. Answer with a "
    'JSON object {"summary": "..."}.'
)
RELATIONS = ("duplicate", "conflicting", "related", "different")


def judge(client: ChatClient, old: str, new: str) -> str:
    """The relation of ``new`` to ``old`` per the LLM (one of :data:`RELATIONS`)."""
    answer = client.json(JUDGE_SYSTEM, f"A: {old}\nB: {new}")
    relation = str(answer.get("relation", "")).strip().lower()
    if relation not in RELATIONS:
        raise ChatError(f"chat endpoint {client.base_url} answered relation {relation!r}, not one of {', '.join(RELATIONS)}")
    return relation


def summarize(client: ChatClient, texts: list[str]) -> str:
    """One statement that keeps what ``texts`` say, per the LLM."""
    answer = client.json(SUMMARY_SYSTEM, "\n".join(f"- {t}" for t in texts))
    summary = answer.get("summary")
    if not isinstance(summary, str) or not summary.strip():
        raise ChatError(f"chat endpoint {client.base_url} answered without a summary")
    return summary.strip()
