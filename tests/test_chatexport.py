"""Chat exports: WeChat text, ChatGPT conversations.json, generic JSON/JSONL; windows; ingest."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from mnemo import Mnemo
from mnemo._ingest.chatexport import Message, looks_like_wechat, parse_json_export, parse_wechat, windows
from mnemo.errors import IngestError

CHATS = Path(__file__).parent / "fixtures" / "notes" / "chats"


def test_wechat_export_is_parsed_and_media_placeholders_dropped() -> None:
    text = (CHATS / "wechat-张三.txt").read_text("utf-8")
    assert looks_like_wechat(text)
    msgs = parse_wechat(text)
    assert [m.sender for m in msgs] == ["张三", "我", "张三", "我", "张三", "我"]  # the [图片] message is gone
    assert msgs[2].text == "那就周六早上八点在北宫门集合。\n记得带水和午饭。"  # multi-line message kept whole
    assert msgs[0].time.astimezone().strftime("%Y-%m-%d %H:%M:%S") == "2024-05-01 10:23:45"
    assert not looks_like_wechat("Weekly sync.\n\n2024-05-01 10:00:00 we met\nand talked\nfor long\nabout it\n")


def test_chatgpt_export_follows_the_shown_branch() -> None:
    msgs = parse_json_export((CHATS / "conversations.json").read_text("utf-8"))
    texts = [m.text for m in msgs]
    assert not any("ABANDONED" in t for t in texts) and not any("You are ChatGPT" in t for t in texts)
    assert [m.role for m in msgs[:4]] == ["user", "assistant", "user", "assistant"]
    assert msgs[0].conversation == "Rust 学习计划" and msgs[-1].conversation == "Postgres vacuum"
    assert msgs[0].time == datetime.fromtimestamp(1714550410.0, timezone.utc)


def test_generic_json_and_jsonl() -> None:
    msgs = parse_json_export((CHATS / "team-chat.jsonl").read_text("utf-8"))
    assert [m.sender for m in msgs] == ["Alice", "Bob", "Alice", "Bob"]
    assert msgs[0].time == datetime(2024, 6, 10, 1, 0, tzinfo=timezone.utc)
    obj = {"messages": [{"timestamp": 1718000000000, "role": "user", "content": "hello"}]}
    (msg,) = parse_json_export(json.dumps(obj))
    assert msg.role == "user" and msg.time.year == 2024  # epoch milliseconds
    with pytest.raises(IngestError, match="needs a time and a text"):
        parse_json_export('[{"text": "no time"}]')
    with pytest.raises(IngestError, match="line 2"):
        parse_json_export('{"time": 1, "text": "a"}\n{broken')
    with pytest.raises(IngestError, match="not a chat export"):
        parse_json_export('{"hello": "world"}')


def test_windows_group_by_time_gap_and_size() -> None:
    t0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
    msgs = [Message(t0 + timedelta(minutes=i), "a", f"message {i}") for i in range(5)]
    msgs += [Message(t0 + timedelta(hours=5, minutes=i), "b", f"later {i}") for i in range(3)]
    wins = windows(msgs, chunk_chars=512)
    assert [len(w.messages) for w in wins] == [5, 3]
    small = windows(msgs, chunk_chars=40)
    assert all(len(w.text) <= 40 for w in small) and sum(len(w.messages) for w in small) == 8
    long = [Message(t0, "a", "这是一句很长的话。" * 100)]
    parts = windows(long, chunk_chars=100)
    assert len(parts) > 5 and all(len(w.text) <= 100 for w in parts)


def test_ingest_chat_exports_as_dated_notes(m: Mnemo) -> None:
    report = m.ingest([CHATS])
    assert report["ingested"] == 3
    key = f"chat:{CHATS / 'wechat-张三.txt'}"
    wins = m.store.memories_by_source(key)
    assert [w.created_at[:10] for w in wins] == ["2024-05-01", "2024-05-03"]  # split by the 2-day gap
    assert wins[1].metadata["speakers"] == ["张三", "我"] and wins[1].metadata["time_end"] > wins[1].metadata["time_start"]
    assert wins[0].content.startswith("张三: 周末一起去爬香山吗？")
    assert m.store.get_source(key)["kind"] == "chat"
    gpt = m.store.memories_by_source(f"chat:{CHATS / 'conversations.json'}")
    assert {g.metadata["headings"][0] for g in gpt} == {"Rust 学习计划", "Postgres vacuum"}
    hits = m.recall("autovacuum cost limit", touch=False)
    assert hits and "Raise the cost limit" in hits[0].memory.content
    assert {g.source_session for g in gpt} == {"Rust 学习计划", "Postgres vacuum"}  # each window its conversation's
    assert all(w.source_session is None for w in wins)  # a WeChat file is one conversation


def test_context_stays_inside_one_conversation_of_an_export(m: Mnemo, tmp_path: Path) -> None:
    """Windows are numbered across an export; the window before a hit that belongs to another
    conversation is not lifted as its context, the one after it in the same conversation is."""
    t0 = 1714550400
    def conv(title: str, start: int, texts: list[str]) -> dict[str, Any]:
        mapping, parent = {}, None
        for i, text in enumerate(texts):
            node = f"{title}-{i}"
            mapping[node] = {"id": node, "parent": parent, "children": [], "message": {
                "author": {"role": "user" if i % 2 == 0 else "assistant"}, "create_time": start + i * 10 * 3600,
                "content": {"content_type": "text", "parts": [text]}}}
            if parent:
                mapping[parent]["children"].append(node)
            parent = node
        return {"title": title, "create_time": start, "mapping": mapping, "current_node": parent}

    export = tmp_path / "conversations.json"
    export.write_text(json.dumps([
        conv("Garden", t0, ["The tomatoes need staking this week.", "Use bamboo canes, they last longer."]),
        conv("Car", t0 + 86400 * 30, ["The mechanic quoted 400 euros for the brakes.", "That sounds fair for both axles."]),
    ]), encoding="utf-8")
    m.ingest([export], capture=False)  # the windows alone (capture would add memories of its own)
    hits = m.recall("mechanic brakes quote", top_k=10, explain=True, touch=False)
    assert hits[0].memory.source_session == "Car"
    windows_ = sorted(m.store.memories_by_source(f"chat:{export}"), key=lambda w: w.metadata["chunk"])
    assert [(w.metadata["chunk"], w.source_session) for w in windows_] == [(0, "Garden"), (1, "Garden"), (2, "Car"), (3, "Car")]
    assert hits[0].memory.id == windows_[2].id
    # of the places 0, 1 and 3 around it, only the reply in the same conversation comes along
    assert {h.memory.id for h in hits if h.explain.get("context_of") == windows_[2].id} == {windows_[3].id}


def test_capture_rules_run_over_chat_messages_when_available(m: Mnemo, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []

    def auto(messages: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
        calls.append({"messages": messages, **kw})
        return {"saved": [1]}

    monkeypatch.setattr(m, "auto", auto, raising=False)
    report = m.ingest([CHATS / "wechat-张三.txt"])
    assert len(calls) == 1 and calls[0]["session"] == f"chat:{CHATS / 'wechat-张三.txt'}"
    # only the owner's own messages speak for the user: 张三's allergy is not the user's
    assert [msg["content"] for msg in calls[0]["messages"]][:2] == ["好啊，我周六上午有空。", "收到，我会提前十分钟到。"]
    assert all(msg["role"] == "user" and "花生" not in msg["content"] for msg in calls[0]["messages"])
    assert report["captured"] == 1
    m.ingest([CHATS / "conversations.json"])
    assert [msg["role"] for msg in calls[1]["messages"]][:2] == ["user", "assistant"]
    m.ingest([CHATS / "team-chat.jsonl"], capture=False)
    assert len(calls) == 2


def test_real_capture_rules_run_over_a_chatgpt_export(m: Mnemo, tmp_path: Path) -> None:
    export = tmp_path / "conversations.json"
    conv = {"title": "prefs", "current_node": "b", "mapping": {
        "a": {"parent": None, "message": {"author": {"role": "user"}, "create_time": 1714550400,
                                          "content": {"parts": ["Please remember: I always use pnpm, never npm."]}}},
        "b": {"parent": "a", "message": {"author": {"role": "assistant"}, "create_time": 1714550460,
                                         "content": {"parts": ["Noted, pnpm it is."]}}}}}
    export.write_text(json.dumps([conv]), "utf-8")
    report = m.ingest([export])
    assert report["ingested"] == 1
    captured = [mem for mem in m.list() if mem.source in ("auto", "llm")]
    assert report.get("captured", 0) == len(captured)
    assert any("pnpm" in mem.content for mem in captured), [mem.content for mem in m.list()]
