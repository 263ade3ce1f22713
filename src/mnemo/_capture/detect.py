"""The rule detector: which sentences of a message are worth remembering, and as what type.

No network, no download, well under a millisecond per message. The rules are data, one table per
language (``data/capture_rules_zh.toml``, ``data/capture_rules_en.toml``), loaded and compiled
once, on first use. A sentence with Han characters is read with the Chinese table, any other
with the English one.

How a message is read:

1. Code blocks and pasted output (log lines, tracebacks, shell and REPL lines) are blanked out:
   they are not statements. The text is split into sentences
   on Chinese and English end punctuation and line breaks; abbreviations (``e.g.``), decimals
   and versions (``v1.2``) do not end a sentence.
2. The assistant's words count only in a message about this user or project, or that
   acknowledges or commits to something (``assistant_grounding``). Chit-chat (好的 / thanks …) is
   dropped; an explicit instruction (记住 / from now on …) is noted and its words removed;
   otherwise a sentence whose opening matches a negative pattern (a question, a hypothetical, a
   transient step) is dropped. A one-off request (``requests``: 帮我… / show me …) drops only
   its own clause.
3. The sentence is split into clauses (``，`` / ``, we …``); each clause gets the type of its
   strongest trigger (near-ties go by the guide's order of types, ``PRECEDENCE``). Consecutive
   clauses of one type stay together, untyped clauses join their neighbour, and a change of
   type starts a new memory: 项目使用 FastAPI，架构选择 DeepSeek → a ``project_context`` and a
   ``decision``. A negative later clause drops only itself.
4. ``fact`` is the leftover type (``docs/capture.md``): a fact whose subject is a server, a
   schedule or a limit is retyped by the table's ``retype`` entries.
5. A clause or sentence that reacts to the assistant's work (``reaction``: 你上次… / You keep…)
   and the instruction with it (in the same sentence or the next) become one ``feedback`` memory.
6. A second stage (``detect_model``), trained on the labelled sets, reads each detection in its
   context: it drops the ones that only look like memories (a trigger word in a sentence that
   states nothing durable) and may change the type. It also reads the sentences no trigger
   fired in (not the questions, negatives and chit-chat) and keeps the few it judges to be
   memories stated without a trigger word. It never drops an explicit instruction, and is
   skipped when its data file is missing.

Every detection is a verbatim span of the input, so callers can show where it came from.
"""

from __future__ import annotations

import re
import sys
import threading
from dataclasses import dataclass, replace
from typing import Any

from .._base.text import DATA, has_han
from . import detect_model as _detect_model

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

#: importance of an explicit "remember this" and of an ordinary detection
EXPLICIT_IMPORTANCE = 0.9
DEFAULT_IMPORTANCE = 0.5
#: the assistant's own words are weaker evidence of what the user wants than the user's
ASSISTANT_FACTOR = 0.75
#: a sentence longer than this is a paragraph, not one statement
MAX_SENTENCE_CHARS = 400

_CODE_BLOCK = re.compile(r"```.*?(?:```|\Z)", re.S)
#: a line of pasted program output: a timestamped or levelled log line, a traceback or stack
#: frame, an exception line, a shell or REPL prompt, pip's progress, a row of a table that a
#: command printed (four or more columns apart by runs of spaces). Language-neutral, so it lives here.
_OUTPUT_LINE = re.compile(
    r"^[ \t]*(?:\[?\d{4}[-/]\d{2}[-/]\d{2}[T ]\d{2}:\d{2}"
    r"|\[?(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|FATAL|CRITICAL|PANIC)\b[\]:]?\s"
    r"|Traceback \(most recent call last\)|File \"[^\"]+\", line \d+|at [\w$.<>]+\(.*\)\s*$"
    r"|(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Warning|Interrupt)\b(?:\(.*\))?:"
    r"|[$#%] \S|>>> |\.\.\. |In \[\d+\]:|Out\[\d+\]:"
    r"|npm (?:ERR|WARN)!|error(?:\[E\d+\])?: |warning: |fatal: |panic: |Caused by: "
    r"|(?:Collecting|Downloading|Installing collected packages|Successfully installed|Requirement already satisfied"
    r"|Using cached|Building wheels?) |commit [0-9a-f]{7,40}\b|(?:Author|Date|Merge):[ \t]"
    r"|\S+(?: \S+)*(?: {2,}\S+(?: \S+)*){3,}[ \t]*$)[^\n]*",
    re.M,
)
#: an indented line right after a line of output (a traceback's source line, a stack frame)
_OUTPUT_CONT = re.compile(r"\n[ \t]+\S[^\n]*")
# English ";" joins related clauses (a clause separator, not a sentence end); Chinese "；" ends one
_BOUNDARY = re.compile(r"[。！？；…]+[”’」』\"')）]*|[!?！？]+|\.+(?=\s|$)|\n+")
_ABBREV = {"e.g", "i.e", "etc", "vs", "mr", "mrs", "ms", "dr", "prof", "no", "fig", "approx", "cf", "st", "jr", "sr", "inc", "ltd", "co", "al"}
_WORD_BEFORE = re.compile(r"([A-Za-z][A-Za-z.]*)$")
_LIST_MARK = re.compile(r"^\s*(?:[-*•>]+|#+|\d+[.)、])\s+")
_PUNCT = re.compile(r"[\s\W_]+", re.U)
_TRIM = " \t\r\n，,。.！!？?；;：:、…~～-—\"'“”‘’()（）[]【】"


@dataclass(frozen=True)
class Detection:
    """One memory found in a message: its text (a verbatim span ``text[start:end]``), type,
    confidence, importance, whether it was an explicit instruction, and the rule that fired."""

    content: str
    type: str
    confidence: float
    importance: float
    explicit: bool
    rule: str
    lang: str
    start: int
    end: int

    def to_dict(self) -> dict[str, Any]:
        return {"content": self.content, "type": self.type, "confidence": self.confidence, "importance": self.importance,
                "explicit": self.explicit, "rule": self.rule, "lang": self.lang, "span": [self.start, self.end]}


@dataclass
class _Rule:
    type: str
    priority: int
    confidence: float
    regex: re.Pattern[str]
    strip_lead: re.Pattern[str] | None
    sentence: bool
    whole: bool


@dataclass
class _Table:
    lang: str
    chitchat: frozenset[str]
    fillers: re.Pattern[str]
    negatives: list[re.Pattern[str]]
    whole_negatives: list[re.Pattern[str]]
    head_negatives: list[re.Pattern[str]]
    requests: list[re.Pattern[str]]
    explicit: list[tuple[re.Pattern[str], str]]
    rules: list[_Rule]
    clause_sep: re.Pattern[str]
    min_chars: int
    tail: re.Pattern[str]
    reaction: re.Pattern[str]
    instruction: re.Pattern[str]
    future: re.Pattern[str]
    grounding: re.Pattern[str]
    by_confidence: list[_Rule]
    retype: list[tuple[str, str, re.Pattern[str]]]  # (from type, to type, subject pattern)


#: a pattern that never matches (a table without that entry)
_NEVER = r"(?!x)x"
_TABLES: dict[str, _Table] = {}
_LOAD_LOCK = threading.Lock()


def _compile(data: dict[str, Any], source: str) -> _Table:
    flags = re.I if data.get("lang") == "en" else 0

    def rx(pattern: str) -> re.Pattern[str]:
        try:
            return re.compile(pattern, flags)
        except re.error as exc:
            raise ValueError(f"{source}: bad pattern {pattern!r}: {exc}") from None

    def any_of(patterns: list[str]) -> re.Pattern[str]:
        """One regex matching any of ``patterns`` (one that never matches for none)."""
        return rx("|".join(f"(?:{p})" for p in patterns) or _NEVER)

    negatives = [rx(p) for p in data.get("negatives", [])]

    rules = [
        _Rule(type=r["type"], priority=int(r.get("priority", 9)), confidence=float(r["confidence"]),
              regex=any_of(r["patterns"]),
              strip_lead=rx(r["strip_lead"]) if r.get("strip_lead") else None, sentence=bool(r.get("sentence")),
              whole=bool(r.get("whole")))
        for r in data.get("rule", [])
    ]
    return _Table(
        lang=data["lang"],
        chitchat=frozenset(_norm(c) for c in data.get("chitchat", [])),
        fillers=rx(data.get("fillers") or _NEVER),
        negatives=negatives,
        # anchored ones read the whole sentence (their lookaheads may reach past the first clause)
        whole_negatives=[n for n in negatives if n.pattern.startswith("^") or n.pattern.endswith("$")],
        head_negatives=[n for n in negatives if not (n.pattern.startswith("^") or n.pattern.endswith("$"))],
        requests=[rx(p) for p in data.get("requests", [])],
        explicit=[(rx(e["pattern"]), e.get("type", "note")) for e in data.get("explicit", [])],
        rules=sorted(rules, key=lambda r: r.priority),
        by_confidence=sorted(rules, key=lambda r: (-r.confidence, r.priority)),
        clause_sep=rx(data.get("clause_separators") or _NEVER),
        min_chars=int(data.get("min_chars", 4)),
        tail=rx(data.get("tail") or _NEVER),
        reaction=any_of(data.get("reaction", [])),
        instruction=any_of(data.get("instruction", [])),
        future=rx(data.get("future") or _NEVER),
        grounding=any_of(data.get("assistant_grounding", [])),
        retype=[(r["from"], r["type"], any_of(r["patterns"])) for r in data.get("retype", [])],
    )


def _table(lang: str) -> _Table:
    table = _TABLES.get(lang)
    if table is None:
        with _LOAD_LOCK:
            table = _TABLES.get(lang)
            if table is None:
                path = DATA / f"capture_rules_{lang}.toml"
                table = _compile(tomllib.loads(path.read_text("utf-8")), str(path))
                _TABLES[lang] = table
    return table


def _table_for(text: str) -> _Table:
    """The Chinese table for text with Han characters, else the English one."""
    return _table("zh" if has_han(text) else "en")


def _norm(text: str) -> str:
    return _PUNCT.sub("", text).lower()


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans ``(start, end)`` of ``text`` (Chinese and English punctuation, line breaks),
    trimmed of surrounding space; ``e.g.``, ``3.5`` and ``v1.2`` do not end a sentence."""
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _BOUNDARY.finditer(text):
        if m.group().startswith(".") and len(m.group()) == 1:
            word = _WORD_BEFORE.search(text, 0, m.start())
            if word and (word.group(1).lower().rstrip(".") in _ABBREV or len(word.group(1)) == 1 and word.group(1).isupper()):
                continue
        spans.append((start, m.end()))
        start = m.end()
    spans.append((start, len(text)))
    out = []
    for s, e in spans:
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if s < e:
            out.append((s, e))
    return out


def _trim(text: str, s: int, e: int) -> tuple[int, int]:
    while s < e and text[s] in _TRIM:
        s += 1
    while e > s and text[e - 1] in _TRIM:
        if text[e - 1] in _CLOSERS and _CLOSERS[text[e - 1]] in text[s : e - 1]:
            break  # the end of "[邮箱]" (a redaction placeholder) or "(v2)": part of the statement
        e -= 1
    return s, e


_CLOSERS = {"]": "[", ")": "(", "）": "（", "】": "【", "」": "「"}


#: docs/capture.md's order of the types: when a statement fits several, the first wins
PRECEDENCE = ("feedback", "decision", "goal", "constraint", "user_preference", "workflow", "entity", "project_context", "fact")
#: triggers this close to the strongest one count as fitting too; the guide's order decides
PRECEDENCE_MARGIN = 0.05


def _best(table: _Table, text: str) -> _Rule | None:
    """The rule that types ``text``: among the triggers that fire, those within
    ``PRECEDENCE_MARGIN`` of the strongest, the type first in ``PRECEDENCE``."""
    close: list[_Rule] = []
    for rule in table.by_confidence:  # strongest first: stop once the rest cannot come close
        if close and rule.confidence < close[0].confidence - PRECEDENCE_MARGIN:
            break
        if rule.regex.search(text):
            close.append(rule)
    if not close:
        return None
    return min(close, key=lambda r: (PRECEDENCE.index(r.type) if r.type in PRECEDENCE else len(PRECEDENCE), -r.confidence))


def _negative(table: _Table, text: str) -> bool:
    """Whether a clause is not a statement (a negative pattern, or a one-off request)."""
    return any(n.search(text) for n in table.negatives) or any(r.search(text) for r in table.requests)


def _negative_sentence(table: _Table, sentence: str) -> bool:
    """Whether a whole sentence is not a statement: its opening clause is negative (a question
    word, 如果…: patterns anchored at the start, which may look ahead), or a pattern anchored at its
    end fits (…吗, a ``?``), or it is a one-off request and nothing more. A one-off request or a
    negative later clause (…，所以 Compose 暂时用不了，…) drops only that clause, in ``_groups``."""
    first = table.clause_sep.search(sentence)
    head = sentence[:first.start()] if first else sentence
    if first is None and any(r.search(sentence) for r in table.requests):
        return True  # a request with nothing else in the sentence
    return any(n.search(sentence) for n in table.whole_negatives) or any(n.search(head) for n in table.head_negatives)


def detect(text: str, *, role: str = "user", second_stage: bool = True) -> list[Detection]:
    """The memories worth keeping in one message (``role`` ``user`` or ``assistant``: the
    assistant's own words get a lower confidence). ``second_stage`` runs what the rules found
    through the trained model of ``detect_model`` (drop false alarms, better types)."""
    if not text or not text.strip():
        return []
    text = _blank_code(text)
    if role == "assistant" and not any(_table(lang).grounding.search(text) for lang in ("zh", "en")):
        return []  # the assistant explaining something in general (how TCP works), not about this user
    factor = ASSISTANT_FACTOR if role == "assistant" else 1.0
    out: list[Detection] = []
    reaction: list[Detection] | None = None  # the previous sentence reacted to the assistant's work
    for s, e in split_sentences(text):
        mark = _LIST_MARK.match(text[s:e])
        if mark:
            s += mark.end()
        if e - s > MAX_SENTENCE_CHARS or e - s < 2:
            reaction = None
            continue
        found = _sentence(text, s, e, factor)
        if reaction is not None:
            found = _after_reaction(text, s, e, found, reaction, out, factor)
        sentence = text[s:e]
        table = _table_for(sentence)
        reacts = not sentence.rstrip().endswith(("?", "？")) and (
            any(d.type == "feedback" for d in found) or bool(table.reaction.search(sentence)))
        if reacts and not found and table.future.search(sentence):
            # "The way you split that PR was exactly right — do it like that for future refactors"
            found = [_sentence_feedback(table, text, s, e, factor, "reaction+instruction")]
        if reacts and not any(d.type == "feedback" for d in found):
            found = [replace(d, type="feedback", rule=f"{d.lang}:reaction") for d in found]
        out.extend(found)
        # a reaction that already says what to do next time (…，以后注意) needs nothing after it
        complete = table.future.search(sentence) or any(d.rule.endswith("+instruction") for d in found)
        reaction = found if reacts and not complete else None
    seen: set[str] = set()
    out = [d for d in out if not (d.content in seen or seen.add(d.content))]  # type: ignore[func-returns-value]
    stage = _detect_model.model() if second_stage else None
    return apply_model(stage, text, role, out) if stage is not None else out


#: characters before a span searched for the reaction that would make it feedback ("You keep…. Stop that")
REACTION_REACH = 160


def apply_model(model: _detect_model.Model, text: str, role: str, found: list[Detection]) -> list[Detection]:
    """The second stage on what the rules ``found`` in ``text`` (code and output already
    blanked): drop and retype those, and add the sentences the rules found nothing in that the
    model judges worth keeping (typed by the model, with its probability as the confidence)."""
    def reacts(s: int, e: int) -> bool:  # the span, or what just precedes it, reacts to the assistant's work
        return bool(_table_for(text[s:e]).reaction.search(text[max(0, s - REACTION_REACH):e]))

    kept = model.apply(text, role, found, reacts)
    factor = ASSISTANT_FACTOR if role == "assistant" else 1.0
    for s, e, mtype, p in model.judge_sentences(text, role, len(found), untriggered(text, found)):
        lang = _table_for(text[s:e]).lang
        kept.append(Detection(content=text[s:e], type=mtype, confidence=round(p * factor, 3), importance=DEFAULT_IMPORTANCE,
                              explicit=False, rule=f"{lang}:model", lang=lang, start=s, end=e))
    return sorted(kept, key=lambda d: d.start)


def untriggered(text: str, found: list[Detection]) -> list[tuple[int, int]]:
    """The sentences of ``text`` (blanked) that no detection touches and that the rules did not
    rule out (a question, chit-chat, a negative or a bare request): the second stage's
    candidates for a memory stated without any trigger word."""
    out = []
    for s, e in split_sentences(text):
        mark = _LIST_MARK.match(text[s:e])
        if mark:
            s += mark.end()
        if e - s > MAX_SENTENCE_CHARS or any(d.start < e and d.end > s for d in found):
            continue
        sentence = text[s:e]
        table = _table_for(sentence)
        if sentence.rstrip().endswith(("?", "？")) or _norm(sentence) in table.chitchat:
            continue
        s, e = _strip_fillers(table, text, s, e)
        if e - s >= max(2, table.min_chars) and not _negative_sentence(table, text[s:e]):
            out.append((s, e))
    return out


#: memory types an instruction can have; after a reaction to the assistant's work it is feedback
_INSTRUCTION_TYPES = ("user_preference", "constraint", "workflow", "feedback")


def _after_reaction(text: str, s: int, e: int, found: list[Detection], reaction: list[Detection],
                    out: list[Detection], factor: float) -> list[Detection]:
    """The sentence after a reaction to the assistant's work (你上次… / You keep…): an
    instruction in it is the feedback that reaction gives, saved as one memory with it, as
    ``docs/capture.md`` defines feedback. An imperative with no trigger of its own counts too
    (…. If the requirements are vague, ask me first)."""
    table = _table_for(text[s:e])
    if not found:
        whole = _sentence_feedback(table, text, s, e, factor, "reaction")
        if not table.instruction.search(whole.content):
            return found
        found = [whole]
    first = found[0]
    if first.type not in _INSTRUCTION_TYPES:
        return found
    if reaction and reaction[-1] is out[-1]:  # the reaction's own memory and the instruction become one
        return [_merge_feedback(text, out.pop(), first)] + found[1:]
    return [replace(first, type="feedback", rule=f"{first.lang}:reaction")] + found[1:]


def _sentence_feedback(table: _Table, text: str, s: int, e: int, factor: float, rule: str) -> Detection:
    """The sentence ``text[s:e]`` (without its fillers) as one feedback memory."""
    fs, fe = _strip_fillers(table, text, s, e)
    return Detection(content=text[fs:fe], type="feedback", confidence=round(0.75 * factor, 3), importance=DEFAULT_IMPORTANCE,
                     explicit=False, rule=f"{table.lang}:{rule}", lang=table.lang, start=fs, end=fe)


def _merge_feedback(text: str, reaction: Detection, instruction: Detection) -> Detection:
    """A reaction to the assistant's work and the instruction after it, as one feedback memory."""
    return replace(instruction, content=text[reaction.start:instruction.end], start=reaction.start, type="feedback",
                   rule=f"{instruction.lang}:reaction+instruction", confidence=max(reaction.confidence, instruction.confidence),
                   explicit=reaction.explicit or instruction.explicit, importance=max(reaction.importance, instruction.importance))


def _blank(piece: str) -> str:
    return re.sub(r"[^\n]", " ", piece)


def _blank_code(text: str) -> str:
    """``text`` with code blocks and pasted output replaced by spaces (offsets are kept, so the
    spans of what is detected still point into the original)."""
    if "```" in text:
        text = _CODE_BLOCK.sub(lambda m: _blank(m.group()), text)
    out = []
    last = 0
    for m in _OUTPUT_LINE.finditer(text):
        end = m.end()
        while (cont := _OUTPUT_CONT.match(text, end)) is not None:  # indented lines that follow
            end = cont.end()
        out += [text[last:m.start()], _blank(text[m.start():end])]
        last = end
    return "".join(out) + text[last:] if out else text


def _sentence(text: str, s: int, e: int, factor: float) -> list[Detection]:
    sentence = text[s:e]
    table = _table_for(sentence)
    if _norm(sentence) in table.chitchat:
        return []
    s, e = _strip_fillers(table, text, s, e)
    explicit_type: str | None = None
    for pattern, etype in table.explicit:
        m = pattern.search(text[s:e])  # on the slice: ``^`` anchors at the sentence start
        if m is None:
            continue
        # "记住：以后都…" : the standing-instruction type is more telling than a plain "remember"
        explicit_type = etype if explicit_type in (None, "fact") else explicit_type
        if m.start() == 0:
            s += m.end()
        elif m.end() == e - s:
            e = s + m.start()
        s, e = _trim(text, s, e)
    if s >= e:
        return []
    if (explicit_type is None and _negative_sentence(table, text[s:e])) or sentence.rstrip().endswith(("?", "？")):
        return []  # a question stays a question even with "remember" in it
    groups = _groups(table, text, s, e, explicit=explicit_type is not None)
    if not groups and explicit_type is not None:
        groups = [(s, e, None)]
    out = []
    for gs, ge, rule in groups:
        if rule is not None and rule.strip_lead is not None:
            lead = rule.strip_lead.match(text[gs:ge])
            if lead and gs + lead.end() < ge:
                gs += lead.end()
        gs, ge = _strip_fillers(table, text, gs, ge)
        gs, ge = _trim(text, gs, ge)
        content = text[gs:ge]
        if len(content) < table.min_chars or _norm(content) in table.chitchat:
            continue
        conf = rule.confidence if rule is not None else 0.7
        if explicit_type is not None:
            conf = max(conf, 0.85)
        mtype = _retype(table, rule.type, content) if rule is not None else explicit_type or "note"
        out.append(Detection(
            content=content, type=mtype,
            confidence=round(conf * factor, 3), importance=EXPLICIT_IMPORTANCE if explicit_type else DEFAULT_IMPORTANCE,
            explicit=explicit_type is not None, rule=f"{table.lang}:{rule.type if rule else 'explicit'}", lang=table.lang,
            start=gs, end=ge,
        ))
    if len(out) >= 2 and out[1].type in _INSTRUCTION_TYPES and table.reaction.search(out[0].content):
        # 你刚才又把 key 硬编码了，以后密钥一律从环境变量读: the reaction and its instruction are one feedback
        out[:2] = [_merge_feedback(text, out[0], out[1])]
    return out


def _retype(table: _Table, mtype: str, content: str) -> str:
    """``mtype``, or the more telling type the table's ``retype`` entries give ``content``:
    ``fact`` is the leftover type, so a fact about servers is ``project_context``."""
    for source, target, pattern in table.retype:
        if source == mtype and pattern.search(content):
            return target
    return mtype


def _strip_fillers(table: _Table, text: str, s: int, e: int) -> tuple[int, int]:
    for _ in range(3):  # 好的，另外，… : a few fillers in a row
        m = table.fillers.match(text[s:e])
        if m is None or s + m.end() >= e:
            break
        s += m.end()
    return _trim(text, s, e)


def _groups(table: _Table, text: str, s: int, e: int, *, explicit: bool) -> list[tuple[int, int, _Rule | None]]:
    """Typed spans of one sentence: clauses of one type together, a change of type splits."""
    sentence = text[s:e]
    whole = _best(table, sentence)
    if whole is None:
        return []
    seps = [m.end() for m in table.clause_sep.finditer(sentence)]
    if not seps or whole.whole:  # ``whole``: a marker that types the sentence (说了多少遍了，…)
        return [(s, e, whole)]
    # a sequence (先…，再…, first…, then…) whose trigger spans clauses keeps the sentence whole
    for rule in table.rules:
        if rule.sentence and (rule is whole or rule.confidence > whole.confidence):
            m = rule.regex.search(sentence)
            if m and any(m.start() < sep < m.end() for sep in seps):
                return [(s, e, rule)]
    bounds = [s] + [s + sep for sep in seps] + [e]
    clauses: list[tuple[int, int, _Rule | None, bool]] = []  # start, end, rule, dropped
    for cs, ce in zip(bounds, bounds[1:]):
        piece = text[cs:ce]
        dropped = not explicit and (_negative(table, piece.strip(_TRIM)) or _norm(piece) in table.chitchat)
        clauses.append((cs, ce, None if dropped else _best(table, piece), dropped))
    groups: list[list[Any]] = []  # [start, end, rule]
    pending: int | None = None  # start of untyped clauses waiting for a typed neighbour
    for cs, ce, rule, dropped in clauses:
        if dropped:
            pending = None
            if groups:
                groups.append([None, None, None])  # a barrier: nothing joins across a dropped clause
            continue
        last = groups[-1] if groups and groups[-1][2] is not None else None
        if rule is None:
            if last is not None:
                last[1] = ce
            elif pending is None:
                pending = cs
            continue
        if last is not None and (last[2].type == rule.type or table.tail.match(piece.strip(_TRIM))):
            last[1] = ce  # same type, or a contrast tail (…，不再用 X / …, not X) that belongs to it
        else:
            groups.append([pending if pending is not None else cs, ce, rule])
        pending = None
    return [(g[0], g[1], g[2]) for g in groups if g[2] is not None]
