"""Recall that finds the obvious answer (issue "Recall"), through the real bundled model: the
kind a question asks for, names across languages, the project before global, and silence when
nothing is stored. One small store, as a user builds it, queried with ``touch=False``."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemo import Mnemo
from mnemo._recall.intent import asked_types

STACK = "项目使用 FastAPI + PostgreSQL，数据库端口 5432"
CAROL = "Carol maintains the Ledger import plugins for Alipay and WeChat Pay exports."
NEOVIM = "我习惯用 Neovim 写代码"
RUST_GOAL = "今年的目标是把 Rust 学到能写生产代码的程度"
MSRV = "The project requires stable Rust 1.75 or newer."
BACKUP = "The ledger database is backed up nightly at 03:00 UTC to S3."
MEMORIES = [
    (STACK, "project_context", "project:ledger"),
    ("选择 DeepSeek V4 Flash 作为 LLM，因为便宜且中文好", "decision", "project:ledger"),
    ("用户喜欢使用 Tailwind CSS 进行前端开发", "user_preference", "global"),
    (NEOVIM, "user_preference", "global"),
    (CAROL, "fact", "project:ledger"),
    (RUST_GOAL, "goal", "global"),
    (MSRV, "constraint", "project:ledger"),
    ("数据库变更必须经过两个人 review", "constraint", "global"),
    (BACKUP, "fact", "project:ledger"),
    ("周末不安排 on-call", "user_preference", "global"),
    ("回答请用中文", "user_preference", "global"),
    ("我叫张伟，时区是 UTC+8", "fact", "global"),
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Mnemo:
    path = Path(tmp_path_factory.mktemp("recall")) / "s.db"
    with Mnemo(path, model="e5") as m:
        for content, kind, scope in MEMORIES:
            m.remember(content, type=kind, scope=scope, dedup=False)
        yield m


def _top(store: Mnemo, query: str, k: int = 3) -> list[str]:
    return [h.memory.content for h in store.recall(query, scope="project:ledger", top_k=k, touch=False)]


@pytest.mark.model
@pytest.mark.parametrize("query,answer", [
    ("技术栈是什么", STACK),  # the seed's own question: no word in common with the answer
    ("what's the tech stack", STACK),
    ("谁负责支付宝导入插件？", CAROL),  # 支付宝 / Alipay, 负责 / maintains
    ("what editor do I use", NEOVIM),
    ("最低支持的 Rust 版本是多少？", MSRV),  # the project's constraint before the user's global goal
])
def test_the_obvious_answer_comes_first(store: Mnemo, query: str, answer: str) -> None:
    top = _top(store, query)
    assert top and top[0] == answer, top


@pytest.mark.model
def test_a_backup_question_finds_the_backup_across_languages(store: Mnemo) -> None:
    assert BACKUP in _top(store, "数据库什么时候备份？")  # 备份 / backed up (top 3: a global rule shares 数据库)


@pytest.mark.model
@pytest.mark.parametrize("query", ["how do I configure Kubernetes autoscaling", "what is the capital of France"])
def test_nothing_stored_nothing_returned(store: Mnemo, query: str) -> None:
    assert _top(store, query) == []


@pytest.mark.model
def test_global_memories_weigh_less_in_a_project_and_the_kind_asked_for_more(store: Mnemo) -> None:
    hits = store.recall("最低支持的 Rust 版本是多少？", scope="project:ledger", top_k=5, touch=False, explain=True)
    by = {h.memory.content: h.explain for h in hits}
    assert by[RUST_GOAL]["scope_factor"] == 0.85 and by[MSRV]["scope_factor"] == 1.0
    assert by[MSRV]["type_factor"] == 1.25  # "最低" asks for a constraint
    # in global scope nothing is down-weighted
    hits = store.recall("Rust", scope="global", top_k=5, touch=False, explain=True)
    assert all(h.explain["scope_factor"] == 1.0 for h in hits)


@pytest.mark.parametrize("query,types", [
    ("技术栈是什么", {"project_context"}),
    ("what's our tech stack?", {"project_context"}),
    ("我平时喜欢用什么编辑器", {"user_preference"}),
    ("what editor do I use", {"user_preference"}),
    ("为什么选了 DeepSeek？", {"decision"}),
    ("what did we decide about the cache", {"decision"}),
    ("有什么规定必须遵守", {"constraint"}),
    ("今年的目标", {"goal"}),
    ("发布流程是什么", {"workflow"}),
    ("数据库端口是多少", set()),
    ("Redis 的内存上限", {"constraint"}),
])
def test_the_kind_a_question_asks_for(query: str, types: set[str]) -> None:
    assert asked_types(query) == types


def test_a_long_pasted_prompt_is_searched_by_its_question() -> None:
    from mnemo._base.tokens import estimate_tokens
    from mnemo._recall.intent import LONG_QUERY, SALIENT_TOKENS, salient_query

    log = "\n".join(f"2026-12-01 10:{i % 60:02d}:00 ERROR connection pool exhausted at worker {i}, retrying in 5s" for i in range(250))
    prompt = "帮我看看这个日志：\n" + log + "\n\n数据库连接超时应该怎么调？"
    assert salient_query(prompt) == "帮我看看这个日志： 数据库连接超时应该怎么调？"
    config = "Here is my config file:\n" + "\n".join(f"key_{i} = value_{i}" for i in range(800)) + "\nWhat port does service 7 listen on?"
    assert salient_query(config) == "Here is my config file: What port does service 7 listen on?"
    short = "what editor do I use"
    assert salient_query(short) == short
    no_question = "Notes from today. " + "x" * 2000 + " The last line says the deploy moved to Tuesday."
    cut = salient_query(no_question)
    assert cut.startswith("Notes from today.") and cut.endswith("moved to Tuesday.") and len(cut) < LONG_QUERY
    assert estimate_tokens(cut) <= SALIENT_TOKENS + 4


def test_a_long_query_is_cut_to_a_token_budget_in_any_script() -> None:
    """The model's cost is per token: a Chinese paste kept to 360 characters still cost ~300
    tokens (0.4 s of e5 on one thread); the budget now holds for both scripts."""
    from mnemo._base.tokens import estimate_tokens
    from mnemo._recall.intent import SALIENT_TOKENS, salient_query

    talk = "我们讨论了很多关于支付系统的问题，包括对账、退款和回调的重试策略。" * 40
    asks = "为什么支付宝回调总是超时？微信支付的回调有没有同样的问题？银联的对账文件是每天几点生成的？"
    cut = salient_query("帮我整理一下这段讨论的要点。" + talk + asks)
    assert cut.startswith("帮我整理一下这段讨论的要点。") and "银联的对账文件是每天几点生成的？" in cut
    assert estimate_tokens(cut) <= SALIENT_TOKENS + 4  # the joining spaces
    for paste in ("数据库" * 7000, " ".join(["database", "端口", "editor"] * 2500), "x" * 20_000):
        cut = salient_query(paste)
        assert 0 < estimate_tokens(cut) <= SALIENT_TOKENS + 4 and paste[:3] in cut, cut[:40]


@pytest.mark.model
def test_a_question_after_a_pasted_log_finds_its_answer(tmp_path: Path) -> None:
    with Mnemo(tmp_path / "s.db", model="e5", scope="project:x") as m:
        m.remember_many([{"content": f"note {i}: service {i} listens on port {8000 + i}"} for i in range(30)]
                        + [{"content": "数据库连接超时要把 pool_timeout 调到 30 秒"}])
        log = "\n".join(f"2026-12-01 10:{i % 60:02d}:00 ERROR connection pool exhausted at worker {i}" for i in range(250))
        hits = m.recall("帮我看看这个日志：\n" + log + "\n\n数据库连接超时应该怎么调？", top_k=3, touch=False)
        assert hits and hits[0].memory.content.startswith("数据库连接超时")


def test_full_text_reads_more_of_a_long_message_than_the_model_does() -> None:
    """The model's budget is per token run through it; the full-text channel's is larger, so a
    long message's other sentences still name what it is about, and one that fits is kept whole."""
    from mnemo._base.tokens import estimate_tokens
    from mnemo._recall.intent import LONG_QUERY, SALIENT_TERMS_TOKENS, SALIENT_TOKENS, salient_query

    talk = ("Ana: We finally booked the flights to Lisbon for the conference in May. "
            "Assistant: Great, the venue is close to the river, and the talks start early. "
            "Ana: The hotel is near Alfama, so I will walk most days. My knee has been bad since the hike. "
            "Assistant: Walking shoes with good support would help then, and a rest day in the middle of the week. "
            "The conference app lists the sessions by track, so you can plan your days around it. "
            "Assistant: Lisbon in May is mild, but the evenings by the river get windy, and the old town's streets are steep "
            "and paved with smooth stone. Ana: The organisers planned a dinner on the second night and a walking tour on the "
            "last afternoon, and I would like to join both. Ana: Right. What should I pack?")
    assert SALIENT_TOKENS < estimate_tokens(talk) <= SALIENT_TERMS_TOKENS  # longer than the model reads, within what full text reads
    assert salient_query(talk, SALIENT_TERMS_TOKENS) == talk
    assert len(talk) > LONG_QUERY and "knee" not in salient_query(talk, SALIENT_TOKENS)  # the model reads the instruction and the questions
    long = talk + " " + "The schedule has many sessions about databases and caching. " * 60
    assert salient_query(long, SALIENT_TERMS_TOKENS) != long


def test_a_long_message_is_found_by_its_topic_and_the_batch_path_embeds_what_recall_does(tmp_path: Path) -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from fake_embedder import FakeEmbedder

    talk = ("Ana: We finally booked the flights to Lisbon for the conference in May. "
            "Assistant: Great, the venue is close to the river, and the talks start early. "
            "Ana: The hotel is near Alfama, so I will walk most days. My knee has been bad since the hike. "
            "Assistant: Walking shoes with good support would help then, and a rest day in the middle of the week. "
            "The conference app lists the sessions by track, so you can plan your days around it. Ana: Right. What should I pack?")
    with Mnemo(tmp_path / "s.db", embedder=FakeEmbedder()) as m:
        knee = m.remember("Left knee needs a brace since the Snowdon hike", dedup=False)
        m.remember_many([{"content": f"packing list item {i}: socks, charger, passport copy {i}"} for i in range(20)], dedup=False)
        assert knee.id in [h.memory.id for h in m.recall(talk, mode="fts", top_k=5, touch=False)]
        single = [(h.memory.id, round(h.similarity or 0.0, 6)) for h in m.recall(talk, top_k=5, touch=False)]
        batch = [(r["id"], round(r["similarity"] or 0.0, 6)) for r in m.recall_batch([{"query": talk}], top_k=5)[0]["results"]]
        assert batch == single
