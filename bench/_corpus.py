"""Corpora for the speed benchmark (``bench/speed.py``): real texts, real e5 vectors, and
large synthetic stores built from them without running the model 100k times.

* Real texts: every LoCoMo dev turn (``"<speaker>: <text>"``), the MADial-Bench Chinese event
  memories, and a few Chinese assistant-style memories written here.
* Real vectors: those texts embedded once with e5 (``passage:`` side) and cached under
  ``bench/.cache/`` (git-ignored), keyed by the model identity and the texts.
* Synthetic memories at scale: text = a real text plus the first sentence of another real
  text of the same language (so full-text search sees realistic vocabulary and term
  frequencies); vector = normalise(0.8·v_a + 0.45·v_b + noise) from the real vectors of the two
  parts, so the cosine geometry (e5's ~0.75 floor between unrelated texts, tight clusters per
  topic) looks like real data. Scopes: 80% ``project:a``, 12% ``global``, 8% ``project:b``.
* Stores: built through ``Mnemo.import_`` with :class:`PrecomputedEmbedder` (it carries e5's
  identity, so the stores open with the real e5 model afterwards) and cached by size and by
  a hash of the store-shaping sources (schema, tokenizer).
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import time
from datetime import datetime, timedelta, timezone
from importlib import resources
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import default_bench_root, load_locomo, load_madial  # noqa: E402

CACHE = Path(__file__).resolve().parent / ".cache"
#: bump when the generator below changes (invalidates cached stores)
CORPUS_VERSION = 4
SCOPES = (("project:a", 0.80), ("global", 0.12), ("project:b", 0.08))
QUERY_SCOPE = "project:a"  # recall sees project:a + global: ~92% of the rows, through the mask
ZH_SHARE = 0.10

# Chinese assistant-style memories (written for this benchmark; MADial supplies the rest)
ZH_MEMORIES = """
用户更喜欢用 pnpm 管理前端依赖，不要再用 npm install。
项目的数据库从 MySQL 迁移到了 PostgreSQL 16，迁移脚本在 scripts/migrate 目录下。
部署用的是 GitHub Actions，合并到 main 分支后自动发布到测试环境。
用户说周五下午不开会，重要的讨论请安排在周二或周三上午。
代码风格：Python 用 ruff 格式化，行宽 120，类型注解必须写全。
我们决定不用 Redis 做缓存，先用进程内的 LRU，等并发上来再说。
用户的女儿叫小雨，今年上小学三年级，喜欢画画和游泳。
上周和产品经理确认了需求：导出功能要支持 CSV 和 Excel 两种格式。
服务器在阿里云杭州区域，数据库每天凌晨三点自动备份。
用户对花生过敏，订餐时一定要避开含花生的菜。
登录接口的超时时间从 30 秒改成了 10 秒，因为网关会先断开连接。
用户习惯用 Vim 写代码，终端是 iTerm2，字体用 JetBrains Mono。
团队约定：所有接口都要写单元测试，覆盖率不低于百分之八十。
用户上个月去成都出差，很喜欢那边的火锅和茶馆。
前端框架选了 Vue 3 加 Vite，状态管理用 Pinia，不用 Vuex。
日志统一输出 JSON 格式，由 Loki 收集，Grafana 里可以查询。
用户每天早上七点跑步五公里，周末会去爬山。
这个项目的发布周期是两周一次，每次发布前要冻结代码一天。
用户不喜欢太长的回答，希望先给结论，再给理由。
支付模块的回调地址必须使用 HTTPS，否则微信支付会拒绝。
用户的生日是三月十二日，去年生日收到了一只小猫。
机器学习模型放在对象存储里，推理服务启动时再下载。
用户正在学日语，准备明年七月参加 N2 考试。
我们的 API 采用 REST 风格，版本号写在路径里，比如 /v2/orders。
用户说晚上十点以后不要发工作消息。
测试环境的账号密码不要写进代码仓库，统一放在密钥管理服务里。
用户最喜欢的电影是《千与千寻》，看过不下十遍。
移动端先只支持安卓，苹果版本等下个季度再做。
用户家里养了一只金毛犬，名字叫豆豆。
性能问题定位结果：慢查询是因为订单表缺少 user_id 索引。
""".strip().splitlines()

ZH_QUERIES = [
    "用户喜欢用什么工具管理前端依赖？",
    "数据库迁移到哪个版本了？",
    "Bart 在圣诞节晚会上做了什么？",
    "用户对什么食物过敏？",
    "我们为什么没有用 Redis 做缓存？",
    "用户平时用什么编辑器写代码？",
    "Bart 最近一次感到难过是因为什么？",
    "用户的狗叫什么名字？",
    "上周和产品经理确认了哪些需求？",
    "订单表的慢查询是怎么解决的？",
    "用户什么时候参加日语考试？",
    "Bart 在学校运动会上拿了第几名？",
    "去成都出差时用户喜欢吃什么？",
    "发布之前需要做什么准备？",
    "用户几点以后不希望收到工作消息？",
    "Bart 和朋友一起去旅行了吗？",
]


# ---------------------------------------------------------------- real data

def real_texts() -> tuple[list[str], list[str]]:
    """``(english, chinese)`` real memory texts, deduplicated, order kept."""
    root = default_bench_root()
    en = [r.content for spec in load_locomo(root / "locomo" / "locomo-dev.json") for r in spec.records]
    zh = [r.content for spec in load_madial(root / "madial", "zh") for r in spec.records] + ZH_MEMORIES
    return list(dict.fromkeys(en)), list(dict.fromkeys(t for t in zh if t not in set(en)))


def locomo_turns() -> list[tuple[str, datetime]]:
    """Real LoCoMo turns as ``(content, created_at)`` (for the import benchmark)."""
    root = default_bench_root()
    return [(r.content, r.created_at) for spec in load_locomo(root / "locomo" / "locomo-dev.json") for r in spec.records]


def queries() -> list[str]:
    """Natural-language questions: the LoCoMo dev questions (categories 1-4) and Chinese ones."""
    root = default_bench_root()
    en = [q.query for spec in load_locomo(root / "locomo" / "locomo-dev.json") for q in spec.queries]
    en = list(dict.fromkeys(en))
    # interleave the Chinese questions so any prefix of the list has some
    step = max(1, len(en) // len(ZH_QUERIES))
    out: list[str] = []
    zh = iter(ZH_QUERIES)
    for i, q in enumerate(en):
        if i % step == 0:
            out.extend(z for z in [next(zh, None)] if z)
        out.append(q)
    out.extend(zh)
    return out


def e5_name() -> str:
    from mnemo._recall.embed import E5Embedder

    return E5Embedder().name  # the constructor does not load the model


def _key(*parts: object) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(repr(p).encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()[:16]


def real_vectors(texts: Sequence[str], log: Callable[[str], None] = print) -> np.ndarray:
    """e5 passage vectors of ``texts`` (cached in ``bench/.cache``)."""
    from mnemo._recall.embed import E5Embedder

    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"e5-passages-{_key(e5_name(), list(texts))}.npy"
    if path.exists():
        return np.load(path)
    emb = E5Embedder()
    t0 = time.perf_counter()
    parts = []
    for i in range(0, len(texts), 64):
        parts.append(emb.embed_passages(list(texts[i : i + 64])))
        log(f"  embedding real texts with e5 (once, cached): {min(i + 64, len(texts))}/{len(texts)} "
            f"[{time.perf_counter() - t0:.0f} s]")
    vecs = np.vstack(parts).astype(np.float32)
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, vecs)
    os.replace(tmp, path)
    return vecs


# ---------------------------------------------------------------- synthetic corpus

_SENT_END = re.compile(r"(?<=[.!?。！？])\s*")


def _first_sentence(text: str) -> str:
    body = text.split(": ", 1)[1] if ": " in text[:40] else text
    parts = [p for p in _SENT_END.split(body) if p.strip()]
    return (parts[0] if parts else body).strip()


def synth_corpus(n: int, en: list[str], zh: list[str], ven: np.ndarray, vzh: np.ndarray, seed: int = 7):
    """``n`` synthetic memories: list of record dicts and their (n, dim) vectors."""
    rng = np.random.default_rng(seed)
    dim = ven.shape[1]
    start = datetime(2023, 1, 1, tzinfo=timezone.utc)
    span_s = int(timedelta(days=900).total_seconds())
    scope_names = [s for s, _ in SCOPES]
    scope_p = np.array([p for _, p in SCOPES])
    first_en = [_first_sentence(t) for t in en]
    first_zh = [_first_sentence(t) for t in zh]
    seen: set[str] = set()
    records: list[dict] = []
    vecs = np.empty((n, dim), np.float32)
    noise_sd = 0.10 / np.sqrt(dim)  # |noise| ~ 0.1: near-duplicates stay distinct
    while len(records) < n:
        is_zh = rng.random() < ZH_SHARE
        texts, firsts, V = (zh, first_zh, vzh) if is_zh else (en, first_en, ven)
        a, b = (int(x) for x in rng.integers(0, len(texts), 2))
        sep = "" if is_zh else " "
        content = f"{texts[a]}{sep}{firsts[b]}".strip()
        if a == b or content in seen:  # unique texts: equal texts would share one cached vector
            continue
        seen.add(content)
        v = 0.8 * V[a] + 0.45 * V[b] + rng.normal(0.0, noise_sd, dim).astype(np.float32)
        vecs[len(records)] = v / np.linalg.norm(v)
        created = start + timedelta(seconds=int(rng.integers(0, span_s)))
        records.append({
            "id": f"syn-{len(records):07d}",
            "content": content,
            "scope": scope_names[int(rng.choice(len(scope_names), p=scope_p))],
            "type": ("note", "fact", "decision", "user_preference", "project_context")[int(rng.integers(0, 5))],
            "importance": round(float(rng.uniform(0.2, 0.9)), 2),
            "created_at": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "source": "bench",
        })
    return records, vecs


class PrecomputedEmbedder:
    """Carries e5's identity and returns precomputed vectors for known texts; anything else
    (the anchor sentences, queries) goes to the real e5 model."""

    def __init__(self, table: dict[str, np.ndarray]):
        from mnemo._recall.embed import E5Embedder

        self._real = E5Embedder()
        self.name = self._real.name
        self.dim = self._real.dim
        self.calibration = self._real.calibration
        self._table = table

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if all(t in self._table for t in texts):
            return np.vstack([self._table[t] for t in texts]) if texts else np.zeros((0, self.dim), np.float32)
        return self._real.embed_passages(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._real.embed_queries(texts)


def _source_fingerprint() -> str:
    """Hash of the sources that shape a stored row (schema, tokenizer, term list, anchors)."""
    h = hashlib.sha256()
    pkg = resources.files("mnemo")
    for name in ("_stores/sqlite_schema.py", "_base/text.py", "data/terms.txt", "data/anchors.txt"):
        h.update(pkg.joinpath(name).read_bytes())
    return h.hexdigest()[:12]


def build_store(n: int, log: Callable[[str], None] = print) -> Path:
    """A store of ``n`` synthetic memories with e5-like vectors (cached in ``bench/.cache``)."""
    from mnemo import Mnemo

    en, zh = real_texts()
    key = _key(CORPUS_VERSION, n, e5_name(), _source_fingerprint(), len(en), len(zh))
    path = CACHE / f"store-{n}-{key}.db"
    if path.exists():
        return path
    ven = real_vectors(en + zh, log)
    vzh = ven[len(en):]
    ven = ven[: len(en)]
    records, vecs = synth_corpus(n, en, zh, ven, vzh)
    table = {r["content"]: vecs[i] for i, r in enumerate(records)}
    tmp = CACHE / f".building-{n}-{os.getpid()}.db"
    for p in CACHE.glob(f".building-{n}-*"):
        p.unlink()
    t0 = time.perf_counter()
    m = Mnemo(tmp, embedder=PrecomputedEmbedder(table))

    def progress(done: int, total: int) -> None:
        if done and (done % 10_240 < 128 or done == total):
            log(f"  building the {n:,}-memory store (once, cached): {done:,}/{total:,} [{time.perf_counter() - t0:.0f} s]")

    out = m.import_(records, progress=progress)
    assert out["imported"] == n, out
    m._anchors()  # embeds and caches the anchor sentences with the real e5, as a first recall would
    m.close()
    for suffix in ("-wal", "-shm"):
        Path(f"{tmp}{suffix}").unlink(missing_ok=True)
    os.replace(tmp, path)
    for old in CACHE.glob(f"store-{n}-*"):  # older generations of this size (and their -wal/-shm)
        if old != path:
            old.unlink()
    log(f"  built {path.name} in {time.perf_counter() - t0:.0f} s ({path.stat().st_size / 2**20:.0f} MiB)")
    return path
