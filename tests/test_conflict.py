"""Conflict rules (mnemo._lifecycle.conflict): change words, same slot with a new value, negation, in Chinese,
English and mixed text, and the traps that must stay non-conflicts (restatements, added detail,
related facts about another subject, preferences that co-exist, questions and plans)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from mnemo._lifecycle.conflict import Conflict, detect_conflict

# (old, new, reason): new replaces or contradicts old
CONFLICTS = [
    # --- change: new announces a change (改为/改用/换成/switched to/replaced … with …) ---
    ("采用 A 方案", "改用 B 方案", "change"),
    ("数据库用 MySQL", "改用 PostgreSQL", "change"),
    ("我们的数据库是 MySQL 8.0", "数据库从 MySQL 迁移到了 PostgreSQL", "change"),
    ("每周五部署", "部署时间改为每周四", "change"),
    ("API 超时设置为 30 秒", "超时改为 60 秒", "change"),
    ("数据库端口是 5432", "端口由 5432 改为 5433", "change"),
    ("缓存用 Redis", "不再用 Redis，改用 Memcached", "change"),
    ("前端使用 Vue 2", "前端换成 React 了", "change"),
    ("日志存在 Elasticsearch", "日志用 ClickHouse 取代了 Elasticsearch", "change"),
    ("編輯器用 VS Code", "編輯器換成 Cursor", "change"),  # traditional characters
    ("项目用 Python 3.11", "已升级到 Python 3.12", "change"),
    ("把默认分支设为 master", "默认分支从 master 改为 main", "change"),
    ("周会在周三下午", "周会改到周四下午", "change"),
    ("延迟大约 200ms", "延迟降到 50ms", "change"),
    ("The project is written in JavaScript", "We switched from JavaScript to TypeScript", "change"),
    ("We use MySQL for the main database", "We migrated the main database to PostgreSQL", "change"),
    ("CI runs on Jenkins", "We replaced Jenkins with GitHub Actions", "change"),
    ("Standup is at 9:30", "We moved standup to 10:00", "change"),
    ("Use npm for the frontend", "Use pnpm instead of npm for the frontend", "change"),
    ("Logs go to Papertrail", "Papertrail was replaced by Datadog", "change"),
    ("The team uses Slack", "We switched to Microsoft Teams", "change"),
    ("I drink coffee in the morning", "I now prefer tea over coffee in the morning", "change"),
    ("The office is located in Shanghai", "The office moved to Hangzhou", "change"),
    ("服务部署在 AWS", "服务迁移到了阿里云", "change"),
    ("会议用腾讯会议", "会议改用飞书", "change"),
    ("我住在杭州", "我已经搬到上海了", "change"),
    ("数据库用 MySQL", "We switched the database to PostgreSQL", "change"),  # mixed languages
    ("On-call handoff is on Monday at 10:00", "On-call handoff moved to Tuesday at 10:00", "change"),
    ("Release notes go in CHANGELOG.md", "Release notes now go in GitHub Releases instead of CHANGELOG.md", "change"),
    ("备份在 S3 保留 30 天", "备份保留期延长到 90 天", "change"),
    ("I prefer tabs for indentation", "I now prefer spaces for indentation", "change"),
    ("编辑器我喜欢浅色主题", "编辑器我现在更喜欢深色主题", "change"),
    ("Please answer in English", "From now on, please answer in Chinese", "change"),
    ("请用英文回答", "以后请用中文回答", "change"),
    ("Use unittest for tests", "Use pytest for all tests, not unittest", "change"),
    ("The price is $20 per month", "The price went up to $25 per month", "change"),
    ("消息队列用 RabbitMQ", "消息队列已替换为 Kafka，RabbitMQ 下线了", "change"),
    ("CI runs on CircleCI", "We moved CI off CircleCI to GitHub Actions", "change"),
    # --- negation: new negates what old states ---
    ("使用 Redis 做缓存", "不再使用 Redis", "negation"),
    ("我们每周五部署", "我们不再每周五部署", "negation"),
    ("项目用 jQuery", "项目已经不用 jQuery 了", "negation"),
    ("部署需要审批", "部署不用审批", "negation"),
    ("We deploy on Fridays", "We no longer deploy on Fridays", "negation"),
    ("We use Redis", "We don't use Redis anymore", "negation"),
    ("The team uses Jira", "We stopped using Jira", "negation"),
    ("We support Python 3.8 and 3.9", "We dropped support for Python 3.8", "negation"),
    ("Deploys need approval from Alice", "We no longer need approval for deploys", "negation"),
    ("I drink coffee every morning", "I quit coffee; I only drink tea now", "negation"),
    ("我每天早上喝咖啡", "我戒咖啡了，现在只喝茶", "negation"),
    ("本地开发用 Docker", "本地开发不要再用 Docker 了", "negation"),
    ("We use the legacy billing service", "The legacy billing service was decommissioned", "negation"),
    # --- new_value: the same slot with a different value ---
    ("PostgreSQL runs on port 5432", "PostgreSQL runs on port 5433", "new_value"),
    ("数据库端口 5432", "数据库端口 5433", "new_value"),
    ("We use Python 3.11", "We use Python 3.12", "new_value"),
    ("The price is $99 per month", "The price is $129 per month", "new_value"),
    ("会员价格 99 元", "会员价格 129 元", "new_value"),
    ("项目截止日期是 3 月 5 日", "项目截止日期是 3 月 12 日", "new_value"),
    ("The deadline is March 5", "The deadline is March 12", "new_value"),
    ("API 响应时间必须低于 200ms", "API 响应时间必须低于 300ms", "new_value"),
    ("Request timeout is 30s", "Request timeout is 60s", "new_value"),
    ("We use PostgreSQL 14", "We use PostgreSQL 15 with pgvector", "new_value"),
    ("每天 10 点开站会", "每天 9 点半开站会", "new_value"),
    ("每周一开周会", "每周三开周会", "new_value"),
    ("The API rate limit is 100 requests per minute", "The API rate limit is 200 requests per minute", "new_value"),
    ("The server has 16 GB of RAM", "The server has 32 GB of RAM", "new_value"),
    ("前端用 React", "前端用 Vue", "new_value"),
    ("The backend is written in Python", "The backend is written in Go", "new_value"),
    ("The project lead is Alice", "The project lead is Bob", "new_value"),
    ("团队负责人是张三", "团队负责人是李四", "new_value"),
    ("默认分支是 master", "默认分支是 main", "new_value"),
    ("I have two cats", "I have three cats now", "new_value"),
    ("我养了两只猫", "我现在养了三只猫", "new_value"),
    ("Code review needs one approval", "Code review now requires two approvals", "new_value"),
    ("My manager is Linda", "My new manager is Raj", "new_value"),
    ("团队负责人是王芳", "王芳离职了，新的团队负责人是刘洋", "new_value"),
    ("Our office is on the 5th floor", "Our office is on the 12th floor", "new_value"),
]

# (old, new): new restates, adds detail, is about another subject, co-exists, asks or only plans
NON_CONFLICTS = [
    # paraphrases, duplicates and added detail
    ("项目用 FastAPI", "我们的项目采用 FastAPI 框架"),
    ("我们使用 PostgreSQL", "我们使用 PostgreSQL 15 和 pgvector"),
    ("端口 5432", "端口 5432"),
    ("数据库端口 5432", "数据库端口依然是 5432，密码定期更换"),
    ("我们已经改用 PostgreSQL", "数据库改用 PostgreSQL 了"),
    ("不再使用 Redis", "我们不再使用 Redis 了"),
    ("我们从 Vue 2 升级到了 Vue 3", "项目用 Vue 3 和 Vite"),
    ("We use PostgreSQL", "We use PostgreSQL 15 with pgvector"),
    ("We switched from MySQL to PostgreSQL", "The database was migrated from MySQL to PostgreSQL last year"),
    ("We use TypeScript", "We switched to TypeScript in 2023"),
    ("Python 3.11 is required", "Python 3.11 is required on CI too"),
    ("We use Python 3.11", "We use Python 3.11.4"),
    ("We have 10k users", "We have 10000 users"),
    ("The server listens on port 8080", "The server listens on port 8080 behind nginx"),
    ("We deploy on Fridays", "We deploy on Fridays after the 3pm freeze"),
    ("We don't deploy on Fridays", "We no longer deploy on Fridays"),
    ("The backend is written in Go", "The backend is written in Go 1.22"),
    # related facts about another subject or slot
    ("API 响应时间必须低于 200ms", "数据库查询必须低于 50ms"),
    ("数据库备份每天凌晨 3 点", "数据库改用 PostgreSQL"),
    ("Redis 集群有 3 个节点", "改用 Redis 做缓存"),
    ("缓存用 Redis", "队列用 Kafka"),
    ("每天 10 点开站会", "每天 6 点下班"),
    ("月费 99 元", "年费 999 元"),
    ("我女儿今年 5 岁", "我儿子今年 8 岁"),
    ("缓存过期时间是 300 秒", "会话过期时间是 24 小时"),
    ("数据库端口是 5432", "Redis 端口是 6379"),
    ("测试环境用 MySQL", "生产环境用 PostgreSQL"),
    ("我们用 Jenkins 做夜间构建", "我们不再用 Jenkins 做发布"),
    ("Python 3.11 for the backend", "Python 3.12 for the ML service"),
    ("The staging database is PostgreSQL 15", "The production database is PostgreSQL 14"),
    ("The staging server runs on port 8080", "The metrics endpoint is exposed on port 9090"),
    ("The backend uses PostgreSQL", "The backend uses Redis for caching"),
    ("We use Redis for caching", "We no longer use Redis for sessions"),
    ("I drink coffee every morning", "I no longer drink coffee after 3pm"),
    ("Our CI runs on GitHub Actions", "We switched from Travis to CircleCI for mobile builds"),
    ("Alice owns the billing service", "Bob owns the search service"),
    ("The cache TTL is 300 seconds", "The session TTL is 24 hours"),
    ("I use VS Code", "I switched my editor theme to dark"),
    ("We support Python 3.8", "We dropped support for Python 3.7"),
    ("不再支持 Python 3.7", "支持 Python 3.8 到 3.12"),
    ("用户在做一个基于 Next.js 和 Supabase 的 SaaS 应用", "SaaS 应用的认证改用 Clerk，数据库仍然是 Supabase"),
    ("编辑器用 VS Code", "切换到深色主题"),
    ("限流：每个用户每分钟 100 次", "限流：每个组织每分钟 1000 次"),
    ("Rate limit: 100 requests per minute per user", "Rate limit: 1000 requests per minute per org"),
    ("每周一开周会", "每周一次代码评审"),
    ("I have two cats", "I have two cats and a dog"),
    ("Code review needs one approval", "Security changes need two approvals"),
    ("代码评审需要一个人批准", "安全相关的改动需要两个人批准"),
    ("I like Python", "I now like Rust as well"),
    ("我喜欢喝茶", "我现在喜欢喝咖啡"),
    ("编辑器我喜欢深色主题", "终端我现在喜欢浅色主题"),
    ("Use pytest for tests", "Use pytest for unit tests, not for load tests"),
    ("Traffic went up 20% last week", "Traffic went up 5% this week"),
    ("The v1 API is deprecated", "The v1 API was removed in March"),
    ("旧版接口已经下线", "新版接口用 GraphQL"),
    ("我每天喝咖啡", "我戒糖了"),
    ("Please answer in English", "From now on, keep answers short"),
    ("PR 需要一个人审批", "以后 PR 都要跑完 CI 才能合并"),
    ("I live in Berlin", "I moved to Berlin from Lisbon in 2021"),
    ("我们用 Jenkins 做 CI", "别再往 Jenkins 上加新任务了"),
    ("测试用 SQLite", "不要再用 SQLite 跑集成测试"),
    ("The team uses Slack", "We switched to Slack huddles for standups"),
    ("Tip number 5: write tests first", "Tip number 6: write tests first for bugs too"),  # a series, not a slot
    ("Ticket #123 is about login", "Ticket #124 is about login on mobile"),
    ("第 3 步：安装依赖", "第 4 步：安装依赖并运行测试"),
    # preferences and facts that co-exist, additions
    ("我喜欢喝茶", "我喜欢喝咖啡"),
    ("我每天早上喝咖啡", "我每天早上喝茶"),
    ("后端用 Python", "后端也用 Go 写一些脚本"),
    ("Redis 用来做缓存", "Redis 也用来做限流"),
    ("数据库是 MySQL", "数据库是性能瓶颈"),
    ("前端用 Vue", "前端不用 React"),
    ("I like tea", "I like coffee"),
    ("Python is great for scripting", "Python is slow for number crunching"),
    ("The API supports Python 3.10", "The API also supports Python 3.12"),
    ("The frontend uses Vue", "The frontend doesn't use React"),
    ("I ran 5 km today", "I ran 10 km today"),
    ("We released v1 in 2023", "We released v2 in 2024"),
    ("我们在 2023 年上线了 v1", "我们在 2024 年上线了 v2"),
    # questions, plans and hedges
    ("数据库用 MySQL", "考虑改用 PostgreSQL"),
    ("数据库用 MySQL", "要不要改用 PostgreSQL？"),
    ("项目用 Python 3.11", "Python 需要升级到 3.12"),
    ("Python 需要升级到 3.12", "项目用 Python 3.11"),
    ("We use PostgreSQL", "Should we switch to MySQL?"),
    ("We use PostgreSQL", "We are considering switching to MySQL"),
    ("The frontend uses React", "We will migrate the frontend to Svelte next year"),
    ("What database do we use?", "We use PostgreSQL"),
]


def test_the_case_lists_cover_both_languages_and_mostly_non_conflicts() -> None:
    pairs = [(o, n) for o, n, _ in CONFLICTS] + NON_CONFLICTS
    zh = sum(any("\u4e00" <= ch <= "\u9fff" for ch in o + n) for o, n in pairs)
    assert len(pairs) >= 60 and 0.35 <= zh / len(pairs) <= 0.65
    assert len(NON_CONFLICTS) >= len(CONFLICTS)
    assert {r for *_, r in CONFLICTS} == {"change", "new_value", "negation"}


@pytest.mark.parametrize(("old", "new", "reason"), CONFLICTS)
def test_conflicts_are_detected_with_their_reason(old: str, new: str, reason: str) -> None:
    found = detect_conflict(old, new)
    assert found is not None, f"missed: {old!r} → {new!r}"
    assert found.reason == reason, found
    assert found.detail and len(found.detail) <= 80


@pytest.mark.parametrize(("old", "new"), NON_CONFLICTS)
def test_non_conflicts_stay_none(old: str, new: str) -> None:
    assert detect_conflict(old, new) is None


@pytest.mark.parametrize(
    ("old", "new", "detail"),
    [
        ("PostgreSQL runs on port 5432", "PostgreSQL runs on port 5433", "port 5432 → 5433"),
        ("The project is written in JavaScript", "We switched from JavaScript to TypeScript", "JavaScript → TypeScript"),
        ("采用 A 方案", "改用 B 方案", "改用 B 方案"),
        ("数据库用 MySQL", "改用 PostgreSQL", "MySQL → PostgreSQL"),
        ("缓存用 Redis", "不再用 Redis，改用 Memcached", "Redis → Memcached"),
        ("使用 Redis 做缓存", "不再使用 Redis", "不再使用 Redis"),
        ("We deploy on Fridays", "We no longer deploy on Fridays", "no longer deploy on Fridays"),
        ("前端用 React", "前端用 Vue", "React → Vue"),
        ("The price is $99 per month", "The price is $129 per month", "price $99 → $129"),
    ],
)
def test_details_name_the_old_and_new_value(old: str, new: str, detail: str) -> None:
    found = detect_conflict(old, new)
    assert found is not None and found.detail == detail


def test_precision_on_the_labelled_lifecycle_pairs() -> None:
    """The rules alone, on every pair of tests/data/lifecycle_pairs.jsonl (even 'different' ones,
    which the embedding gate would mostly keep away): a false conflict hides a true memory."""
    path = Path(__file__).parent / "data" / "lifecycle_pairs.jsonl"
    if not path.exists():
        pytest.skip("no lifecycle pairs")
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    flagged = [r["label"] for r in rows if detect_conflict(r["a"], r["b"]) is not None]
    true = flagged.count("conflicting")
    assert true / max(1, len(flagged)) >= 0.95, [r for r in rows if r["label"] != "conflicting" and detect_conflict(r["a"], r["b"])]
    assert true / sum(r["label"] == "conflicting" for r in rows) >= 0.75


def test_full_width_and_case_are_normalised() -> None:
    assert detect_conflict("ＰｏｓｔｇｒｅＳＱＬ　ｒｕｎｓ　ｏｎ　ｐｏｒｔ　５４３２", "postgresql runs on port 5433") is not None
    assert detect_conflict("We use POSTGRESQL", "we use postgresql") is None


def test_empty_identical_and_question_texts_never_conflict() -> None:
    assert detect_conflict("", "改用 PostgreSQL") is None
    assert detect_conflict("数据库用 MySQL", "") is None
    assert detect_conflict("数据库用 MySQL", "数据库用 MySQL") is None
    assert detect_conflict("数据库用 MySQL 吗", "改用 PostgreSQL") is None


def test_conflict_is_a_frozen_value() -> None:
    c = Conflict("change", "A → B")
    assert c == Conflict("change", "A → B")
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.reason = "negation"  # type: ignore[misc]
