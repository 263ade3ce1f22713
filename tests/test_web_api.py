"""``mnemo web``'s REST API and its guards, through the real command on both backends.

Each test starts ``mnemo web`` in its own process (``tests/webserver.py``) and talks HTTP to
it, as a script or the web app's page does. The browser itself is driven in
``test_web_browser.py``.
"""

# ruff: noqa: F811  (pytest fixtures imported from tests/webserver.py are parameters of the same name)
from __future__ import annotations

import http.client
import json
import re
import subprocess
import sys
import time
from urllib.parse import quote, urlsplit

import pytest
from webserver import start_web, web, web_real  # noqa: F401  (fixtures)


def _raw(server, method: str, path: str, headers: dict[str, str], body: bytes | None = None) -> tuple[int, dict[str, str], bytes]:
    """One request with exactly these headers (Host and Origin included), no client-side help."""
    u = urlsplit(server.url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    for k, v in headers.items():
        conn.putheader(k, v)
    if body is not None:
        conn.putheader("Content-Length", str(len(body)))
    conn.endheaders(body)
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data


def _host(server) -> str:
    return urlsplit(server.url).netloc


# ---------------------------------------------------------------- the operations


def test_a_memory_round_trip_edit_history_restore_forget_purge(web) -> None:
    status, out = web.api("POST", "/memories", {"content": "项目使用 FastAPI + PostgreSQL，数据库端口 5432", "type": "project_context", "tags": ["db"]})
    assert status == 201 and out["action"] == "created"
    mid = out["memory"]["id"]
    assert out["memory"]["source"] == "web" and out["memory"]["tags"] == ["db"] and "content_hash" not in out["memory"]

    status, out = web.api("PATCH", f"/memories/{mid}", {"content": "项目使用 FastAPI + PostgreSQL，数据库端口 6432"})
    assert status == 200 and out["memory"]["content"].endswith("6432")
    status, out = web.api("GET", f"/memories/{mid}")
    kinds = [e["kind"] for e in out["history"]]
    assert kinds == ["created", "updated"] and out["history"][1]["data"]["before"]["content"].endswith("5432")

    status, out = web.api("POST", f"/memories/{mid}/restore")
    assert status == 200 and out["memory"]["content"].endswith("5432")
    status, out = web.api("POST", f"/memories/{mid}/forget")
    assert out["memory"]["status"] == "deleted"
    assert web.api("GET", "/memories")[1]["results"] == []
    assert web.api("POST", f"/memories/{mid}/restore")[1]["memory"]["status"] == "active"

    status, out = web.api("DELETE", f"/memories/{mid}")
    assert status == 200 and out["purged"] == 1
    status, out = web.api("GET", f"/memories/{mid}")
    assert status == 404 and out["error"]["type"] == "NotFoundError"


def test_search_filters_highlight_terms_and_explain(web) -> None:
    for content, type_, scope in [("We use PostgreSQL 16 for the orders service", "decision", "global"),
                                  ("数据库每天凌晨三点备份", "fact", "project:shop"),
                                  ("I prefer dark mode in every editor", "user_preference", "global")]:
        assert web.api("POST", "/memories", {"content": content, "type": type_, "scope": scope})[0] == 201
    status, out = web.api("GET", "/search?q=" + quote("PostgreSQL orders") + "&k=5")
    assert status == 200 and out["results"][0]["content"].startswith("We use PostgreSQL")
    assert {"similarity", "bm25", "score"} <= set(out["results"][0]["explain"]) and "postgresql" in out["terms"]
    # the server's scope is global: a project's memory is found with scope=all (or its scope)
    assert not any("备份" in h["content"] for h in web.api("GET", "/search?q=" + quote("数据库备份"))[1]["results"])
    out = web.api("GET", "/search?q=" + quote("数据库备份") + "&scope=all")[1]
    assert out["results"][0]["content"] == "数据库每天凌晨三点备份" and "备份" in out["terms"]
    assert web.api("GET", "/search?q=editor&type=decision&scope=all")[1]["results"] == [] or all(
        h["type"] == "decision" for h in web.api("GET", "/search?q=editor&type=decision&scope=all")[1]["results"])


def test_list_pages_through_every_memory_once(web) -> None:
    for i in range(7):
        web.api("POST", "/memories", {"content": f"note number {i} about topic {chr(65 + i) * 3}", "tags": ["paging"]})
    seen, offset = [], 0
    while offset is not None:
        out = web.api("GET", f"/memories?limit=3&offset={offset}&tag=paging")[1]
        seen += [r["id"] for r in out["results"]]
        offset = out["next_offset"]
    assert len(seen) == len(set(seen)) == 7


def test_changes_lists_a_merge_and_its_undo_splits_it_again(web) -> None:
    web.api("POST", "/memories", {"content": "The staging database is backed up every night"})
    status, out = web.api("POST", "/memories", {"content": "The staging database is backed up every night."})
    assert out["action"] == "merged"
    change = next(c for c in web.api("GET", "/changes")[1]["results"] if c["kind"] == "merged")
    assert change["undo"] is True and change["memory"]["content"].startswith("The staging database")
    assert web.api("POST", f"/memories/{change['memory_id']}/restore")[0] == 200
    contents = sorted(r["content"] for r in web.api("GET", "/memories")[1]["results"])
    assert contents == ["The staging database is backed up every night", "The staging database is backed up every night."]
    # undone: the same change is no longer offered for undo
    again = next(c for c in web.api("GET", "/changes")[1]["results"] if c["kind"] == "merged")
    assert again["undo"] is False


def test_stats_and_weekly_activity_count_what_was_saved(web) -> None:
    for content, type_ in [("Use ruff for linting", "decision"), ("Deploys happen on Fridays", "fact"), ("Prefer tabs", "user_preference")]:
        web.api("POST", "/memories", {"content": content, "type": type_})
    out = web.api("GET", "/stats")[1]
    assert out["total"] == 3 and out["by_type"] == {"decision": 1, "fact": 1, "user_preference": 1}
    act = out["activity"]
    assert len(act["weeks"]) == 12 and act["created_by_type"]["decision"][-1] == 1 and sum(act["created_by_scope"]["global"]) == 3
    web.api("POST", "/context", {"query": "linting"})
    assert web.api("GET", "/stats")[1]["activity"]["injections"][-1] == 1


def test_upload_is_redacted_ingested_searchable_and_removable(web, mnemo_home) -> None:
    doc = "# Deploy notes\n\nThe staging server deploys every Friday at noon. password=hunter2-very-secret\n".encode()
    status, out = web.api("POST", "/ingest?filename=deploy.md", raw=doc, headers={"Content-Type": "application/octet-stream"})
    assert status == 200 and out["ingested"] == 1 and out["chunks"] == 1
    kept = (mnemo_home / "uploads" / "deploy.md").read_text("utf-8")
    assert "hunter2" not in kept and "[SECRET]" in kept
    hit = web.api("GET", "/search?q=" + quote("staging deploys Friday"))[1]["results"][0]
    assert "Friday" in hit["content"] and "hunter2" not in hit["content"]
    src = web.api("GET", "/sources")[1]["results"][0]
    assert src["title"] == "Deploy notes"
    assert web.api("POST", "/sources/resync", {"key": src["key"]})[1]["unchanged"] == 1
    assert web.api("POST", "/sources/remove", {"key": src["key"]})[1]["archived"] == 1
    assert web.api("GET", "/search?q=" + quote("staging deploys Friday"))[1]["results"] == []


def test_an_upload_answers_at_once_and_its_vectors_follow_in_the_background(web, mnemo_home) -> None:
    """A large document used to hold the request until every chunk was embedded (minutes with
    e5); now its words find it when the upload returns and the server embeds the chunks after."""
    sections = [f"## Part {i}\n\nService {i} of the fleet listens on port {7000 + i} and its on-call owner is team {i % 7}. "
                f"Its logs rotate daily and are kept for {10 + i} days in the archive bucket." for i in range(40)]
    doc = ("# Fleet notes\n\n" + "\n\n".join(sections)).encode()
    status, out = web.api("POST", "/ingest?filename=fleet.md", raw=doc)
    assert status == 200 and out["chunks"] >= 10 and out["vectors_pending"] >= 1, out
    hit = web.api("GET", "/search?q=" + quote("port 7031") + "&mode=fts")[1]["results"][0]
    assert "7031" in hit["content"]  # by its words, at once
    deadline = time.monotonic() + 60
    while web.api("GET", "/stats")[1]["vectors_pending"] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert web.api("GET", "/stats")[1]["vectors_pending"] == 0
    found = web.api("GET", "/search?q=" + quote("Service 12 of the fleet listens on port 7012") + "&mode=vector")[1]["results"]
    assert found and "7012" in found[0]["content"]  # and by its vector once filled


@pytest.mark.parametrize("name", ["../evil.md", "a/b.md", "..", ".hidden.md", "C:\\x.md", "x\x00.md"])
def test_upload_names_with_a_way_out_are_refused(web, mnemo_home, name) -> None:
    status, out = web.api("POST", "/ingest?filename=" + quote(name), raw=b"# x\n\nsome text here\n")
    assert status == 400 and "plain file name" in out["error"]["message"]
    assert not (mnemo_home.parent / "evil.md").exists()


def test_bad_uploads_get_one_clear_line(web) -> None:
    status, out = web.api("POST", "/ingest?filename=blob.bin", raw=b"\x00\x01\x02" * 100)
    assert status == 400 and "binary" in out["error"]["message"]
    status, out = web.api("POST", "/ingest?filename=empty.md", raw=b"   ")
    assert status == 400 and "empty" in out["error"]["message"]


def test_capture_preview_saves_nothing_and_save_keeps_only_the_chosen(web) -> None:
    out = web.api("POST", "/capture/preview", {"text": "我喜欢用 Neovim 写代码。我们决定用 Redis 做缓存。今天天气不错。"})[1]
    assert {d["type"] for d in out["detected"]} == {"user_preference", "decision"}
    assert web.api("GET", "/stats")[1]["total"] == 0
    chosen = [d for d in out["detected"] if d["type"] == "decision"]
    saved = web.api("POST", "/capture/save", {"items": chosen})[1]["saved"]
    assert [s["memory"]["content"] for s in saved] == ["我们决定用 Redis 做缓存"]
    assert [r["content"] for r in web.api("GET", "/memories")[1]["results"]] == ["我们决定用 Redis 做缓存"]


def test_review_lists_an_expired_memory_and_confirm_clears_it(web) -> None:
    mid = web.api("POST", "/memories", {"content": "The VPN certificate is valid"})[1]["memory"]["id"]
    web.api("PATCH", f"/memories/{mid}", {"expires": "2020-01-01"})
    assert [m["id"] for m in web.api("GET", "/review")[1]["results"]] == [mid]
    web.api("POST", f"/memories/{mid}/confirm", {"expires": "30d"})
    assert web.api("GET", "/review")[1]["results"] == []


def test_graph_follows_links(web) -> None:
    a = web.api("POST", "/memories", {"content": "The payments service is written in Go"})[1]["memory"]["id"]
    b = web.api("POST", "/memories", {"content": "The payments service moved from Go to Rust", "type": "decision"})[1]
    out = web.api("GET", f"/memories/{a}/graph")[1]
    assert out["center"] == a and any(n["id"] == a for n in out["nodes"])
    if b["action"] in ("superseded", "related"):
        assert any({e["src"], e["dst"]} == {a, b["memory"]["id"]} for e in out["edges"])


def test_doctor_config_log_info(web) -> None:
    assert {c["check"] for c in web.api("GET", "/doctor")[1]["checks"]} >= {"schema", "model"}
    names = {s["name"] for s in web.api("GET", "/config")[1]["settings"]}
    assert {"db", "model", "scope"} <= names
    info = web.api("GET", "/info")[1]
    assert info["scope"] == "global" and "decision" in info["types"] and "global" in info["scopes"]
    web.api("POST", "/memories", {"content": "Use pnpm, not npm"})
    assert web.api("POST", "/context", {"query": "pnpm or npm"})[1]["memories"]
    assert web.api("GET", "/log")[1]["results"][0]["surface"] == "web"


# ---------------------------------------------------------------- bad requests


@pytest.mark.parametrize("method,path,body,status,words", [
    ("POST", "/memories", b"{not json", 400, "not valid JSON"),
    ("POST", "/memories", b"[1, 2]", 400, "JSON object"),
    ("POST", "/memories", b'{"content": ""}', 400, "empty"),
    ("POST", "/memories", b'{"content": "x", "colour": "red"}', 400, "unknown field: colour"),
    ("POST", "/memories", b'{"content": "x", "importance": 3}', 400, "between 0 and 1"),
    ("POST", "/memories", b'{"content": "x", "type": "idea"}', 400, "must be one of"),
    ("POST", "/memories", b'{"content": 5}', 400, "must be a string"),
    ("GET", "/search", None, 400, "q: required"),
    ("GET", "/search?q=x&k=0", None, 400, "between 1 and 100"),
    ("GET", "/memories?limit=abc", None, 400, "whole number"),
    ("GET", "/memories/mem_nope", None, 404, "no memory"),
    ("GET", "/nothing/here", None, 404, "no API route"),
    ("PUT", "/memories", b"{}", 405, "not allowed"),
    ("PATCH", "/memories/mem_x", b"{}", 400, "nothing to change"),
])
def test_bad_requests_get_json_errors_never_a_traceback(web, method, path, body, status, words) -> None:
    got, out = web.api(method, path, raw=body, headers={"Content-Type": "application/json"} if body else None)
    assert got == status, out
    assert set(out) == {"error"} and words in out["error"]["message"] and "\n" not in out["error"]["message"]
    assert "Traceback" not in json.dumps(out)


def test_a_body_over_the_limit_is_refused_without_reading_it_all(web) -> None:
    # only the headers are sent: the answer comes from the declared length, before any body
    u = urlsplit(web.url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    conn.putrequest("POST", "/api/v1/memories", skip_accept_encoding=True)
    for k, v in {"Authorization": f"Bearer {web.token}", "Content-Type": "application/json", "Content-Length": str(3 * 1024 * 1024)}.items():
        conn.putheader(k, v)
    conn.endheaders()
    resp = conn.getresponse()
    out = json.loads(resp.read())
    conn.close()
    assert resp.status == 413 and "over 2 MB" in out["error"]["message"]


def test_openapi_document_validates_and_names_every_route(web) -> None:
    from openapi_spec_validator import validate

    from mnemo._web.api import ROUTES

    status, doc = web.api("GET", "/openapi.json")
    assert status == 200
    validate(doc)
    for r in ROUTES:
        assert r.method.lower() in doc["paths"]["/api/v1" + r.path], r.path


# ---------------------------------------------------------------- the guards


def test_no_credentials_is_401_and_a_wrong_token_too(web) -> None:
    assert web.api("GET", "/memories", auth=False)[0] == 401
    status, _ = web.api("GET", "/memories", auth=False, headers={"Authorization": "Bearer " + "0" * 64})
    assert status == 401


def test_a_foreign_host_header_is_403_dns_rebinding(web) -> None:
    port = urlsplit(web.url).port
    for host in (f"evil.example:{port}", f"localhost.evil.example:{port}", "127.0.0.1:1"):
        status, _, body = _raw(web, "GET", "/", {"Host": host})
        assert status == 403, host
        status, _, _ = _raw(web, "GET", "/api/v1/memories", {"Host": host, "Authorization": f"Bearer {web.token}"})
        assert status == 403
    assert _raw(web, "GET", "/", {"Host": f"localhost:{port}"})[0] == 200


def test_login_link_is_one_time_and_sets_a_strict_http_only_cookie(web) -> None:
    path = web.login_url.split(_host(web), 1)[1]
    status, headers, _ = _raw(web, "GET", path, {"Host": _host(web)})
    assert status == 303 and headers["location"] == "/"
    cookie = headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and web.token not in cookie
    name_value = cookie.split(";", 1)[0]
    # the cookie reads the API; a cross-origin write with it is refused (CSRF), a same-origin one is allowed
    assert _raw(web, "GET", "/api/v1/memories", {"Host": _host(web), "Cookie": name_value})[0] == 200
    body = b'{"content": "from the page"}'
    evil = {"Host": _host(web), "Cookie": name_value, "Origin": "http://evil.example", "Content-Type": "application/json"}
    assert _raw(web, "POST", "/api/v1/memories", evil, body)[0] == 403
    assert _raw(web, "POST", "/api/v1/memories", {**evil, "Origin": None or f"http://{_host(web)}", "Sec-Fetch-Site": "cross-site"}, body)[0] == 403
    no_origin = {k: v for k, v in evil.items() if k != "Origin"}
    assert _raw(web, "POST", "/api/v1/memories", no_origin, body)[0] == 403
    assert _raw(web, "POST", "/api/v1/memories", {**evil, "Origin": f"http://{_host(web)}"}, body)[0] == 201
    # used once: the same link again is refused
    assert _raw(web, "GET", path, {"Host": _host(web)})[0] == 401
    forged = path[:-4] + ("0000" if not path.endswith("0000") else "1111")
    assert _raw(web, "GET", web.fresh_login().split(_host(web), 1)[1][:-4] + forged[-4:], {"Host": _host(web)})[0] == 401


def test_every_answer_carries_the_strict_policy_headers(web) -> None:
    for path in ("/", "/static/app.js", "/sw.js", "/api/v1/memories", "/nope"):
        _, headers, _ = _raw(web, "GET", path, {"Host": _host(web), "Authorization": f"Bearer {web.token}"})
        csp = headers["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "frame-ancestors 'none'" in csp
        assert headers["x-content-type-options"] == "nosniff"
    _, headers, _ = _raw(web, "GET", "/api/v1/memories", {"Host": _host(web), "Authorization": f"Bearer {web.token}"})
    assert headers["cache-control"] == "no-store"


def test_static_files_have_no_way_out(web) -> None:
    for path in ("/static/../api.py", "/static/..%2fapi.py", "/static/.hidden", "/static/../../security.py"):
        assert _raw(web, "GET", path, {"Host": _host(web)})[0] == 404, path


def test_the_shell_has_no_inline_script() -> None:
    from mnemo._web.app import STATIC

    html = (STATIC / "index.html").read_text("utf-8")
    assert "<script>" not in html and not re.search(r"\son[a-z]+\s*=", html)  # no inline script, no inline handlers
    assert 'src="/static/' in html


def test_a_second_mnemo_web_prints_a_fresh_link_for_the_running_one(web) -> None:
    link = web.fresh_login()
    assert link.startswith(web.url + "/login?t=") and link != web.login_url


def test_other_addresses_need_tls_or_insecure_lan(mnemo_home) -> None:
    out = subprocess.run([sys.executable, "-m", "mnemo", "web", "--no-browser", "--port", "0", "--host", "0.0.0.0"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "--tls-cert" in out.stderr and "--insecure-lan" in out.stderr and "Traceback" not in out.stderr
    server = start_web("--host", "0.0.0.0", "--insecure-lan")
    try:
        assert server.api("GET", "/info")[0] == 200
    finally:
        err = server.stop()
    assert "Traceback" not in err and "▀" in err or "█" in err  # the QR code of the login link


def test_a_busy_port_is_one_clear_line(web) -> None:
    port = str(urlsplit(web.url).port)
    out = subprocess.run([sys.executable, "-m", "mnemo", "--db", "other.db", "web", "--no-browser", "--port", port],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "cannot listen" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.model
def test_cross_language_search_with_the_bundled_model(web_real) -> None:
    for content in ["Carol maintains the Ledger import plugins for Alipay and WeChat Pay",
                    "项目使用 FastAPI + PostgreSQL，数据库端口 5432", "I prefer dark mode in every editor"]:
        assert web_real.api("POST", "/memories", {"content": content})[0] == 201
    out = web_real.api("GET", "/search?q=" + quote("谁负责支付宝导入插件？") + "&k=3")[1]
    assert out["results"][0]["content"].startswith("Carol maintains")
    out = web_real.api("GET", "/search?q=" + quote("which database port does the project use") + "&k=3")[1]
    assert out["results"][0]["content"].startswith("项目使用 FastAPI")


@pytest.mark.postgres
def test_on_a_team_store_the_web_app_sees_only_what_its_role_may(pg_databases, mnemo_home) -> None:
    """On PostgreSQL the app's login is the database role of the store URL it serves: row-level
    security decides what it sees, so a teammate's private scope stays out of every page."""
    from conftest import pg_url
    from fake_embedder import FakeEmbedder

    from mnemo import Mnemo

    name = pg_databases.new(owner="mnemo")
    with Mnemo(pg_url(name), embedder=FakeEmbedder()):
        pass
    with Mnemo(pg_url(name, user="mnemo_alice"), embedder=FakeEmbedder()) as alice:
        alice.visibility("project:alice-diary", private=True)
        secret = alice.remember("my salary negotiation target is confidential", scope="project:alice-diary")
        alice.edit(secret.id, content="my salary negotiation target is strictly confidential")
        shared = alice.remember("the team deploys the api on thursdays", scope="global")
    bob = start_web(env={"MNEMO_DB": pg_url(name, user="mnemo_bob")})
    try:
        out = bob.api("GET", "/memories?scope=all&status=all")
        assert [r["id"] for r in out[1]["results"]] == [shared.id], out
        assert all(h["id"] != secret.id for h in bob.api("GET", "/search?q=salary+negotiation&scope=all")[1]["results"])
        assert bob.api("GET", f"/memories/{secret.id}")[0] == 404
        assert bob.api("POST", f"/memories/{secret.id}/forget")[0] == 404
        assert all(c["memory_id"] != secret.id for c in bob.api("GET", "/changes?scope=all")[1]["results"])
        stats = bob.api("GET", "/stats")[1]
        assert stats["total"] == 1 and "project:alice-diary" not in stats["activity"]["created_by_scope"]
    finally:
        bob.stop()
