"""``mnemo demo``: a newcomer's tour on a throwaway store (nothing touches the real one)."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from .._base.text import has_han
from .._core.mnemo import Mnemo
from . import render as _render

SAMPLES: list[dict[str, Any]] = [
    {"content": "项目使用 FastAPI + PostgreSQL，消息队列用 Redis Stream", "type": "project_context", "scope": "project:demo", "tags": ["stack"]},
    {"content": "We decided to deploy with GitHub Actions to a single VPS; no Kubernetes for now.", "type": "decision", "scope": "project:demo", "importance": 0.8},
    {"content": "I prefer concise answers with code first, explanations after.", "type": "user_preference"},
    {"content": "我喜欢用 pytest 写测试，不用 unittest", "type": "user_preference", "tags": ["testing"]},
    {"content": "API 响应时间必须低于 200 毫秒", "type": "constraint", "scope": "project:demo", "importance": 0.9},
    {"content": "The staging database runs on port 5433, not the default 5432.", "type": "fact", "scope": "project:demo"},
]
#: a message as an assistant would pass it to ``mnemo auto``: two memories in one sentence
MESSAGE = "记住：以后都用 uv 管理依赖。项目的前端选择 Vue 3 + Vite，好的谢谢！"
QUERIES = [
    "what database and queue does the project use?",
    "部署方式是什么？",
    "testing framework preference",
    "how do I bake sourdough bread?",
]


def _what_it_shows(query: str, hits: list[Any]) -> str:
    """What a search of the tour shows, said from its actual answer (never a label that the
    results might contradict)."""
    if not hits:
        return "nothing relevant is stored: nothing comes back"
    q_zh, top = has_han(query), hits[0].memory.content
    if q_zh != has_han(top):
        return f"{'Chinese' if q_zh else 'English'} question, {'Chinese' if has_han(top) else 'English'} memory first"
    shared = set(query.lower().split()) & set(top.lower().split())
    return "found by meaning, not by its words" if not shared else "found by its words and its meaning"


def run_demo(*, model: str = "e5", keep: bool = False, as_json: bool = False) -> dict[str, Any]:
    """Save, search (also across languages), explain, capture from a message, an assistant's
    context block, stats and export on a temporary store."""
    folder = Path(tempfile.mkdtemp(prefix="mnemo-demo-"))
    report: dict[str, Any] = {"store": str(folder / "demo.db"), "saved": [], "searches": []}
    say = (lambda *a: None) if as_json else _render.out.print
    try:
        with Mnemo(folder / "demo.db", model=model, scope="project:demo") as m:
            say(f"[bold]mnemo demo[/] — a throwaway store at {folder / 'demo.db'} (model: {model})\n")
            say("[bold]1. Remember[/] (mnemo save …)")
            with _render.progress("embedding", enabled=not as_json):
                saved = m.remember_many(SAMPLES, cause="demo")
            for mem, _ in saved:
                report["saved"].append(mem.to_dict())
                say(f"   saved {mem.id}  [dim]{mem.type} · {mem.scope}[/]  {_render.escape(mem.content)}")
            say("\n[bold]2. Recall[/] (mnemo search …)")
            for n, query in enumerate(QUERIES):
                hits = m.recall(query, top_k=3, explain=True, touch=False)
                shows = _what_it_shows(query, hits)
                report["searches"].append({"query": query, "shows": shows, "results": [h.to_dict() for h in hits]})
                say(f"\n   [bold]mnemo search \"{query}\"[/]  [dim]— {shows}[/]")
                if not as_json:
                    _render.hits(hits, explain=n == 0)
            say(f"\n[bold]3. Capture[/] (mnemo auto \"{MESSAGE}\")  [dim]— found in conversation, chit-chat left out[/]")
            captured = m.auto(MESSAGE, scope="project:demo")
            report["captured"] = captured
            for item in captured["detected"]:
                say(f"   {item['type']}: {_render.escape(item['content'])}  [dim](confidence {item['confidence']:.2f})[/]")
            say("\n[bold]4. Context[/] (mnemo context \"how should I set up the frontend?\")  [dim]— what an assistant is given[/]")
            block = m.context("how should I set up the frontend?", top_k=3, surface="demo")
            report["context"] = block
            say(_render.escape(block["text"]) if block["text"] else "   (nothing relevant)")
            say("\n[bold]5. Stats[/] (mnemo stats)")
            info = m.stats()
            report["stats"] = info
            if not as_json:
                _render.stats(info)
            say("\n[bold]6. Export[/] (mnemo export --format markdown)")
            md = m.export_text("markdown")
            report["export_markdown_lines"] = md.count("\n")
            if not as_json:
                _render.out.print(_render.escape("\n".join(md.splitlines()[:12])) + "\n   …")
        say("\nYour own memories live in the real store: [bold]mnemo init[/] creates it, [bold]mnemo save[/] fills it.")
    finally:
        if keep:
            say(f"kept the demo store: {folder / 'demo.db'}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    if as_json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
    return report
