"""Text normalisation and tokenisation for the full-text channel, in Chinese and English.

Both the index and the query go through :func:`normalize` (NFKC, case-folded, traditional →
simplified Chinese), then Han runs are segmented with jieba (``rjieba``: the Rust port, whose
dictionary loads in ~0.1 s instead of jieba's ~0.5 s; it is only loaded when the text has Han
characters) and other runs are split into words. English words are stemmed here with Snowball
(PyStemmer), not with FTS5's ``porter`` tokenizer: Porter maps "deploy" to "deploi" but
"deployment" to "deploy", so the two never matched. FTS5 then only splits on spaces.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Callable, Container, Iterator, Sequence
from functools import lru_cache
from pathlib import Path

#: the package's data files (technical terms, glossary, anchor sentences)
DATA = Path(__file__).resolve().parent.parent / "data"
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_HAN_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
# words: letters/digits with inner . + # - _ (node.js, c++, c#, gpt-4o, snake_case)
_WORD = re.compile(r"[^\W_]+(?:[.+#_\-'][^\W_]+)*[+#]*", re.UNICODE)
_SPACES = re.compile(r"\s+")

# Words too common to help ranking; FTS5 would score them low anyway, but every extra OR
# term costs a posting-list scan, so dropping them keeps the lexical channel fast at 100k rows.
_EN_STOP = frozenset(
    """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not now of off on once only or other our ours ourselves out over
    own same she should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours yourself yourselves s t don didn doesn isn wasn aren
    ll ve re d m o y ok okay yes also get got go going tell told know think like really
    anything something thing things one would could may might shall much many ever""".split()
)
_ZH_STOP = frozenset(
    """的 了 是 在 和 与 及 或 我 你 他 她 它 我们 你们 他们 她们 这 那 这个 那个 这些 那些 一个 有 也 都 就
    要 会 能 吗 呢 吧 啊 呀 嘛 着 过 把 被 给 让 对 从 向 到 于 为 以 之 其 而 并 但 又 还 很 太 更 最 不 没
    没有 什么 怎么 怎样 如何 哪 哪里 哪个 哪些 谁 多少 几 是否 可以 应该 一下 一些 一点 之前 以前 时候
    关于 请问 请 告诉 知道 记得 吗？ 么 个 上 下 中 里 后 前""".split()
)
_DROP_CHARS = frozenset("，。！？、；：“”‘’（）《》【】—…·,.!?;:\"'()[]{}<>")


def has_han(text: str) -> bool:
    """True when the text contains Chinese characters."""
    return _HAN.search(text) is not None


def normalize(text: str) -> str:
    """NFKC (full-width forms), case-fold, and traditional → simplified Chinese."""
    out = unicodedata.normalize("NFKC", text).casefold()
    if has_han(out):
        out = _to_simplified(out)
    return out


def _to_simplified(text: str) -> str:
    import zhconv_rs  # lazy: only Chinese text needs it

    return zhconv_rs.zhconv(text, "zh-hans")


def content_hash(text: str) -> str:
    """The exact-duplicate key: normalised text with whitespace collapsed, hashed."""
    key = _SPACES.sub(" ", normalize(text)).strip()
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def text_hash(text: str) -> str:
    """Hash of a text exactly as embedded (the embedding cache key, with the model identity)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


@lru_cache(maxsize=1)
def _terms() -> tuple[tuple[str, ...], re.Pattern[str] | None]:
    """Technical terms (lowercase) and a regex that finds the multi-word ones."""
    raw = (DATA / "terms.txt").read_text("utf-8")
    terms = tuple(
        t.strip().casefold() for t in raw.splitlines() if t.strip() and not t.startswith("#")
    )
    multi = sorted((t for t in terms if " " in t), key=len, reverse=True)
    pattern = re.compile("|".join(re.escape(t) for t in multi)) if multi else None
    return terms, pattern


@lru_cache(maxsize=1)
def _jieba():  # type: ignore[no-untyped-def]
    import rjieba

    seg = rjieba.Jieba()
    for term in _terms()[0]:
        if " " not in term:
            seg.add_word(term, 50_000, None)
    return seg


def _split(text: str, *, search_mode: bool) -> list[str]:
    """Tokens of normalised text: jieba words for Han runs, word regex for the rest."""
    tokens: list[str] = []
    pos = 0
    for match in _HAN_RUN.finditer(text):
        tokens.extend(_WORD.findall(text[pos : match.start()]))
        run = match.group()
        seg = _jieba()
        words = seg.cut_for_search(run, True) if search_mode else seg.cut(run, True)
        tokens.extend(w for w in words if w.strip() and w not in _DROP_CHARS)
        pos = match.end()
    tokens.extend(_WORD.findall(text[pos:]))
    return tokens


def han_words(text: str) -> list[tuple[str, str]]:
    """The words of ``text``'s Chinese runs with their part of speech, as jieba tags them
    (``nr`` a person, ``ns`` a place, ``nt`` an organisation, ``nz`` another proper name)."""
    out: list[tuple[str, str]] = []
    for match in _HAN_RUN.finditer(normalize(text)):
        out.extend((w, t) for w, t in _jieba().tag(match.group(), True) if w.strip())
    return out


_ASCII_WORD = re.compile(r"[a-z]+")


@lru_cache(maxsize=1)
def _stemmer():  # type: ignore[no-untyped-def]
    import Stemmer

    return Stemmer.Stemmer("english")


def _stem(tokens: list[str]) -> list[str]:
    """Snowball-stem plain English words; leave Chinese, numbers and names like node.js alone."""
    stem = _stemmer().stemWord
    return [stem(t) if _ASCII_WORD.fullmatch(t) else t for t in tokens]


def stem_words(words: list[str]) -> list[str]:
    """Single words as index terms: normalised, English ones stemmed; no segmenting (a Chinese
    word must already be one of jieba's words)."""
    return _stem([normalize(w) for w in words])


def index_tokens(text: str) -> str:
    """The space-separated token string stored in the full-text index for ``text``."""
    return " ".join(_stem(_split(normalize(text), search_mode=True)))


def query_terms(text: str, *, max_terms: int = 64) -> tuple[list[str], list[str]]:
    """Search terms and multi-word phrases for a query, stop words removed, order kept.

    Returns ``(terms, phrases)``; each is already normalised. Only the first ``max_terms``
    distinct terms are kept so a pasted paragraph cannot turn into a 500-term OR query.
    """
    norm = normalize(text)
    phrases: list[str] = []
    _, multi = _terms()
    if multi is not None:
        phrases = list(dict.fromkeys(m.group() for m in multi.finditer(norm)))
    terms: list[str] = []
    seen: set[str] = set()
    kept = [t for t in _split(norm, search_mode=False) if t not in _EN_STOP and t not in _ZH_STOP]
    # a lone Han character that is not a stop word still carries meaning (猫, 药), so it stays
    for tok in _stem(kept):
        if tok in seen:
            continue
        seen.add(tok)
        terms.append(tok)
        if len(terms) >= max_terms:
            break
    phrases = [" ".join(_stem(p.split())) for p in phrases]
    return terms, phrases


@lru_cache(maxsize=1)
def _glossary_data() -> tuple[dict[str, tuple[str, ...]], frozenset[str]]:
    """Term → its translations (both directions), as index tokens (normalised, stemmed); and the
    terms of the glossary's names section (products, companies, places)."""
    # normalised as normalize() does, but without the traditional → simplified converter: the file
    # is written in simplified Chinese (a test holds it to that), and the converter's first call
    # loads its dictionary (~5 ms of a cold English search; word by word it was ~500 calls, ~7 ms)
    raw = unicodedata.normalize("NFKC", (DATA / "glossary.tsv").read_text("utf-8")).casefold()
    table: dict[str, set[str]] = {}
    names: set[str] = set()
    in_names = False
    for line in raw.splitlines():
        in_names = in_names or line.startswith("# names")
        if not line.strip() or line.startswith("#"):
            continue
        zh_side, en_side = line.split("\t")
        zh = [w for w in zh_side.split("|") if w.strip()]
        en = [" ".join(_stem(w.split())) for w in en_side.split("|") if w.strip()]
        for a, b in ((zh, en), (en, zh)):
            for word in a:
                table.setdefault(word, set()).update(b)
        if in_names:
            names.update(zh + en)
    return {k: tuple(sorted(v)) for k, v in table.items()}, frozenset(names)


def _glossary() -> dict[str, tuple[str, ...]]:
    return _glossary_data()[0]


def subwords(term: str) -> list[str]:
    """The shorter words inside a Chinese compound, as a search splits it (苏州工业园区 → 苏州, 工业,
    园区, 工业园); empty for one that has none."""
    return [p for p in dict.fromkeys(_split(normalize(term), search_mode=True)) if p != term and len(p) >= 2]


def glossary_keys() -> Container[str]:
    """The words and phrases the glossary translates (as index terms)."""
    return _glossary()


def name_translations(terms: list[str]) -> list[str]:
    """The other-language forms of the names among ``terms`` that the glossary's names section
    gives (支付宝 → alipay, Melbourne → 墨尔本), leaving out forms of two letters (us, uk, jd), which
    are words as well."""
    names = _glossary_data()[1]
    return [t for t in translations(terms, limit=24) if t in names and (len(t) > 2 or has_han(t))]


def translations(terms: list[str], *, limit: int = 12) -> list[str]:
    """Other-language words for query terms, from the bundled glossary (dictionary-based query
    translation): it lets the full-text channel match "部署" to "deploy", which the small
    multilingual models do poorly for short queries. Longest match first over adjacent terms,
    so "代码审查" becomes "code review" rather than "code" + "review"."""
    table = _glossary()
    seen = set(terms)
    out: list[str] = []
    for key in longest_spans(terms, table.__contains__):
        for t in table[key]:
            if t not in seen:
                seen.add(t)
                out.append(t)
    return out[:limit]


def span_key(parts: Sequence[str]) -> str:
    """How adjacent query terms are looked up as one: Han words joined as written (代码 审查 →
    代码审查), others with a space (code review)."""
    return "".join(parts) if all(has_han(p) for p in parts) else " ".join(parts)


def longest_spans(terms: Sequence[str], is_known: Callable[[str], bool]) -> Iterator[str]:
    """The known keys in ``terms``, longest match first over up to three adjacent terms (so
    "代码审查" is one key, not "代码" + "审查"); a term in no known key is passed over."""
    i = 0
    while i < len(terms):
        for n in (3, 2, 1):
            if i + n <= len(terms) and is_known(key := span_key(terms[i : i + n])):
                yield key
                i += n
                break
        else:
            i += 1


def fts_match_expression(terms: list[str], phrases: list[str]) -> str | None:
    """An FTS5 MATCH expression: every term and phrase OR-ed, each quoted (no syntax errors)."""
    parts = [f'"{t.replace(chr(34), " ")}"' for t in [*phrases, *terms] if t.strip()]
    return " OR ".join(parts) if parts else None


def segment(text: str) -> list[str]:
    """Words of ``text`` (normalised), multi-word technical terms kept whole; for display and tests."""
    norm = normalize(text)
    _, multi = _terms()
    out: list[str] = []
    pos = 0
    if multi is not None:
        for m in multi.finditer(norm):
            out.extend(_split(norm[pos : m.start()], search_mode=False))
            out.append(m.group())
            pos = m.end()
    out.extend(_split(norm[pos:], search_mode=False))
    return out
