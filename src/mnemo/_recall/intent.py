"""What kind of memory a question asks for: 技术栈 → the project's stack, prefer → preferences.

A question about a kind of thing rarely shares words with the memory that answers it: "技术栈是
什么" and "项目使用 FastAPI + PostgreSQL" have no word in common, and e5 ranks a Tailwind preference
above the stack. But the question names a kind, and memories carry a type. So a question that
names a kind (Chinese or English) makes memories of the matching types candidates and weighs
them a little more (:data:`TYPE_BOOST`, shown by ``--explain``). It is a preference in the
ranking, never a filter: a better answer of another type still wins.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

from .._base import text
from .._base.tokens import estimate_tokens

#: the factor a memory of an asked-for type gets
TYPE_BOOST = 1.25

# (types, what a question that asks for them says); checked on the lowercased, NFKC text
_INTENTS: tuple[tuple[frozenset[str], str], ...] = (
    (frozenset({"project_context"}),
     r"技术栈|技术选型|架构|用(?:的)?(?:什么|哪个|哪些)(?:框架|数据库|语言|技术|栈)|(?:框架|数据库|后端|前端)是什么"
     r"|\b(?:tech(?:nology)? stack|stack|architecture|built (?:with|on)|what (?:framework|database|language)s?\b)"),
    (frozenset({"user_preference"}),
     r"偏好|喜欢|习惯|常用|爱用|我(?:一般|通常|平时)用|风格"
     r"|\b(?:prefer\w*|favou?rite|do i (?:use|like)|i (?:usually|normally) use|my (?:style|taste|habit)s?|like to)\b"),
    (frozenset({"decision"}),
     r"决定|决策|为什么选|为何选|选了|定了"
     r"|\b(?:decid\w*|decision|why did we (?:choose|pick|go with)|chose|picked)\b"),
    (frozenset({"constraint"}),
     r"规定|规则|约束|限制|必须|不能|不允许|不可以|最低|至少|上限|下限|要求"
     r"|\b(?:rules?|must|constraints?|limits?|not allowed|forbidden|minimum|at least|maximum|required?|requirements?)\b"),
    (frozenset({"goal"}),
     r"目标|计划|打算|想要达到|今年要"
     r"|\b(?:goals?|aims?|objectives?|plan(?:s|ning)? to|want to (?:reach|learn|ship))\b"),
    (frozenset({"workflow"}),
     r"流程|步骤|怎么部署|如何部署|发布流程|怎么发布"
     r"|\b(?:workflow|process|steps?|how do (?:we|i) (?:deploy|release|ship))\b"),
)


#: words the memories of a kind use where the question names only the kind: a stack is told as
#: "项目使用 FastAPI + PostgreSQL，数据库端口 5432", never as "our stack is…"
_KIND_WORDS: dict[str, str] = {
    "project_context": "框架 数据库 语言 framework database language",
}


def kind_terms(types: frozenset[str]) -> list[str]:
    """Full-text terms to add to the query for the asked-for ``types`` (may be empty): the kind's
    words as the index has them (each Chinese word is one word of jieba's; English ones stemmed),
    made without segmenting, since loading jieba cost an English question ~180 ms of a cold
    ``mnemo search``."""
    words = [w for t in sorted(types) if t in _KIND_WORDS for w in _KIND_WORDS[t].split()]
    return text.stem_words(words)


@lru_cache(maxsize=1)
def _compiled() -> tuple[tuple[frozenset[str], re.Pattern[str]], ...]:
    return tuple((types, re.compile(pattern)) for types, pattern in _INTENTS)


def asked_types(query: str) -> frozenset[str]:
    """The memory types ``query`` asks for (empty when it names no kind)."""
    import unicodedata

    text = unicodedata.normalize("NFKC", query).lower()
    out: set[str] = set()
    for types, pattern in _compiled():
        if pattern.search(text):
            out |= types
    return frozenset(out)


#: a query longer than this (in characters) is reduced to the parts that carry the question
LONG_QUERY = 400
#: …to about this many tokens (``estimate_tokens``): what the question costs the model
#: (e5: ~1.4 ms a token on one thread), since a hook waits for it on every prompt. In English
#: about 360 characters, in Chinese about 96. 192 read better on the seen sets (MADial-en R@5
#: 0.605 -> 0.631) and worse on the blind longq_heldout3 (0.683 -> 0.650), and doubled the
#: question-less paste's p95 in the hook (126 -> 245 ms): kept at 96 (bench/README.md)
SALIENT_TOKENS = 96
#: …and to this many for the full-text channel, which pays per term looked up, not per token
#: run through a model: a long message's other sentences still name what it is about (half of
#: e5's 512-token window, so a query that fits no longer loses anything to the cut)
SALIENT_TERMS_TOKENS = 256
_SENTENCE = re.compile(r"[^\n。！？!?；;]+[。！？!?；;]?")
_ASKS = re.compile(r"[?？]|怎么|如何|为什么|为何|什么|哪|吗|呢|能否|是否|请|帮我"
                   r"|\b(?:how|what|why|which|when|where|who|can|could|should|would|is there|are there|please|help)\b", re.I)


def salient_query(query: str, tokens: int = SALIENT_TOKENS) -> str:
    """A long query cut to what carries the question: its first sentence (the instruction: "帮我
    看看这个日志") and its question sentences, the last ones first; a pasted log, file or
    conversation in between is left out. Without a question, its head and its tail. Short queries,
    and those within ``tokens`` estimated tokens, are returned as they are; the result stays within
    ``tokens`` (:data:`SALIENT_TOKENS` for the model, :data:`SALIENT_TERMS_TOKENS` for full text).

    A pasted 20,000-character prompt was embedded window after window (seconds of CPU on every
    prompt) and its thousands of log words drowned the question's few in the full-text match;
    a budget in characters still let a Chinese one cost ~300 tokens (0.4 s of e5 on one thread)."""
    if len(query) <= LONG_QUERY or (len(query) <= 8 * tokens and estimate_tokens(query) <= tokens):
        return query
    sentences = [s.strip() for s in _SENTENCE.findall(query) if s.strip()]
    if not sentences:
        half = tokens // 2
        return _head(query, half) + " … " + _tail(query, half)
    first = _head(sentences[0], tokens // 3)
    asks: list[str] = []
    used = estimate_tokens(first)
    for s in reversed(sentences[1:]):
        if _ASKS.search(s) and s not in asks:
            ask = _head(s, tokens // 2)
            cost = estimate_tokens(ask)
            if used + cost <= tokens:
                asks.insert(0, ask)
                used += cost
        if used >= tokens * 0.8:
            break
    if not asks:  # no question: the instruction and the end (where a request usually sits)
        return first + " … " + _tail(query, tokens - used)
    return " ".join([first, *asks])


def _head(text: str, tokens: int) -> str:
    """The longest start of ``text`` within ``tokens`` estimated tokens (at least one character)."""
    return text[: _fit(text, tokens, lambda n: text[:n])]


def _tail(text: str, tokens: int) -> str:
    """The longest end of ``text`` within ``tokens`` estimated tokens (at least one character)."""
    return text[len(text) - _fit(text, tokens, lambda n: text[len(text) - n:]):]


def _fit(text: str, tokens: int, part: Callable[[int], str]) -> int:
    """How many characters ``part(n)`` may take and stay within ``tokens``: a binary search, since
    one character is at most one token and at least a fraction of one."""
    lo, hi = 1, min(len(text), max(1, tokens) * 8)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if estimate_tokens(part(mid)) <= tokens:
            lo = mid
        else:
            hi = mid - 1
    return lo
