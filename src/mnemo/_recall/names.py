"""Names across scripts: a question that writes a name in one script finds the memory that
writes it in the other (陈雨婷 ⇄ Chen Yuting, 杭州 ⇄ Hangzhou, Li Na ⇄ 李娜).

The bundled glossary knows products and places by their fixed translations (支付宝/Alipay); a
person's name has no translation, only a romanisation, and the model's vectors barely connect
the two. So a query's names are spelt in the other script from the characters' readings
(:mod:`mnemo._base.pinyin`), and only the spellings the store's own full-text index contains are
searched for: the store is the glossary, and it grows with every note that names someone.

* A Chinese name (a word jieba tags as a person, place, organisation or other proper noun, or a
  common surname followed by a word, since jieba often cuts a name in two: 王 | 志远) becomes the
  ways pinyin writes it: ``chen yuting``, ``yuting chen``, ``chen yu ting``, ``chenyuting``.
* A word the store's own notes write beside its other-script form — "友盟（Umeng）", "Neusoft
  (东软)", "钉钉/DingTalk" — is searched in that form too (:func:`paired_forms`): what a user
  wrote once, even of a name no glossary knows, then works in both directions.
* A run of capitalised words that reads as pinyin (``Li Na``, ``Wang Zhiyuan``, ``Xiaoming
  Zhou``, ``Hangzhou``) becomes the character strings that read so, the surname first or last,
  of which the index holds perhaps one (李娜 of the 14 spellings of "li na"); a name jieba cuts
  in two (王 | 志远) is searched as that phrase.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from .._base import pinyin, text

#: jieba's tags for a person (nr, nrfg, nrt), a place (ns), an organisation (nt), another name (nz)
PERSON_TAGS = frozenset({"nr", "nrfg", "nrt"})
NAME_TAGS = PERSON_TAGS | {"ns", "nt", "nz"}
#: at most this many spellings are looked up per query (~20 µs each in SQLite's index)
MAX_LOOKUPS = 1500
#: capitalised words in a row; a hyphen or apostrophe may join a lowercase one (Zhi-yuan, Xi'an)
_CAPITALISED_RUN = re.compile(r"[A-Z][a-z]+(?:(?: [A-Z]|[\-'][A-Za-z])[a-z]*)*")


#: how many notes naming a query's words are read for a form written beside them
PAIR_ROWS = 20
#: a word in more notes than this is not looked up for a form written beside it
PAIR_MAX_NOTES = 50
_HAN_FORM = "[\u3400-\u4dbf\u4e00-\u9fff]{2,12}"
_LATIN_FORM = r"(?:[A-Z0-9]|i[A-Z])[A-Za-z0-9.&+'-]*(?: (?:[A-Z0-9]|i[A-Z])[A-Za-z0-9.&+'-]*){0,3}"
#: a form and its other-script form beside it, in brackets or after a slash
_PAIRS = tuple(re.compile(p) for p in (
    rf"(?P<han>{_HAN_FORM})\s*[（(]\s*(?P<lat>{_LATIN_FORM})\s*[)）]",
    rf"(?P<lat>{_LATIN_FORM})\s*[（(]\s*(?P<han>{_HAN_FORM})\s*[)）]",
    rf"(?P<han>{_HAN_FORM})\s*/\s*(?P<lat>{_LATIN_FORM})",
    rf"(?P<lat>{_LATIN_FORM})\s*/\s*(?P<han>{_HAN_FORM})",
))
_LATIN_NAME = re.compile(r"\b(?:[A-Z][A-Za-z0-9]+|[a-z]+[A-Z][A-Za-z0-9]*)\b")


def paired_forms(query: str, terms: Sequence[str], texts_naming: Callable[[list[str]], list[str]],
                 doc_freqs: Callable[[Sequence[str]], dict[str, int]]) -> tuple[list[str], list[str]]:
    """Full-text ``(terms, phrases)`` of the other-script forms the store's notes write beside the
    query's words: "友盟在项目里做什么" and a note "接了友盟（Umeng）统计" → ``umeng``, which finds
    "The Umeng SDK collects crash reports". ``terms``: the query's index terms; ``texts_naming``:
    the texts of a few notes that contain any of the given terms; ``doc_freqs``: how many notes
    hold each term. Words the bundled glossary translates are left to it, and so are words in more
    than :data:`PAIR_MAX_NOTES` notes: a name written beside its other form is a rare word, and
    reading notes for a common one costs a full-text ranking of thousands of rows."""
    han = [t for t in terms if pinyin.is_han(t) and 2 <= len(t) <= 6 and not text.translations([t])]
    tokens = {w: text.index_tokens(w) for w in dict.fromkeys(_LATIN_NAME.findall(query))}
    latin = [w for w, t in tokens.items() if t in terms and not text.translations([t])]
    if not han and not latin:
        return [], []
    found: list[str] = []
    wanted = [*han, *(tokens[w] for w in latin)]
    df = doc_freqs(wanted)
    wanted = [w for w in wanted if 0 < df.get(w, 0) <= PAIR_MAX_NOTES]
    for content in texts_naming(wanted) if wanted else ():
        for pattern in _PAIRS:
            for m in pattern.finditer(content):
                form_han, form_lat = m["han"], m["lat"]
                if any(form_han.endswith(w) or form_han.startswith(w) for w in han):
                    found.append(text.index_tokens(form_lat))
                lat_words = form_lat.lower().split()
                if any(w.lower() in (lat_words[0], lat_words[-1]) for w in latin):
                    found.extend(_han_words_of(form_han))
    found = [f for f in dict.fromkeys(found) if f and f not in terms]
    return [f for f in found if " " not in f], [f for f in found if " " in f]


def _han_words_of(form: str) -> list[str]:
    """The index words of a Han form found before a bracket: the form's last word (what jieba
    makes of "我们用友盟" ends in 友盟), or the whole form when jieba keeps it one word."""
    words = text.index_tokens(form).split()
    return [form] if len(words) <= 1 else [words[-1]]


def cross_script(query: str, doc_freqs: Callable[[Sequence[str]], dict[str, int]]) -> tuple[list[str], list[str]]:
    """Full-text ``(terms, phrases)`` that spell the names in ``query`` in the other script,
    kept only when the store's index holds them (``doc_freqs``: term → rows that contain it;
    a phrase needs each of its words)."""
    terms: list[str] = []
    phrases: list[str] = []
    for word, person in _han_names(query):
        _romanized(word, person, terms, phrases)
    for parts in _pinyin_names(query):
        _spelt_in_han(parts, terms, phrases)
    phrases = list(dict.fromkeys(phrases))
    # the phrases' words first (few), then the spellings, longest names first, up to the cap
    lookups = list(dict.fromkeys([*(w for p in phrases for w in p.split()), *terms]))[:MAX_LOOKUPS]
    if not lookups:
        return [], []
    df = doc_freqs(lookups)
    return list(dict.fromkeys(t for t in terms if df.get(t))), [p for p in phrases if all(df.get(w) for w in p.split())]


#: jieba's tags of function words: a surname character tagged so is the word (和 "and", 于 "at")
FUNCTION_TAGS = frozenset({"c", "p", "u", "uj", "ul", "uz", "ug", "uv", "r", "d", "f", "m", "q", "y", "e", "o"})


def _han_names(query: str) -> list[tuple[str, bool]]:
    """The Chinese names in ``query``: ``(name, is_a_person)``. A person is a word jieba tags as
    one, or a common surname with what follows it: jieba cuts many names in two (王 | 志远) and
    takes others for words (李想 "ideal", 高兴 "glad"); only spellings the store holds survive."""
    words = text.han_words(query)
    out: list[tuple[str, bool]] = []
    i = 0
    while i < len(words):
        word, tag = words[i]
        after = words[i + 1] if i + 1 < len(words) else None
        if len(word) == 1 and word in pinyin.SURNAMES and tag not in FUNCTION_TAGS and after is not None \
                and 1 <= len(after[0]) <= 2 and pinyin.is_han(after[0]) and not _full_name(*after):
            out.append((word + after[0], True))  # 王 | 志远, 孙 | 浩然
            i += 2
            continue
        if tag in NAME_TAGS and 2 <= len(word) <= 4:
            out.append((word, tag in PERSON_TAGS))
            if tag in PERSON_TAGS and len(word) == 3 and word[0] in pinyin.SURNAMES:
                out.append((word[:2], True))  # 张伟收: jieba took the next character into the name
        elif 2 <= len(word) <= 3 and word[0] in pinyin.SURNAMES and pinyin.is_han(word) and not text.translations([word]):
            out.append((word, True))  # 李想, 高兴: a word that may be a name
        i += 1
    return out


def _full_name(word: str, tag: str) -> bool:
    """Whether jieba gave a whole name as one word (和 | 刘洋: 和 is "and", not a surname)."""
    return len(word) >= 2 and word[0] in pinyin.SURNAMES and tag in PERSON_TAGS


def _romanized(word: str, person: bool, terms: list[str], phrases: list[str]) -> None:
    """The pinyin forms of a Chinese name: a person's name surname first and last, the given
    name joined and apart (陈雨婷: chen yuting, yuting chen, chen yu ting, yu ting chen,
    chenyuting); a place's apart and joined (hang zhou, hangzhou)."""
    for reading in pinyin.romanizations(word):
        sylls = reading.split()
        terms.append(text.index_tokens("".join(sylls)))  # stemmed as the index stems it (yuting → yute)
        phrases.append(text.index_tokens(reading))
        if person and 2 <= len(sylls) <= 3:
            surname, given = sylls[0], sylls[1:]
            forms = [[surname, "".join(given)], ["".join(given), surname], [*given, surname]]
            phrases.extend(text.index_tokens(" ".join(f)) for f in forms)


def _pinyin_names(query: str) -> list[list[list[str]]]:
    """Windows of one to three capitalised words of ``query`` that read as pinyin, each word as its
    syllables ("What does Li Na expect" → [["li"], ["na"]]; "Wang Zhi-yuan" → [["wang"], ["zhi"],
    ["yuan"]])."""
    out: list[list[list[str]]] = []
    for run in _CAPITALISED_RUN.findall(query):
        words = [pinyin.syllables(w.lower()) for w in re.split(r"[ \-']", run) if w]
        for size in (3, 2, 1):
            for i in range(len(words) - size + 1):
                window = words[i : i + size]
                if all(w is not None for w in window):
                    out.append(window)  # type: ignore[arg-type]
    return out


def _spelt_in_han(parts: list[list[str]], terms: list[str], phrases: list[str]) -> None:
    """Han spellings of a pinyin name, given as each word's syllables: one word is a place or a
    name of its own (Hangzhou, two syllables or more); two or three are a person, the surname
    first or last."""
    if any(len(s) < 2 for p in parts for s in p):
        return  # a bare vowel (Maria: ma ri a, Dana: dan a) is an English name far more often than pinyin
    if len(parts) == 1:
        if len(parts[0]) >= 2:
            terms.extend(pinyin.han_spellings(parts[0]))
        return
    for surname, given in ((parts[0], parts[1:]), (parts[-1], parts[:-1])):
        given_sylls = [s for g in given for s in g]
        if len(surname) != 1 or not 1 <= len(given_sylls) <= 2:
            continue
        family = pinyin.surnames_read(surname[0])
        names = pinyin.han_spellings(given_sylls, limit=150, given_name=True)
        if not family or not names:
            continue
        for f in family:
            for g in names:
                # as the index may have it: one word (李娜, 陈雨婷), the words jieba cuts it into
                # alone (王 | 志远), or surname and given name apart (赵 | 婷婷, as a sentence cut it)
                for tokens in {text.index_tokens(f + g), f"{f} {text.index_tokens(g)}"}:
                    (phrases if " " in tokens else terms).append(tokens)
