"""Chat exports: WeChat text exports, ChatGPT's ``conversations.json``, generic JSON/JSONL.

Supported formats (docs/ingest.md has samples):

* **WeChat text export** as written by WeChatMsg / 留痕 (MemoTrace) "导出 TXT": each message is a
  header line ``YYYY-MM-DD HH:MM:SS <sender>`` followed by the message's lines and a blank
  line. Placeholders for media (``[图片]``, ``[语音]``, ``[表情包]``…) are dropped; a header with no
  text after it (a system notice such as a recall) is skipped.
* **ChatGPT** ``conversations.json`` (Settings → Data controls → Export): a list of
  conversations, each a ``mapping`` of nodes whose ``message`` has ``author.role``,
  ``content.parts`` and ``create_time`` (epoch seconds). The branch that was shown
  (``current_node`` back to the root) is taken; system and tool messages are left out.
* **Generic** JSON (a list, or an object with ``messages``) or JSON Lines of objects with a time
  (``time``/``timestamp``/``date``/``created_at``/``create_time``: ISO-8601 or epoch seconds),
  a speaker (``role``/``sender``/``author``/``speaker``/``from``/``name``) and the text
  (``text``/``content``/``message``/``body``).

Messages are grouped into windows for memory: consecutive messages of one conversation, at
most ``GAP`` apart, up to about ``chunk_chars`` characters. Each window becomes one dated note.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from .._base.models import load_json
from ..errors import IngestError
from .chunk import sentence_spans

#: messages further apart than this start a new window
GAP = timedelta(minutes=30)
_WECHAT_HEADER = re.compile(r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})\s+(\S.*?)\s*$")
_MEDIA = re.compile(r"^\[(图片|语音|表情包|视频|文件|音乐分享|链接|动画表情|位置|名片|Photo|Image|Voice|Sticker|Video|File)\]$")
_TIME_KEYS = ("time", "timestamp", "date", "created_at", "create_time", "datetime")
_WHO_KEYS = ("role", "sender", "author", "speaker", "from", "name", "user")
_TEXT_KEYS = ("text", "content", "message", "body", "msg")


@dataclass
class Message:
    """One chat message."""

    time: datetime
    sender: str
    text: str
    conversation: str = ""
    role: str | None = None  # user · assistant when the export says so


@dataclass
class Window:
    """Consecutive messages that become one memory."""

    messages: list[Message] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(f"{m.sender}: {m.text}" for m in self.messages)


# ---------------------------------------------------------------- detection and parsing

def looks_like_wechat(text: str) -> bool:
    """Whether a .txt file is a WeChat export: it opens with a message header, and headers
    make up a good share of its non-blank lines."""
    lines = [ln for ln in text[:20000].split("\n") if ln.strip()]
    if len(lines) < 2 or not _WECHAT_HEADER.match(lines[0]):
        return False
    headers = sum(1 for ln in lines if _WECHAT_HEADER.match(ln))
    return headers >= 2 and headers * 3 >= len(lines)


def parse_wechat(text: str) -> list[Message]:
    """Messages of a WeChat text export (see the module docstring for the format)."""
    from .._base.models import parse_time

    out: list[Message] = []
    current: tuple[datetime, str] | None = None
    body: list[str] = []

    def close() -> None:
        if current is None:
            return
        lines = [ln for ln in body if not _MEDIA.match(ln.strip())]
        msg = "\n".join(lines).strip()
        if msg:
            out.append(Message(current[0], current[1], msg))

    for line in text.split("\n"):
        m = _WECHAT_HEADER.match(line)
        if m:
            close()
            current = (parse_time(m.group(1).replace(" ", "T")), m.group(2))
            body = []
        elif current is not None:
            body.append(line)
    close()
    if not out:
        raise IngestError("no messages found in the WeChat export")
    return out


def parse_json_export(text: str) -> list[Message]:
    """Messages of a ChatGPT export or a generic JSON/JSONL chat log."""
    data: Any
    try:
        data = load_json(text)
    except json.JSONDecodeError:
        data = []
        for n, line in enumerate(text.split("\n"), 1):
            if not line.strip():
                continue
            try:
                data.append(load_json(line))
            except json.JSONDecodeError as exc:
                raise IngestError(f"not JSON or JSON Lines (line {n}: {exc.msg})") from None
    if isinstance(data, dict) and "mapping" in data:
        data = [data]
    if isinstance(data, list) and data and all(isinstance(c, dict) and "mapping" in c for c in data):
        return _chatgpt(data)
    if isinstance(data, dict):
        data = data.get("messages")
    if not isinstance(data, list):
        raise IngestError("not a chat export: expected a list of messages or ChatGPT's conversations.json")
    out = []
    for i, item in enumerate(data, 1):
        if not isinstance(item, dict):
            raise IngestError(f"message {i} is not an object")
        text_value = _first(item, _TEXT_KEYS)
        if isinstance(text_value, dict):  # {"content": {"parts": [...]}} and the like
            text_value = _parts_text(text_value)
        when = _first(item, _TIME_KEYS)
        if when is None or not isinstance(text_value, str):
            raise IngestError(f"message {i} needs a time and a text (keys: {', '.join(_TIME_KEYS[:3])}… / {', '.join(_TEXT_KEYS[:3])}…)")
        who = _first(item, _WHO_KEYS)
        if isinstance(who, dict):
            who = who.get("role") or who.get("name")
        sender = str(who or "unknown")
        if text_value.strip():
            role = sender.lower() if sender.lower() in ("user", "assistant") else None
            out.append(Message(_time(when, i), sender, text_value.strip(), str(item.get("conversation") or ""), role))
    if not out:
        raise IngestError("no messages found in the chat export")
    return out


def _first(item: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for k in keys:
        if item.get(k) is not None:
            return item[k]
    return None


def _time(value: Any, i: int) -> datetime:
    from .._base.models import parse_time

    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = value / 1000 if value > 1e11 else value  # milliseconds, as some exporters write
        return datetime.fromtimestamp(seconds, timezone.utc)
    try:
        return parse_time(str(value), field_name=f"message {i} time")
    except Exception as exc:
        raise IngestError(str(exc)) from None


def _parts_text(content: dict[str, Any]) -> str:
    parts = content.get("parts")
    if isinstance(parts, list):
        return "\n".join(p for p in parts if isinstance(p, str)).strip()
    text = content.get("text")
    return text if isinstance(text, str) else ""


def _chatgpt(conversations: list[dict[str, Any]]) -> list[Message]:
    out: list[Message] = []
    for ci, conv in enumerate(conversations, 1):
        mapping = conv.get("mapping") or {}
        if not isinstance(mapping, dict):
            raise IngestError(f"conversation {ci} has no mapping")
        title = str(conv.get("title") or f"conversation {ci}")
        # the branch that was shown: current_node back to the root; else every node by time
        chain: list[dict[str, Any]] = []
        node_id = conv.get("current_node")
        seen: set[str] = set()
        while node_id and node_id in mapping and node_id not in seen:
            seen.add(node_id)
            chain.append(mapping[node_id])
            node_id = mapping[node_id].get("parent")
        nodes = list(reversed(chain)) if chain else list(mapping.values())
        msgs = []
        for node in nodes:
            msg = (node or {}).get("message") or {}
            role = ((msg.get("author") or {}).get("role") or "")
            if role not in ("user", "assistant"):
                continue
            text = _parts_text(msg.get("content") or {})
            when = msg.get("create_time") or conv.get("create_time")
            if not text or when is None:
                continue
            msgs.append(Message(_time(when, ci), role, text, title, role))
        if not chain:
            msgs.sort(key=lambda m: m.time)
        out.extend(msgs)
    if not out:
        raise IngestError("no user or assistant messages found in the ChatGPT export")
    return out


# ---------------------------------------------------------------- windows

def windows(messages: list[Message], *, chunk_chars: int = 512, gap: timedelta = GAP) -> list[Window]:
    """Group messages into windows: same conversation, each within ``gap`` of the previous, at
    most about ``chunk_chars`` characters. A message longer than a window is split at sentences."""
    out: list[Window] = []
    cur = Window()
    size = 0
    last: Message | None = None
    for msg in messages:
        for part in _split_long(msg, chunk_chars):
            line = len(part.sender) + 2 + len(part.text)
            new_conv = last is not None and (part.conversation != last.conversation or part.time - last.time > gap)
            if cur.messages and (new_conv or size + line > chunk_chars):
                out.append(cur)
                cur, size = Window(), 0
            cur.messages.append(part)
            size += line + 1
            last = part
    if cur.messages:
        out.append(cur)
    return out


def _split_long(msg: Message, size: int) -> list[Message]:
    if len(msg.text) + len(msg.sender) + 2 <= size:
        return [msg]
    parts: list[Message] = []
    buf = ""
    for s, e in sentence_spans(msg.text, 0, len(msg.text)):
        piece = msg.text[s:e]
        if buf and len(buf) + len(piece) > size - len(msg.sender) - 2:
            parts.append(Message(msg.time, msg.sender, buf.strip(), msg.conversation, msg.role))
            buf = ""
        while len(piece) > size:  # one endless sentence
            parts.append(Message(msg.time, msg.sender, piece[:size].strip(), msg.conversation, msg.role))
            piece = piece[size:]
        buf += piece
    if buf.strip():
        parts.append(Message(msg.time, msg.sender, buf.strip(), msg.conversation, msg.role))
    return parts
