"""Redaction comes before any cut, covers the fields beside the text, and leaves no hash that
gives a masked value back (issue "Hardening").

A secret cut in two by a sentence split or a chunk boundary is no longer a secret the redactor
recognises; so every path redacts its whole input first. Each case names the path it went
through and scans everything the store holds afterwards.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
from pathlib import Path

import pytest
from fake_embedder import FakeEmbedder

from mnemo import Mnemo
from mnemo._base import text as _text


def _pem(seed: int, lines: int = 50) -> tuple[str, list[str]]:
    rng = random.Random(seed)
    body = [base64.b64encode(bytes(rng.getrandbits(8) for _ in range(48))).decode() for _ in range(lines)]
    return "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(body) + "\n-----END RSA PRIVATE KEY-----", body


def _everything(m: Mnemo) -> str:
    """Every memory (any status) with its metadata, every source row and every event, as text."""
    parts = [json.dumps(mem.to_dict(), ensure_ascii=False) for mem in m.store.iter_all()]
    parts += [json.dumps(src, ensure_ascii=False) for src in m.sources()]
    parts += [json.dumps(m.history(mem.id), ensure_ascii=False) for mem in m.store.iter_all()]
    return "\n".join(parts)


@pytest.fixture
def m(store_target: str) -> Mnemo:
    with Mnemo(store_target, embedder=FakeEmbedder()) as store:
        yield store


def test_a_pem_key_given_to_auto_is_masked_whole(m: Mnemo) -> None:
    key, body = _pem(1)
    m.auto(f"记住生产机 root 私钥：\n{key}\n以后部署都用它。")
    stored = _everything(m)
    assert [line for line in body if line[:24] in stored] == []


def test_a_quoted_password_survives_no_sentence_split(m: Mnemo) -> None:
    m.auto("Remember this: DB_PASSWORD: 'pg_s3cret_551'")
    m.auto([{"role": "user", "content": "Remember: the admin password is 'Tr0ub4dor&3x'. Always use it for staging."}])
    stored = _everything(m)
    assert "pg_s3cret_551" not in stored and "Tr0ub4dor" not in stored


def test_ingest_masks_a_key_that_spans_chunks_and_a_private_span_across_a_boundary(m: Mnemo, tmp_path: Path) -> None:
    key, body = _pem(2)
    filler = "\n\n".join(f"Paragraph {i}: the deploy checklist says to check the dashboards first." for i in range(30))
    note = tmp_path / "ops.md"
    note.write_text(f"# Ops\n\n{filler}\n\n```\n{key}\n```\n\n{filler}\n\nBefore <private>the vault code is 7731-"
                    + "x" * 3000 + "</private> after.\n", "utf-8")
    m.ingest([note], chunk_chars=800)
    stored = _everything(m)
    assert len(m.store.memories_by_source(f"file:{note}")) > 3  # it was cut into many chunks
    assert [line for line in body if line[:24] in stored] == [] and "7731" not in stored and "xxxxxxxxxx" not in stored


def test_an_aws_secret_in_another_chunk_than_its_key_id_is_masked(m: Mnemo, tmp_path: Path) -> None:
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"
    filler = "\n\n".join(f"Note {i}: rotate credentials every quarter and log the change." for i in range(20))
    note = tmp_path / "aws.md"
    note.write_text(f"# AWS\n\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\n\n{filler}\n\naws_secret_access_key = {secret}\n", "utf-8")
    m.ingest([note], chunk_chars=600)
    assert secret not in _everything(m)


def test_no_stored_hash_gives_a_masked_value_back(m: Mnemo, tmp_path: Path) -> None:
    """The attack: a six-digit value masked as [SECRET], and the store keeps a hash of the raw
    file or chunk; trying the million candidates finds it in seconds. Every hash in the store
    must be a hash of redacted text, so the true value matches none of them."""
    raw = "# 备忘 S119\n\n银行卡密码是 604217\n"
    note = tmp_path / "n.md"
    note.write_text(raw, "utf-8")
    m.ingest([note])
    stored = _everything(m)
    assert "604217" not in stored
    (mem,) = m.store.memories_by_source(f"file:{note}")
    prefix = mem.metadata.get("embed_prefix", "")
    raw_chunk = "银行卡密码是 604217"
    guesses = {hashlib.sha256(raw.encode()).hexdigest(), _text.text_hash(raw), _text.content_hash(raw),
               _text.text_hash(prefix + "\n" + raw_chunk), _text.content_hash(raw_chunk), _text.text_hash(raw_chunk)}
    found = {g for g in guesses if g in stored or g[:16] in stored}
    assert not found, found


def test_fields_beside_the_text_are_redacted(m: Mnemo, tmp_path: Path) -> None:
    phone, mail = "13629243011", "zhang.wei@example.com"
    m.remember("call the landlord about the boiler", tags=[f"tel {phone}", "home"], source=f"mail from {mail}")
    m.import_([{"content": "imported note", "metadata": {"from": mail, "nested": [{"phone": phone}]}}])
    resume = tmp_path / f"张伟-{phone}-简历.md"
    resume.write_text("# 简历\n\n五年后端经验。\n", "utf-8")
    m.ingest([resume])
    export = tmp_path / "chat.json"
    export.write_text(json.dumps([{"title": "moving", "mapping": {}}]), "utf-8")
    mem = m.remember("the wiki page", dedup=False)
    m.edit(mem.id, tags=[f"owner {mail}"])
    stored = _everything(m)
    assert phone not in stored and mail not in stored
    assert any("[PHONE]" in t or "[手机号]" in t for x in m.store.iter_all() for t in x.tags)
    # the renamed-file key still finds the file: a second ingest is "unchanged", not new
    assert m.ingest([resume])["unchanged"] == 1


def test_chat_export_sender_names_and_messages_are_redacted_before_windows(m: Mnemo, tmp_path: Path) -> None:
    key, body = _pem(3, lines=30)
    wechat = tmp_path / "wechat.txt"
    lines = []
    for i in range(6):
        lines += [f"张三 13800138000 2024-05-0{i + 1} 10:0{i}:00", f"第{i}条：明天开会。" if i != 3 else f"私钥给你：\n{key}", ""]
    wechat.write_text("\n".join(lines), "utf-8")
    m.ingest([wechat], chunk_chars=400)
    stored = _everything(m)
    assert "13800138000" not in stored and [line for line in body if line[:24] in stored] == []


def test_a_url_query_token_is_not_kept(m: Mnemo) -> None:
    from mnemo._core.ingest import IngestOps  # noqa: F401  (the URL path is exercised in test_web with a local server)

    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    assert token not in m._scrub(f"https://example.com/page?access_token={token}&x=1")


def test_a_file_name_is_redacted_apart_from_its_extension(m: Mnemo, tmp_path: Path) -> None:
    """Read whole, "alice@example.com.md" is an address at the domain "com.md" whose TLD is a
    file extension (left alone); "PIN 519302.md" is a number glued to ".md"."""
    folder = tmp_path / "联系人 alice@example.com"
    folder.mkdir()
    for name in ("alice@example.com.md", "张伟 13629243011.md", "bob@example.org.txt"):
        (folder / name).write_text("# 联系人\n\n周一上午联系。\n", "utf-8")
    m.ingest([folder])
    stored = _everything(m)
    assert "alice@example.com" not in stored and "13629243011" not in stored and "bob@example.org" not in stored
    assert m.ingest([folder])["unchanged"] == 3  # the redacted keys are stable
    assert len(m.sources()) == 3


@pytest.mark.parametrize("text,secret", [
    ("记住：aliyun configure --access-key-secret 0iF3wLhpnLj8IWMUBj6JipxU3Q5ti2，这个以后要用", "0iF3wLhpnLj8IWMUBj6JipxU3Q5ti2"),
    ("记住：login with user demo and password Winter_56454*，这个以后要用", "Winter_56454*"),
])
def test_a_value_followed_by_chinese_punctuation_is_still_masked(m: Mnemo, text: str, secret: str) -> None:
    m.auto(text)
    m.remember(text, dedup=False)
    assert secret not in _everything(m)
