"""End-to-end red team: secrets pushed through every way text enters mnemo, then every file scanned.

    python bench/redteam_paths.py                    # every v2 secret through every path
    python bench/redteam_paths.py --sample 40        # 40 secrets per path (what the tests run)
    python bench/redteam_paths.py --paths save,mcp --json

The rows are the second red-team set (``tests/data/redteam_v2_*.jsonl``, 363 secrets and 392
look-alikes, Chinese and English; ``bench/redteam.py`` scores the redactor alone on it). Here
each secret goes through the surfaces a user has, as a user would use them, into one store
(MNEMO_HOME in a scratch folder, the fake embedder: redaction does not depend on the model):

* ``save`` (argument), ``save-stdin`` (``save -``), ``fields`` (``--tags``, ``--source``),
  ``edit`` (``edit --content/--tags`` of an innocent memory);
* ``import`` (content, tags, source and nested metadata of JSON Lines records);
* ``ingest-note`` (one Markdown note of every secret, cut into small chunks, so secrets sit
  across chunk boundaries), ``ingest-folder`` (a file per secret, named after it),
  ``ingest-chat`` (a ChatGPT export, the secret in titles and messages; a WeChat export whose
  sender names are the secrets), ``ingest-web`` (pages from a local web server, the secret in
  the title, the body and the URL's query);
* ``auto`` (``auto TEXT``), ``auto-stdin`` (a conversation on stdin, both roles), ``transcript``
  (``auto --file`` of a Claude Code JSONL transcript);
* ``context`` (a query recorded in the injection log), ``hooks`` (``hook user-prompt`` through
  the warm service, and ``hook stop`` with its detached capture worker);
* ``mcp`` (the real MCP client over stdio: remember with tags, auto, edit, context);
* ``llm`` (``auto --llm`` with a local OpenAI-compatible endpoint: what the endpoint receives).

Then ``encrypt`` and ``decrypt`` run, so the conversion files and migration backups exist and
are cleaned. Scans, after the paths with the service up and again at the end: the bytes of every
file under the mnemo home (store, -wal, -shm, backups, key and service files, logs), every
value of every table (so text that SQLite splits over overflow pages is still seen), and every
request body the LLM endpoint received.

A leak: the secret, its NFKC, JSON-escaped or URL-quoted form in any of those; for a number
(as ``bench/redteam.py`` defines it), its digits once separators are dropped, in text from which
the store's own timestamps, ids and hashes were removed first (a six-digit code must not "leak"
from a microsecond field). Each path also carries a canary (a harmless marker beside each
secret) that must be found in the store: a path that stored nothing would pass vacuously.

Look-alikes go through ``save`` and ``import`` into a second store: the stored text must be
the text given (≤ 1 % altered). Exit status 1 on any leak, any path without canaries, or over 1 %
of look-alikes altered.
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
import unicodedata
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from conversion_kills import MODEL, run_in_process  # noqa: E402  (the fake embedder; the in-process CLI)
from redteam import _SEPARATORS, HELDOUT, TUNE, load  # noqa: E402

MAX_FP_RATE = 0.01
SEED_NOTES = ("The on-call engineer checks the dashboards before every deploy.", "密码和密钥都放在公司的保险库里，不写进笔记。")
SESSION = "rt-session-1"


# ---------------------------------------------------------------------------------- the rows


def rows(sample: int | None = None, seed: int = 1) -> tuple[list[dict], list[dict]]:
    """(secrets, look-alikes) of the v2 set, each row with an ``i``; ``sample`` draws that many of each."""
    allrows = load(TUNE) + load(HELDOUT)
    secrets = [r for r in allrows if r.get("secret")]
    looks = [r for r in allrows if not r.get("secret")]
    if sample is not None:
        rng = random.Random(seed)
        secrets = rng.sample(secrets, min(sample, len(secrets)))
        looks = rng.sample(looks, min(sample, len(looks)))
    return [dict(r, i=i) for i, r in enumerate(secrets)], [dict(r, i=i) for i, r in enumerate(looks)]


def canary(path: str, i: int) -> str:
    """A harmless marker that travels beside secret ``i`` on ``path`` (no digits: see ``_numbers``)."""
    return f"rtc{path.replace('-', '')}{_letters(i)}"


def _letters(i: int) -> str:
    out = ""
    while True:
        out = "abcdefghijklmnopqrstuvwxyz"[i % 26] + out
        i //= 26
        if not i:
            return out


# ---------------------------------------------------------------------------------- a home


class Home:
    """A mnemo home in a scratch folder, driven through the CLI in this process."""

    def __init__(self, root: Path, *, service: bool = False):
        self.root = root
        self.home = root / "home"
        self.inputs = root / "inputs"
        self.home.mkdir(parents=True)
        self.inputs.mkdir()
        self.db = self.home / "memory.db"
        self.env = {
            "MNEMO_HOME": str(self.home), "MNEMO_MODEL": MODEL, "HOME": str(root), "PATH": os.environ.get("PATH", ""),
            "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), str(ROOT / "src")]),
            "MNEMO_SERVE_IDLE_SECONDS": "60" if service else "0", "MNEMO_KEY": "rt-key-" + "k" * 40,
        }
        self.service: subprocess.Popen[bytes] | None = None

    def cli(self, *args: str, stdin: str | None = None, env: dict[str, str] | None = None, ok: bool = True) -> Any:
        """``mnemo ARGS --json`` in this process; its JSON answer (or the CompletedProcess when not JSON)."""
        res = run_in_process({**self.env, **(env or {})}, list(args), cwd=self.inputs, stdin=stdin)
        if ok and res.returncode != 0:
            raise RuntimeError(f"mnemo {' '.join(a[:40] for a in args)} exited {res.returncode}: {res.stderr.strip()[:300]}")
        try:
            return json.loads(res.stdout)
        except ValueError:
            return res

    def write(self, name: str, data: str | bytes) -> Path:
        path = self.inputs / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data, "utf-8")
        return path

    def start_service(self) -> None:
        self.service = subprocess.Popen([sys.executable, "-m", "mnemo", "serve"], env=self.env, cwd=self.inputs,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(300):
            status = self.cli("serve", "--status", "--json", ok=False)
            if isinstance(status, dict) and status.get("running"):
                return
            time.sleep(0.1)
        raise RuntimeError("mnemo serve did not start in 30 s")

    def stop_service(self) -> None:
        if self.service is not None:
            run_in_process(self.env, ["serve", "--stop"])
            try:
                self.service.wait(20)
            except subprocess.TimeoutExpired:
                self.service.kill()
            self.service = None


# ---------------------------------------------------------------------------------- the paths


def p_save(h: Home, rs: list[dict]) -> None:
    for r in rs:
        h.cli("save", "--json", "--", f"{r['text']} ({canary('save', r['i'])})")


def p_save_stdin(h: Home, rs: list[dict]) -> None:
    for r in rs:
        h.cli("save", "-", "--json", stdin=f"{r['text']}\n{canary('save-stdin', r['i'])}\n")


def p_fields(h: Home, rs: list[dict]) -> None:
    for r in rs:
        c = canary("fields", r["i"])
        h.cli("save", f"a note about the office plants {c}", f"--tags={_tag(r, c)}", f"--source={r['text']}", "--no-dedup", "--json")


# secrets whose own shape says what they are; the others (a password, a UUID-shaped webhook key,
# a 6-digit code, a bare 16-digit number) are secrets only by what is written around them
_SELF_EVIDENT = frozenset({"aws_access_key", "github_token", "openai_key", "anthropic_key", "google_api_key", "slack_token",
                           "docker_pat", "jwt", "deepseek_key", "zhipu_key", "email", "email_idn",
                           "phone_cn", "cn_id"})


def _bare(r: dict) -> str | None:
    """What a short field (a tag, a sender, a URL parameter) can carry of row ``r``: its text when
    short, else the secret alone when its shape gives it away, else None."""
    if len(r["text"]) <= 64 and "," not in r["text"] and "\n" not in r["text"]:
        return r["text"]
    if r["kind"] in _SELF_EVIDENT and len(r["secret"]) <= 64:
        return r["secret"]
    return None


def _tag(r: dict, c: str) -> str:
    """Tags: the canary, and what a tag can carry of the row (64 characters, no comma)."""
    bare = _bare(r)
    return f"{c},{bare}" if bare else c


def p_edit(h: Home, rs: list[dict]) -> None:
    for r in rs:
        c = canary("edit", r["i"])
        mid = h.cli("save", f"placeholder to be edited {c}", "--no-dedup", "--json")["memory"]["id"]
        h.cli("edit", mid, f"--content={r['text']} {c}", f"--tags={_tag(r, c)}", "--json")


def p_import(h: Home, rs: list[dict]) -> None:
    lines = [json.dumps({"content": f"{r['text']} {canary('import', r['i'])}", "tags": _tag(r, "t").split(","), "source": r["text"],
                         "metadata": {"note": r["text"], "deep": [{"v": r["text"]}]}}, ensure_ascii=False) for r in rs]
    h.cli("import", str(h.write("records.jsonl", "\n".join(lines) + "\n")), "--json")


def p_ingest_note(h: Home, rs: list[dict]) -> None:
    paras = [f"## Item {_letters(r['i'])}\n\nThe team wrote this down during the week {canary('ingest-note', r['i'])}: {r['text']}"
             for r in rs]
    note = h.write("notes/ops.md", "# Operations notebook\n\n" + "\n\n".join(paras) + "\n")
    h.cli("ingest", str(note), "--chunk-chars", "200", "--json")


def p_ingest_folder(h: Home, rs: list[dict]) -> None:
    folder = h.inputs / "folder"
    for r in rs:
        # the file is named after its text (as a CV named 张伟-136…-简历.md is), where a name can hold it
        # (a name cannot hold a slash, so a text with one, a URL, is not a name)
        stem = r["text"].strip()
        if re.search(r"[/\\\x00\n\r]", stem) or len(stem.encode()) > 200:
            stem = canary("ingest-folder", r["i"])
        h.write(f"folder/{r['i']:03d} {stem}.md", f"# {r['text']}\n\n{canary('ingest-folder', r['i'])} 一条普通的笔记。\n")
    h.cli("ingest", str(folder), "--json")


_PII_KINDS = frozenset({"phone_cn", "landline_cn", "email", "email_idn", "email_obfuscated", "cn_id"})


def p_ingest_chat(h: Home, rs: list[dict]) -> None:
    convs = []
    for r in rs:
        c = canary("ingest-chat", r["i"])
        mapping = {"a": {"message": {"author": {"role": "user"}, "create_time": 1714550400 + r["i"],
                                     "content": {"content_type": "text", "parts": [f"记住：{r['text']} {c}"]}}, "parent": None, "children": ["b"]},
                   "b": {"message": {"author": {"role": "assistant"}, "create_time": 1714550401 + r["i"],
                                     "content": {"content_type": "text", "parts": [f"好的，记下了 {c}。"]}}, "parent": "a", "children": []}}
        convs.append({"title": r["text"][:60], "create_time": 1714550400 + r["i"], "mapping": mapping})
    h.write("exports/conversations.json", json.dumps(convs, ensure_ascii=False))
    # WeChat: the sender line carries the secret (a phone or an e-mail in a contact name)
    lines = []
    for r in rs:
        # a contact's name with a phone, an e-mail or an ID number in it; other secrets are not names
        sender = re.sub(r"\s+", " ", r["text"]) if r["kind"] in _PII_KINDS else "张三"
        lines += [f"{sender} 2024-05-01 10:{r['i'] % 60:02d}:00", f"明天下午开会 {canary('ingest-chat', r['i'])}", ""]
    h.write("exports/wechat.txt", "\n".join(lines))
    h.cli("ingest", str(h.inputs / "exports"), "--json")


class _Site:
    """A local web server: /page/N answers an HTML page built from row N."""

    def __init__(self, pages: dict[str, str]):
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                body = pages.get(urllib.parse.urlsplit(self.path).path, "").encode()
                self.send_response(200 if body else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _query(r: dict) -> str:
    """A URL query carrying the secret under the parameter name that would hold it."""
    if r["kind"] in _PII_KINDS or r["kind"] == "otp_code":
        return ""  # in the page's text only
    name = "password" if "password" in r["kind"] else "access_token"
    return f"?{name}={urllib.parse.quote(r['secret'])}"


def p_ingest_web(h: Home, rs: list[dict]) -> None:
    import html

    pages = {}
    for r in rs:
        c = canary("ingest-web", r["i"])
        t = html.escape(r["text"])
        pages[f"/page/{r['i']}"] = (f"<html><head><title>{t}</title></head><body><article>"
                                    f"<h1>Runbook {c}</h1><p>The on-call engineer noted: {t}</p>"
                                    f"<p>Check the dashboards before and after every change, and write down what you did {c}.</p>"
                                    "</article></body></html>")
    site = _Site(pages)
    try:
        urls = [f"{site.url}/page/{r['i']}{_query(r)}" for r in rs]
        for start in range(0, len(urls), 20):
            h.cli("ingest", *urls[start:start + 20], "--json")
    finally:
        site.close()


def p_auto(h: Home, rs: list[dict]) -> None:
    for r in rs:
        h.cli("auto", "--json", "--", f"记住：{r['text']}，这个以后要用 {canary('auto', r['i'])}")


def p_auto_stdin(h: Home, rs: list[dict]) -> None:
    for r in rs:
        c = canary("auto-stdin", r["i"])
        conv = [{"role": "user", "content": f"Remember this for later: {r['text']} {c}"},
                {"role": "assistant", "content": f"Noted, I will remember that {r['text']} {c}."}]
        h.cli("auto", "--stdin", "--format", "messages", "--json", stdin=json.dumps(conv, ensure_ascii=False))


def _transcript(rs: list[dict], path: str) -> str:
    lines = []
    for r in rs:
        c = canary(path, r["i"])
        lines.append({"type": "user", "sessionId": SESSION, "message": {"role": "user", "content": f"记住：{r['text']} {c}"}})
        lines.append({"type": "assistant", "sessionId": SESSION,
                      "message": {"role": "assistant", "content": [{"type": "text", "text": f"好的，我记住了：{r['text']} {c}"}]}})
    return "\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n"


def p_transcript(h: Home, rs: list[dict]) -> None:
    h.cli("auto", "--file", str(h.write("transcript.jsonl", _transcript(rs, "transcript"))), "--json")


def p_context(h: Home, rs: list[dict]) -> None:
    for r in rs:
        h.cli("context", "--session", f"{SESSION}-{r['i']}", "--json", "--", f"{SEED_NOTES[0]} {r['text']} {canary('context', r['i'])}")


def p_hooks(h: Home, rs: list[dict]) -> None:
    for r in rs:
        # the seed note's words in the prompt get something injected, so that the prompt is logged
        payload = {"session_id": f"{SESSION}-{r['i']}", "transcript_path": "", "cwd": str(h.inputs), "hook_event_name": "UserPromptSubmit",
                   "prompt": f"{SEED_NOTES[0]} {r['text']} {canary('hooks', r['i'])}"}
        h.cli("hook", "user-prompt", stdin=json.dumps(payload, ensure_ascii=False))
    transcript = h.write("hook-transcript.jsonl", _transcript(rs, "hooks"))
    payload = {"session_id": SESSION, "transcript_path": str(transcript), "cwd": str(h.inputs), "hook_event_name": "Stop"}
    h.cli("hook", "stop", stdin=json.dumps(payload))
    for _ in range(600):  # the stop hook's detached worker
        status = h.cli("auto", "--file", str(transcript), "--status", "--json", ok=False)
        if isinstance(status, dict) and (status.get("job") or status).get("state") in ("done", "failed"):
            return
        time.sleep(0.1)
    raise RuntimeError("the Stop hook's capture worker did not finish in 60 s")


def p_mcp(h: Home, rs: list[dict]) -> None:
    from mcp_client import run_session

    async def script(client: Any) -> None:
        for r in rs:
            c = canary("mcp", r["i"])
            res = await client.call_tool("remember", {"content": f"{r['text']} {c}", "tags": _tag(r, c).split(","), "dedup": False})
            if res.is_error:
                raise RuntimeError(f"mcp remember: {res.content}")
            mid = json.loads(res.content[0].text)["memory"]["id"]
            await client.call_tool("edit", {"memory_id": mid, "content": f"{c} (edited) {r['text']}", "tags": _tag(r, c).split(",")})
            await client.call_tool("auto", {"text": f"记住：{r['text']} {c}"})
            await client.call_tool("context", {"query": f"{r['text']} {c}", "session": "mcp-" + SESSION})

    run_session(script, errlog=h.root / "mcp-stderr.log", env=h.env, cwd=h.inputs)


def p_llm(h: Home, rs: list[dict], endpoint: Any) -> None:
    env = {"MNEMO_LLM_BASE_URL": endpoint.url, "MNEMO_LLM_MODEL": "rt-model"}
    for start in range(0, len(rs), 10):
        batch = rs[start:start + 10]
        endpoint.reply = {"memories": [{"content": f"The user keeps a note {canary('llm', r['i'])}", "type": "fact", "confidence": 0.9}
                                       for r in batch]}
        text = "\n".join(f"记住：{r['text']} {canary('llm', r['i'])}" for r in batch)
        h.cli("auto", "--llm", "--json", "--", text, env=env)


PATHS: dict[str, Callable[..., None]] = {
    "save": p_save, "save-stdin": p_save_stdin, "fields": p_fields, "edit": p_edit, "import": p_import,
    "ingest-note": p_ingest_note, "ingest-folder": p_ingest_folder, "ingest-chat": p_ingest_chat, "ingest-web": p_ingest_web,
    "auto": p_auto, "auto-stdin": p_auto_stdin, "transcript": p_transcript, "context": p_context, "hooks": p_hooks,
    "mcp": p_mcp, "llm": p_llm,
}


# ---------------------------------------------------------------------------------- the scans

# what the store writes of its own that looks like numbers: timestamps, ids, hashes, unix times
_OWN_NUMBERS = re.compile(
    r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d|Z)?|mem_[0-9a-f]{8}_\d{8}_\d{6}|[0-9a-f]{16,}|\b1[6-9]\d{8}(?:\.\d+)?")


def _forms(secret: str) -> set[bytes]:
    """The byte strings that would show the secret; none for a number (see :func:`_number`)."""
    if _number(secret):
        return set()  # a short number is in any binary file by chance: the number rule finds it
    forms = {secret, unicodedata.normalize("NFKC", secret), json.dumps(secret)[1:-1], urllib.parse.quote(secret),
             urllib.parse.quote_plus(secret)}
    return {f.encode("utf-8") for f in forms if len(f) >= 4}


def _number(secret: str) -> str | None:
    """The digits that make ``secret`` a number (bench/redteam.py's rule, plus any all-digit code
    such as a 4-digit 验证码), else None."""
    digits = re.sub(r"\D", "", secret)
    bare = _SEPARATORS.sub("", secret)
    if (len(digits) >= 6 and len(digits) >= len(bare) * 0.8) or (len(digits) >= 4 and digits == bare):
        return digits
    return None


def find_leaks(secrets: list[dict], blobs: dict[str, bytes]) -> list[dict]:
    """Every (secret, where) for which a form of the secret is readable in a blob."""
    leaks = []
    numbers = {name: _SEPARATORS.sub("", _OWN_NUMBERS.sub(" ", data.decode("utf-8", "replace"))) for name, data in blobs.items()}
    for r in secrets:
        forms = _forms(r["secret"])
        digits = _number(r["secret"])
        pattern = re.compile(rf"(?<!\d){digits}(?!\d)") if digits and len(digits) <= 8 else None
        for name, data in blobs.items():
            hit = any(f in data for f in forms)
            if not hit and digits:
                hit = bool(pattern.search(numbers[name])) if pattern else digits in numbers[name]
            if hit:
                leaks.append({"kind": r["kind"], "secret": r["secret"], "where": name})
    return leaks


def store_blobs(h: Home) -> dict[str, bytes]:
    """Every file under the home, by path, and every table's values (as text, JSON decoded too)."""
    blobs = {str(p.relative_to(h.root)): p.read_bytes() for p in sorted(h.home.rglob("*")) if p.is_file()}
    if h.db.exists():
        import apsw

        con = apsw.Connection(str(h.db), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            tables = [t for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            for t in tables:
                parts = []
                for row in con.execute(f'SELECT * FROM "{t}"'):
                    for v in row:
                        if isinstance(v, bytes):
                            parts.append(v.decode("utf-8", "replace"))
                        elif v is not None:
                            parts.append(str(v))
                            if isinstance(v, str) and v[:1] in "[{":
                                try:
                                    parts.append(json.dumps(json.loads(v), ensure_ascii=False))
                                except ValueError:
                                    pass
                blobs[f"table {t}"] = "\n".join(parts).encode("utf-8")
        finally:
            con.close()
    return blobs


def canaries_found(h: Home, path: str, rs: list[dict], blobs: dict[str, bytes]) -> int:
    text = b"\n".join(v for k, v in blobs.items() if k.startswith("table "))
    return sum(1 for r in rs if canary(path, r["i"]).encode() in text)


# ---------------------------------------------------------------------------------- the run


def run(sample: int | None = None, paths: list[str] | None = None, seed: int = 1, service: bool = True,
        conversions: bool = True, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Push the secrets through ``paths`` (all by default) and the look-alikes through save and
    import; scan. Returns the report (see the module's docstring)."""
    from fake_embedder import ChatEndpoint

    secrets, looks = rows(sample, seed)
    names = paths or list(PATHS)
    report: dict[str, Any] = {"secrets": len(secrets), "lookalikes": len(looks), "paths": {}, "leaks": [], "llm_requests": 0}
    with tempfile.TemporaryDirectory(prefix="mnemo-redteam-") as tmp:
        endpoint = ChatEndpoint()
        try:
            for name in names:
                # one home per path, so that a leak names the path it came through
                h = Home(Path(tmp) / name, service=service and name == "hooks")
                try:
                    h.cli("init", "--json")
                    for note in SEED_NOTES:  # something for context and the hooks to inject
                        h.cli("save", note, "--json")
                    t0 = time.perf_counter()
                    if h.service is None and service and name == "hooks":
                        h.start_service()
                    if name == "llm":
                        p_llm(h, secrets, endpoint)
                    else:
                        PATHS[name](h, secrets)
                    seconds = round(time.perf_counter() - t0, 1)
                    blobs = store_blobs(h)  # with the service (if any) still up
                    leaks = find_leaks(secrets, blobs)
                    found = canaries_found(h, name, secrets, blobs)
                    h.stop_service()
                    if conversions:
                        h.cli("encrypt", "--json")
                        h.cli("decrypt", "--json")
                        blobs = store_blobs(h)
                        leaks += [dict(x, after="encrypt+decrypt") for x in find_leaks(secrets, blobs)]
                    files = sorted(k for k in blobs if not k.startswith("table "))
                finally:
                    h.stop_service()
                report["paths"][name] = {"seconds": seconds, "canaries": found, "files": files, "leaks": len(leaks)}
                report["leaks"] += [dict(x, path=name) for x in leaks]
                log(f"  {name:14} {len(secrets)} secrets in {seconds:5} s: {len(leaks)} leaks, {found} canaries stored")
            sent = [json.dumps(s["body"], ensure_ascii=False).encode() for s in endpoint.seen]
            report["llm_requests"] = len(sent)
            report["leaks"] += [dict(x, path="llm", where="llm endpoint") for x in find_leaks(secrets, {"llm": b"\n".join(sent)})]
        finally:
            endpoint.close()
        look = Home(Path(tmp) / "lookalikes")
        altered = []
        for r in looks:
            got = look.cli("save", "--no-dedup", "--json", "--", r["text"])["memory"]["content"]
            if got != r["text"].strip():
                altered.append({"kind": r["kind"], "text": r["text"], "stored": got, "via": "save"})
        lines = [json.dumps({"content": r["text"], "metadata": {"i": r["i"]}}, ensure_ascii=False) for r in looks]
        look = Home(Path(tmp) / "lookalikes-import")  # a fresh store: import skips what save stored
        look.cli("import", str(look.write("looks.jsonl", "\n".join(lines) + "\n")), "--json")
        stored = _imported(look)
        for r in looks:
            if stored.get(r["i"]) != r["text"].strip():
                altered.append({"kind": r["kind"], "text": r["text"], "stored": stored.get(r["i"]), "via": "import"})
        report["altered"] = altered
    return report


def _imported(h: Home) -> dict[int, str]:
    """Imported look-alikes by their ``i``, read from the store."""
    import apsw

    con = apsw.Connection(str(h.db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        out = {}
        for content, meta in con.execute("SELECT content, metadata FROM memories"):
            data = json.loads(meta or "{}")
            if isinstance(data, dict) and isinstance(data.get("i"), int):
                out[data["i"]] = content
        return out
    finally:
        con.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sample", type=int, help="secrets (and look-alikes) drawn per run; default: all")
    ap.add_argument("--paths", help="comma-separated paths (default: all): " + ",".join(PATHS))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    names = args.paths.split(",") if args.paths else None
    t0 = time.perf_counter()
    report = run(args.sample, names, args.seed, log=(lambda s: None) if args.json else print)
    report["seconds"] = round(time.perf_counter() - t0, 1)
    fp_limit = MAX_FP_RATE * 2 * report["lookalikes"]
    empty = [n for n, p in report["paths"].items() if not p.get("canaries")]
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=1))
    else:
        files = sorted({f.split("/", 1)[1] for p in report["paths"].values() for f in p["files"]})
        print(f"\n{report['secrets']} secrets through {len(report['paths'])} paths "
              f"({report['secrets'] * len(report['paths'])} pushes), {report['llm_requests']} LLM requests, "
              f"files scanned: {', '.join(files)}; {report['seconds']} s")
        print(f"leaks: {len(report['leaks'])}")
        for leak in report["leaks"][:50]:
            print("  ", leak)
        print(f"look-alikes altered: {len(report['altered'])} of {2 * report['lookalikes']} (save + import)")
        for a in report["altered"][:20]:
            print("  ", a)
    return 1 if report["leaks"] or empty or len(report["altered"]) > fp_limit else 0


if __name__ == "__main__":
    sys.exit(main())
