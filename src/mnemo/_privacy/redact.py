"""Redaction of secrets and personal data before text is stored, embedded, indexed or sent to an LLM.

Each detector finds spans in the original text; a span is replaced by a placeholder that keeps
the sentence readable (``[手机号]`` in Chinese text, ``[PHONE]`` otherwise), and ``<private>``
spans are cut out entirely. Numbers are validated, not just shape-matched: resident IDs by their
ISO 7064 checksum and birth date, cards by issuer prefix and Luhn plus a card word or card-style
grouping, IBANs by mod 97, so order numbers, timestamps and version strings survive; an 11-digit
number next to a unit or a code label (``耗时 15000000000 纳秒``) is not a phone. Assignments
(``password=…``, ``"api_key": "…"``, ``密码是 …``) mask only the value, and only when it looks like a value rather than code (``token: str`` survives).

It runs on every write, so it is stdlib only, the regexes are compiled once, and most detectors
skip a text after a substring test: about 30 µs for 200 characters with nothing to mask.

``bench/redteam.py`` scores the detectors on the red-team sets in ``tests/data/redteam*.jsonl``.

>>> Redactor().redact("call me at 138 0013 8000").text
'call me at [PHONE]'
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from typing import Callable, Iterable, Iterator, Mapping

from .._base.text import has_han

DETECTORS: tuple[str, ...] = (
    "private", "pem", "jwt", "api_key", "aws_key", "github_token", "slack_token", "google_key",
    "webhook", "conn_string", "assignment", "otp", "email", "cn_id", "iban", "bank_card", "cn_mobile",
    "cn_landline", "ip",
)  # also the priority order: on overlap the earlier (more specific) detector wins
DEFAULT_OFF: frozenset[str] = frozenset({"ip"})  # IPs are rarely personal in notes, often useful

_PLACEHOLDERS: dict[str, tuple[str, str]] = {  # kind -> (English, Chinese); every secret kind is [SECRET]
    "cn_mobile": ("[PHONE]", "[手机号]"), "cn_landline": ("[PHONE]", "[电话]"),
    "cn_id": ("[ID_NUMBER]", "[身份证号]"), "bank_card": ("[CARD_NUMBER]", "[银行卡号]"),
    "iban": ("[IBAN]", "[IBAN]"), "email": ("[EMAIL]", "[邮箱]"), "ip": ("[IP]", "[IP]"),
    "private": ("", ""),
}

_A = re.ASCII  # \d and \w must not match Han or full-width digits, or "电话13800138000" never matches
# Full-width digits/letters (typed with a Chinese IME) are mapped 1:1 to ASCII before scanning;
# the mapping keeps every offset, so spans still point into the original text.
_FULLWIDTH = re.compile(r"[\uff10-\uff19\uff21-\uff3a\uff41-\uff5a]")
_FW_TABLE = {c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)} | {0x3000: 0x20}

_SEPARATORS = re.compile(r"[ -]")
_Span = tuple[int, int]
_Scanner = Callable[[str], Iterator[_Span]]

# --- secrets -------------------------------------------------------------------------------------
_PRIVATE = re.compile(r"<private\b[^>]*>(?:.*?</private\s*>|.*)", re.I | re.S)  # unclosed: to the end
_PEM = re.compile(r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----(?:.*?-----END \1-----|.*)", re.S)
_JWT = re.compile(r"(?<![\w-])eyJ[\w-]{8,}\.eyJ[\w-]{8,}\.[\w-]*", _A)
_API_KEY = re.compile(
    r"(?<![\w-])(?:sk-[\w-]{20,}|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}|hf_[A-Za-z0-9]{30,}"
    r"|gsk_[A-Za-z0-9]{40,}|xai-[A-Za-z0-9]{40,}|npm_[A-Za-z0-9]{36}|glpat-[\w-]{20,}|dckr_pat_[\w-]{20,})(?![\w-])", _A)
# Keys whose prefix is not "name_" or "name-": Alibaba Cloud AccessKey IDs (LTAI…) and Zhipu keys
# (32 hex, a dot, 16 letters/digits); both must look generated (_random_enough), not be words.
_ALIYUN_ID = re.compile(r"(?<![A-Za-z0-9])LTAI[A-Za-z0-9]{12,30}(?![A-Za-z0-9])")
_ZHIPU = re.compile(r"(?<![\w.-])[0-9a-f]{32}\.[A-Za-z0-9]{16}(?![\w-])", _A)
# Bot webhooks carry their credential in the URL: Feishu/Lark hook ids, WeCom and DingTalk keys.
_WEBHOOK = re.compile(
    r"open\.(?:feishu\.cn|larksuite\.com|larkoffice\.com)/open-apis/bot/v2/hook/([A-Za-z0-9-]{16,})"
    r"|qyapi\.weixin\.qq\.com/cgi-bin/webhook/send\?(?:[^\s&#]*&)*key=([A-Za-z0-9-]{16,})"
    r"|oapi\.dingtalk\.com/robot/send\?(?:[^\s&#]*&)*access_token=([A-Za-z0-9]{16,})", _A)
_AWS = re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])")
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_GITHUB = re.compile(r"(?<![\w-])(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_\w{30,255})(?![\w-])", _A)
_SLACK = re.compile(
    r"(?<![\w-])xox[abposre]-[A-Za-z0-9-]{10,}|(?<![\w-])xapp-\d-[A-Za-z0-9-]{10,}"
    r"|hooks\.slack\.com/services/(T\w+/B\w+/\w+)", _A)
_GOOGLE = re.compile(r"(?<![\w-])(?:AIza[\w-]{30,}|GOCSPX-[\w-]{28}|ya29\.[\w-]{20,})(?![\w-])", _A)
# scheme://user:password@host — only the password group is masked; greedy so "p@ss" stays whole
_CONN = re.compile(r"(?<![\w+.-])[a-z][a-z0-9+.-]*://[^\s:/?#@]*:([^\s/]+)@(?=[^\s@/])", re.I | _A)

# Cloud consoles name their secrets in camel case (SecretKey, AccessKeySecret, AppSecret,
# AccountKey), kubeconfig in kebab case; "sig" is an Azure SAS signature (a URL parameter only).
_KEY = (r"(?:pass(?:word|wd|phrase)?|pwd?|secret[_ -]?key|secret|token|api[_ -]?key"
        r"|access[_ -]?key[_ -]?(?:secret|id)|access[_ -]?key|private[_ -]?key|app[_ -]?secret"
        r"|account[_ -]?key|client-(?:key|certificate)-data|sig"
        r"|auth[_ -]?key|credentials?)(?:[_.-][A-Za-z0-9]+)*|密码|口令|密钥|秘钥|私钥|令牌|授权码")
_BARE = r"[A-Za-z0-9!#$%&*+\-./:=?@\\^_|~]+"
_VALUE = rf"""(?:"(?P<dq>[^"\n]*)"|'(?P<sq>[^'\n]*)'|`(?P<bq>[^`\n]*)`|(?P<bare>{_BARE}))"""
_ONE_LINE_VALUE = rf"""(?:"[^"\n]*"|'[^'\n]*'|`[^`\n]*`|{_BARE})[ \t]*(?:\r?\n|$)"""
_ZH_SEP = r"(?:是|为|改成了?|改为|设为|设置为|设置成了?|设成了?|换成了?)[ \t\u3000]*[:：]?"  # 密码是 / 密码改成 …
_ASSIGN = re.compile(
    rf"""(?P<key>{_KEY})["']?\]?
    (?:[ \t\u3000]*(?:=>|:=|=(?!=)|[:：]|{_ZH_SEP})[ \t\u3000]*
       (?:\r?\n[ \t]*(?={_ONE_LINE_VALUE}))?   # "密码：" with the value alone on the next line
     |[ \t]+(?P<is>is|was|to)[ \t]+           # "password is hunter2", "changed the password to X"
     |(?<=[\u4e00-\u9fff])(?P<sp>[ \t\u3000]+))  # "密码 abc12345": a Chinese key and just a space
    {_VALUE}""", re.I | re.X | _A)
_HEADER_OR_FLAG = re.compile(  # "Authorization: Bearer …", "--password hunter2"
    r"(?<![\w-])(?:bearer|basic)[ \t]+([A-Za-z0-9._~+/=-]{8,})"
    r"|(?<![\w-])--(?:password|passwd|token|secret|api-key|auth-token|access-token|access-key-secret|secret-key"
    r"|secret-access-key|client-secret|app-secret)[ \t]+[\"']?([^\s\"'`]+)"
    r"|\bmysql(?:dump|admin)?\b[^\n]*?[ \t]-p[\"']?([^\s\"'`]+)"  # mysql -u root -pS3cret
    r"|\bsshpass\b[^\n]*?[ \t]-p[ \t]*[\"']?([^\s\"'`]+)"  # sshpass -p 'S3cret' ssh host
    r"|\bcurl\b[^\n]*?[ \t](?:-u|--user)[ \t]*[\"']?[^\s:\"'`]+:([^\s\"'`]+)",  # curl -u admin:S3cret
    re.I | _A)
# A console label then a space (no "="): "AppSecret 40ba…", "SecretKey FPQ…", "SK: cvk…". Without
# a separator only a long random-looking value convinces (checked in _scan_assignment).
_CJK_TAIL = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")
_LABELLED = re.compile(
    r"(?<![\w-])(?:app[_ ]?secret|secret[_ ]?key|access[_ ]?key[_ ]?secret|SK)"
    r"(?:[ \t]*(?:[:：=]|是|为)[ \t]*|[ \t]+)[\"']?([A-Za-z0-9+/=_-]{16,})", re.I | _A)
_ANNOT_DEFAULT = re.compile(r"""(?:\[[^\]\n]*\])?(?:[ \t]*\|[ \t]*\w+)*[ \t]*=[ \t]*(["'])([^"'\n]*)\1""")
_DOTTED = re.compile(r"[A-Za-z_]+(?:\.[A-Za-z_]\w*)+", _A)  # self.password, os.environ, settings.KEY
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", _A)
_CAMEL = re.compile(r"[A-Z][A-Za-z]*", _A)
_SEGMENT = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", _A)  # snake_case / camelCase parts
_CODE_SEGMENTS = frozenset("password passwd pass pwd pw secret token key api apikey auth credential credentials"
                           .split())
_PROSE_NEXT = re.compile(r" [a-z]+\b", _A)
_WORDISH = re.compile(r"[A-Za-z]+|[a-z]+(?:[-_ ][a-z]+)*", _A)
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_PW_KEYS = ("pass", "pw", "密码", "口令")
_KEY_HINTS = ("pass", "pw", "secret", "token", "api", "access", "private", "auth", "credential",
              "account", "client-", "sig", "密码", "口令", "密钥", "秘钥", "私钥", "令牌", "授权码")
# Values people put in docs and templates where a password goes: not anyone's secret.
_PLACEHOLDER_WORDS = frozenset("password passwd pass pwd secret changeme change_me example placeholder "
                               "mypassword yourpassword your_password".split())
_TEMPLATE_PERCENT = re.compile(r"%\(|%[A-Za-z_]\w*%$|%[sd]$")
_URL_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
# "and password Winter_56454*": an English password word, a space, then a value that no word or
# identifier looks like (letters, a digit, and an upper-case letter or a symbol).
_PW_SPACE = re.compile(r"(?<![\w-])(?:password|passwd|passcode|pwd)[ \t]+([^\s\"'`]{6,64})", re.I | _A)
_FILLER_RUN = re.compile(r"([xX*])\1{5}")  # sk-xxxxxxxxxxxx, ghp_XXXXXXXX, ******
# Values after "password:"/"token:" that are types, literals or prose, not secrets.
_CODE_WORDS = frozenset(
    """str string int integer float bool boolean bytes bytearray dict list tuple set any object none
    null nil undefined true false optional union secretstr secretbytes self cls char void number
    required hidden empty unset redacted masked not no yes n/a na tbd todo default env field input
    prompt text unknown sensitive value varchar""".split())


def _placeholder(value: str) -> bool:
    """Example or template values (``<your-token>``, ``${DB_PASS}``, ``****``, ``[SECRET]``)."""
    if value.startswith("%") and not _TEMPLATE_PERCENT.match(value) and _URL_ESCAPE.match(value):
        return False  # "%2FFz8…": a URL-encoded value (an Azure SAS signature), not "%(pw)s"/"%PW%"
    return (not value or value[0] in "[<{$%" or "..." in value or "…" in value
            or (len(set(value)) == 1 and not value.isdigit())  # "****", "xxxx" — but "888888" is a PIN
            or value.lower().startswith(("your_", "your-")) or value.lower() in _PLACEHOLDER_WORDS
            or bool(_FILLER_RUN.search(value)))


def _mixed(value: str) -> bool:
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _scan(rx: re.Pattern[str], check: Callable[[re.Match[str]], bool] | None = None,
          group: int = 0, hints: tuple[str, ...] = ()) -> _Scanner:
    def scan(t: str) -> Iterator[_Span]:
        # Substring tests cost ~50 ns each, a regex pass over 200 characters a few µs: most
        # detectors have a literal they cannot match without, so they skip most texts for free.
        if hints and not any(h in t for h in hints):
            return
        for m in rx.finditer(t):
            if check is None or check(m):
                yield m.span(group if m.group(group) is not None else 0)
    return scan


_KEY_PREFIX = re.compile(r"sk-(?:ant-[a-z]+\d*-|[a-z]+-(?:v\d-)?)?|[a-z]+_(?:live_|test_)?|[a-z]+-", _A)
_RUN6 = re.compile(r"(.)\1{5}")


def _key_ok(m: re.Match[str]) -> bool:
    # The random part of a real key mixes digits and letters or both cases; "sk-your-key-here"
    # and "sk-xxxxxxxxxxxxxxxxxxxxxxxx" are documentation, not keys.
    body = m.group()[_KEY_PREFIX.match(m.group()).end():]  # type: ignore[union-attr]
    cased = any(c.islower() for c in body) and any(c.isupper() for c in body)
    return (_mixed(body) or cased) and not _RUN6.search(body)


def _scan_aws(t: str) -> Iterator[_Span]:
    if not any(h in t for h in ("AKIA", "ASIA", "ABIA", "ACCA")):
        return
    found = [m.span() for m in _AWS.finditer(t)]
    yield from found
    if found:  # an access key id travels with its 40-char secret key: mask that too
        for m in _AWS_SECRET.finditer(t):
            v = m.group()
            if any(c.islower() for c in v) and any(c.isupper() for c in v) and any(c.isdigit() for c in v):
                yield m.span()


def _random_enough(v: str) -> bool:
    """Digits and letters, or both cases, and no long run: a generated value, not a word."""
    cased = any(c.islower() for c in v) and any(c.isupper() for c in v)
    return (_mixed(v) or cased) and not _RUN6.search(v)


_scan_prefixed_key = _scan(_API_KEY, _key_ok, hints=("sk-", "k_live_", "k_test_", "hf_", "gsk_", "xai-",
                                                      "npm_", "glpat-", "dckr_pat_"))


def _scan_api_key(t: str) -> Iterator[_Span]:
    yield from _scan_prefixed_key(t)
    if "LTAI" in t:
        yield from (m.span() for m in _ALIYUN_ID.finditer(t) if _random_enough(m.group()[4:]))
    # Zhipu keys: test the 32 characters before each dot instead of a regex pass over the text
    i = t.find(".", 32)
    while i >= 0:
        if t[i - 32:i].isalnum() and (m := _ZHIPU.match(t, i - 32)):
            head, tail = m.group().split(".")
            if _mixed(head) and _random_enough(tail):
                yield m.span()
        i = t.find(".", i + 1)


def _scan_webhook(t: str) -> Iterator[_Span]:
    if not any(h in t for h in ("/hook/", "webhook/send", "robot/send")):
        return
    for m in _WEBHOOK.finditer(t):
        g = next(g for g in (1, 2, 3) if m.group(g) is not None)
        if not _placeholder(m.group(g)) and _mixed(m.group(g)):
            yield m.span(g)


def _assign_matches(t: str, low: str) -> Iterator[re.Match[str]]:
    if len(low) != len(t):  # a few characters change length when lowered: scan the slow way
        yield from _ASSIGN.finditer(t)
        return
    # Try the (case-insensitive, hence slow to scan) key/value regex only where a key word
    # starts: a handful of str.find calls instead of a 20 µs regex pass per text.
    starts = set()
    for h in _KEY_HINTS:
        i = low.find(h)
        while i >= 0:
            starts.add(i)
            i = low.find(h, i + 1)
    end = 0
    for i in sorted(starts):
        if i >= end and (m := _ASSIGN.match(t, i)):
            end = m.end()
            yield m


def _scan_assignment(t: str) -> Iterator[_Span]:
    low = t.lower()
    for m in _assign_matches(t, low):
        span = _assigned_value(m, t)
        if span:
            yield span
    if "pass" in low or "pwd" in low:
        for m in _PW_SPACE.finditer(t):
            v = _CJK_TAIL.split(m.group(1), 1)[0].rstrip(".,;:?!")
            if (v.isascii() and len(v) >= 6 and any(c.isdigit() for c in v) and any(c.isalpha() for c in v)
                    and (any(c.isupper() for c in v) and any(c.islower() for c in v) or not v.isalnum())
                    and not _placeholder(v) and not _DOTTED.fullmatch(v) and "(" not in v and "=" not in v
                    and not (_IDENT.fullmatch(v) and v.islower())):  # "password hash_v2" is code
                yield m.start(1), m.start(1) + len(v)
    if any(h in low for h in ("secret", "sk")):
        for m in _LABELLED.finditer(t):
            v = m.group(1)
            if len(v) >= 16 and _random_enough(v) and not _placeholder(v):
                yield m.span(1)
    if not any(h in low for h in ("bearer", "basic", "--", "mysql", "sshpass", "curl")):
        return
    for m in _HEADER_OR_FLAG.finditer(t):
        g = next(g for g in (1, 2, 3, 4, 5) if m.group(g) is not None)
        # a value ends at Chinese text or full-width punctuation ("--secret X，这个以后要用")
        v = _CJK_TAIL.split(m.group(g), 1)[0].rstrip(".,;:?")
        random = _mixed(v) or (any(c.isupper() for c in v[1:]) and any(c.islower() for c in v))
        if not _placeholder(v) and (random if g == 1 else v.isascii() and not (v.isalpha() and v.islower())):
            yield m.start(g), m.start(g) + len(v)


def _assigned_value(m: re.Match[str], t: str) -> _Span | None:
    """The span of a secret-looking value in a key/value match, or None when it looks like code."""
    key = m.group("key").lower()
    i = m.start()
    while i > 0 and t[i - 1] in _KEY_CHARS:  # the key's prefix: DB_PASSWORD, "client.secret"
        i -= 1
    full_key = t[i:m.end("key")].lower()
    if key.startswith(("pass", "pw")) and i < m.start() and t[m.start() - 1].isalpha() \
            and not key.startswith("password"):
        return None  # "compass: north", "cwd: /tmp", "hpw: 3"
    if key == "sig" and (full_key != "sig" or i == 0 or t[i - 1] not in "?&;"):
        return None  # "sig" counts only as a URL parameter (an Azure SAS signature)
    password_like = key.startswith(_PW_KEYS)
    if m.group("is") == "to" and not password_like:
        return None  # "convert the token to base64": only "the password to X" names a value
    quoted = next((g for g in ("dq", "sq", "bq") if m.group(g) is not None), "")
    g = quoted or "bare"
    value, start = m.group(g), m.start(g)
    if not quoted:
        if i > 0 and t[i - 1] in "?&":  # a URL query parameter ends at the next "&"
            value = value.split("&", 1)[0]
        value = value.rstrip(".,;:?")  # sentence punctuation, not part of the password
        end = start + len(value)
        low = value.lower()
        if t[end:end + 1] in ("(", "["):
            return None  # a call or subscript: get_secret(), os.environ["X"], Optional[str]
        if low in _CODE_WORDS or (":" in m.group() and _CAMEL.fullmatch(value)):
            d = _ANNOT_DEFAULT.match(t, end)  # token: str = "literal" — the literal still counts
            if d and d.group(2) and not _placeholder(d.group(2)):
                return d.span(2)
            return None
        if _DOTTED.fullmatch(value) or value.startswith(("/", "~/", "./")):
            return None  # attribute access or a path (PWD=/home/me)
        if _IDENT.fullmatch(value) and (low in full_key or (
                _CODE_SEGMENTS.intersection(p.lower() for p in _SEGMENT.findall(value))
                and ("_" in value or not any(c.isdigit() for c in value)))):
            return None  # password=password, token=access_token, api_key=YOUR_API_KEY (not Secret123)
        if password_like and value.isalpha() and value.islower() and _PROSE_NEXT.match(t, end):
            return None  # "Password: reset it tomorrow" is prose, not a password
        if (m.group("is") or m.group("sp")) and value.isalpha():
            return None  # "the password is stored in the vault" — in prose, only digits/symbols convince
    if _placeholder(value) or value.lower() in _CODE_WORDS:
        return None
    if password_like:
        ok = len(value) >= (1 if quoted else 3 if key in ("密码", "口令") else 4)
    else:  # token/secret/key: must look random, not a word like "bearer" or "refresh"
        ok = len(value) >= (6 if quoted else 8) and not (len(value) < 16 and _WORDISH.fullmatch(value))
    return (start, start + len(value)) if ok else None


# --- personal data -------------------------------------------------------------------------------
_EMAIL = re.compile(
    r"(?<![\w.%+-])[A-Za-z0-9][\w.%+-]*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.([A-Za-z]{2,24})(?![\w-])", _A)
_FILE_EXT = frozenset("png jpg jpeg gif svg webp ico js ts tsx jsx css scss html json yaml yml toml md py rs go "
                      "txt log zip".split())
# Patterns below start with a character class and check "no digit before" right after it: a
# leading lookbehind stops re from skipping ahead to candidate characters (8 µs vs 1 µs per text).
_CN_ID = re.compile(  # 6-digit area + YYYYMMDD + 3 + check digit, or the old 6 + YYMMDD + 3
    r"([1-9](?<!\d[1-9])\d)\d{4}(?:[ ]?((?:19|20)\d\d)(\d\d)(\d\d)[ ]?\d{3}[\dXx]|(\d\d)(\d\d)(\d\d)\d{3})(?!\d)",
    _A)
_PROVINCES = frozenset("11 12 13 14 15 21 22 23 31 32 33 34 35 36 37 41 42 43 44 45 46 50 51 52 53 54 "
                       "61 62 63 64 65 71 81 82 83 91".split())
_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_CARD = re.compile(
    r"\d(?<!\d\d)\d{3}(?:\d{9,15}|([ -])\d{4}(?:\1\d{4}){1,3}(?:\1\d{1,3})?|([ -])\d{6}\2\d{4,5})(?!\d)", _A)
_IBAN = re.compile(r"[A-Z](?<![A-Za-z0-9][A-Z])[A-Z]\d\d(?:[ ]?[A-Z0-9]){11,32}", _A)
_IBAN_LEN = {c: int(n) for c, n in re.findall(r"([A-Z]{2})(\d\d)", (
    "AD24 AE23 AL28 AT20 AZ28 BA20 BE16 BG22 BH22 BR29 CH21 CR22 CY28 CZ24 DE22 DK18 DO28 EE20 EG29 "
    "ES24 FI18 FO18 FR27 GB22 GE22 GI23 GL18 GR27 GT28 HR21 HU28 IE22 IL23 IS26 IT27 JO30 KW30 KZ20 "
    "LB28 LI21 LT20 LU20 LV21 MC27 MD24 ME22 MK19 MR27 MT31 MU30 NL18 NO15 PK24 PL28 PS29 PT25 QA29 "
    "RO24 RS22 SA24 SE24 SI19 SK24 SM27 TN24 TR26 UA29 VG24 XK20"))}
# Separators between a mobile number's groups: space, dash, dot, NBSP and other spaces, and the
# zero-width characters that survive copy-paste (and defeat a plain [ -]).
_MSEP = r"(?:[ .\-\u00a0\u2009\u202f\u3000]|[\u200b\u200c\u200d\u2060\ufeff])?"
_MOBILE = re.compile(rf"1[3-9]\d{_MSEP}\d{{4}}{_MSEP}\d{{4}}(?!\d)", _A)  # the +86 prefix is found looking back
_MOBILE_PREFIX = re.compile(r"(?:(?:\+|00)?86[ -]?|[(（]\+?86[)）] ?)$", _A)
_AREA = r"(?:10|2\d|[3-9]\d\d)"  # 010, 02x, 0xxx
_AREA_AFTER_86 = rf"(?:[(（]0?{_AREA}[)）]|0?{_AREA}[ -])"
_LANDLINE = re.compile(  # +86 / 0086 then area; or (0xx) / 0xx- — a bare 0xx12345678 is too ambiguous
    rf"[+0(（](?<!\d[+0(（])(?:(?<=\+)86[ -]?{_AREA_AFTER_86}|(?<=0)086[ -]?{_AREA_AFTER_86}"
    rf"|(?<=[(（])0{_AREA}[)）]|(?<=0){_AREA}-)[ ]?\d{{3,4}}[ -]?\d{{4}}(?!\d)", _A)
# A landline written without separators (01088886666) is only a phone after a phone word.
_LANDLINE_CTX = re.compile(
    rf"(?:电话|座机|固话|热线|传真|总机|tel|phone|fax)[^\d\n]{{0,8}}?(?<!\d)(0{_AREA}[ -]?[2-9]\d{{2,3}}[ -]?\d{{4}})(?!\d)",
    re.I | _A)
# An 11-digit number after a measuring/labelling word or before a unit is a quantity or a code.
_NOT_PHONE_BEFORE = re.compile(
    r"(?:耗时|用时|时长|运行了?|占用|大小|编码|编号|单号|订单号?|流水号|序列号|工号|学号|错误码|"
    r"(?<![A-Za-z])(?:took|elapsed|latency\w*|duration|size|sku|errno))[\s:：=#]*$", re.I)
_NOT_PHONE_AFTER = re.compile(
    r"[ \t]*(?:纳秒|微秒|毫秒|秒|字节|次|条|个|件|元|人|ns|us|µs|ms|bytes?|[KMG]?B)(?![A-Za-z])")
# Numbers an OTP/PIN is read out with: 4–8 digits right after the word, not a count of seconds.
_OTP = re.compile(
    r"(?:验证码|校验码|动态码|动态密码|短信码|确认码|取现密码|(?<![A-Za-z])PIN(?:[ \t]*码)?"
    r"|(?:verification|one[- ]time|security|confirmation|login|sms|2fa|otp)[ \t]+code|(?<![A-Za-z])OTP|passcode)"
    r"(?:[ \t]*(?:码|code|number))?(?:[ \t]*(?:[:：=]|是|为|is|was))*[ \t]*[【\[(（]?"
    r"(?<!\d)(\d{4,8})(?![\d.,]|[ \t]*(?:秒|分钟|位|次|年|s\b|sec|min|digit))",
    re.I | _A)
# Obfuscated addresses: "name [at] example [dot] com", "name(at)example.com", "name AT x DOT cn".
# The bracketed or capitalised forms are never prose; a plain " at " needs an e-mail word before.
_AT = r"(?:[ \t]*(?:\[at\]|\(at\)|\{at\}|<at>|［at］|（at）)[ \t]*|[ \t]+(?:AT|at)[ \t]+)"
_DOT = r"(?:[ \t]*(?:\[dot\]|\(dot\)|\{dot\}|<dot>|［dot］|（dot）)[ \t]*|[ \t]+(?:DOT|dot)[ \t]+|\.)"
_OBF_EMAIL = re.compile(
    rf"(?<![\w.%+-])[A-Za-z0-9][\w.%+-]*{_AT}[A-Za-z0-9-]+(?:{_DOT}[A-Za-z0-9-]+)*?{_DOT}[A-Za-z]{{2,6}}(?![\w-])",
    _A)
_AT_TOKEN = re.compile(r"\[at\]|\(at\)|\{at\}|<at>|［at］|（at）|[ \t](?:at|AT)[ \t]")
_EMAIL_WORDS = ("mail", "contact", "reach", "write to", "邮箱", "邮件", "联系")
_EMAIL_WORD = re.compile("|".join(_EMAIL_WORDS), re.I)
_AT_BRACKETS = ("[at]", "(at)", "{at}", "<at>", "［at］", "（at）")
_HASH_FOR_AT = re.compile(r"#\s*(?:换成|替换为|替换成|改成|改为|replaced? with|->|→|=>|with)\s*@", re.I)
_HASH_EMAIL = re.compile(r"(?<![\w.%+-])[A-Za-z0-9][\w.%+-]*#[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24}", _A)
# Internationalised addresses (中文@例子.中国, user@bücher.de); the ASCII ones are _EMAIL's.
_IDN_EMAIL = re.compile(r"(?<![\w.%+-])\w[\w.%+-]*@\w[\w-]*(?:\.[\w-]+)*\.[^\W\d_]{2,24}(?![\w-])")
# Words that make a long Luhn-valid number a card (an order or tracking number has none of them).
_CARD_WORD = re.compile(r"卡|账号|帐号|账户|帐户|银联|转账|汇款|打款|还款|开户|card|visa|master|amex|unionpay|jcb|discover|diners"
                        r"|acct|account|payment", re.I)
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_IP = re.compile(rf"(?<![\w.]){_OCTET}(?:\.{_OCTET}){{3}}(?!\w|\.\d)", _A)


def _valid_date(y: int, m: int, d: int) -> bool:
    try:
        return date(1900, 1, 1) <= date(y, m, d) <= date.today()
    except ValueError:
        return False


def _id_ok(m: re.Match[str]) -> bool:
    if m.group(2):  # 18 digits: province, birth date, ISO 7064 MOD 11-2 check digit
        digits = m.group().replace(" ", "").upper()
        total = sum(int(c) * w for c, w in zip(digits, _ID_WEIGHTS))
        return (m.group(1) in _PROVINCES and "10X98765432"[total % 11] == digits[17]
                and _valid_date(int(m.group(2)), int(m.group(3)), int(m.group(4))))
    return m.group(1) in _PROVINCES and _valid_date(1900 + int(m.group(5)), int(m.group(6)), int(m.group(7)))


def _card_ok(m: re.Match[str]) -> bool:
    d = _SEPARATORS.sub("", m.group())
    # Issuer prefixes by length (Visa 4, Mastercard 51-55/2221-2720, Amex 34/37, Diners 30/36/38,
    # JCB 35, UnionPay and Discover 6, old domestic 9): order numbers, timestamps and barcodes
    # (1…, 20xx…, 69…13 digits) and IMEIs (15 digits, Luhn too) do not qualify.
    n = len(d)
    if not (d[0] == "4" and n in (13, 16, 19) or d[:2] in ("34", "37") and n == 15 or d[:2] in ("30", "36", "38")
            and n == 14 or n >= 16 and (d[0] in "3569" or 2221 <= int(d[:4]) <= 2720)):
        return False
    if n == 18 and d[:2] in _PROVINCES and _valid_date(int(d[6:10]), int(d[10:12]), int(d[12:14])):
        return False  # an ID number with a typo in its check digit, not a card
    # Luhn passes one random number in ten: a bare run of digits is a card only after a card word
    # ("卡号", "账户", "Visa"); written in groups (6222 0261 …) it is a card by its shape alone.
    if d == m.group() and not (_CARD_WORD.search(m.string, max(0, m.start() - 24), m.start())
                               or _CARD_WORD.search(m.string, m.end(), m.end() + 12)):
        return False
    doubled = (int(c) * 2 for c in d[-2::-2])  # Luhn
    return (sum(int(c) for c in d[::-2]) + sum(x - 9 if x > 9 else x for x in doubled)) % 10 == 0


def _scan_iban(t: str) -> Iterator[_Span]:
    pos = 0
    while m := _IBAN.search(t, pos):
        pos = m.start() + 1  # a failed candidate may have swallowed the start of a real IBAN
        n = _IBAN_LEN.get(m.group()[:2], 99)
        iban = m.group().replace(" ", "")[:n]  # the greedy match may run into the next word
        if len(iban) == n and int("".join(str(int(c, 36)) for c in iban[4:] + iban[:4])) % 97 == 1:
            pos = m.start() + len(re.match(rf"(?: ?[A-Z0-9]){{{n}}}", m.group()).group())  # type: ignore[union-attr]
            yield m.start(), pos


def _scan_mobile(t: str) -> Iterator[_Span]:
    for m in _MOBILE.finditer(t):
        if _NOT_PHONE_BEFORE.search(t, max(0, m.start() - 12), m.start()) or _NOT_PHONE_AFTER.match(t, m.end()):
            continue  # "耗时 15000000000 纳秒", "SKU 13812345678": a quantity or a code
        p = _MOBILE_PREFIX.search(t, max(0, m.start() - 6), m.start())
        for s in ((p.start(), m.start()) if p else (m.start(),)):  # "+86 138…", else "1986 138…"
            if s == 0 or not t[s - 1].isdigit():  # not the tail of a longer number
                yield s, m.end()
                break


_LANDLINE_HINTS = ("电话", "座机", "固话", "热线", "传真", "总机", "tel", "phone", "fax")
_OTP_HINTS = ("验证码", "校验码", "动态码", "动态密码", "短信码", "确认码", "取现密码", "pin", "code", "otp",
              "passcode")


def _scan_landline(t: str) -> Iterator[_Span]:
    yield from (m.span() for m in _LANDLINE.finditer(t))
    low = t.lower()
    if any(h in low for h in _LANDLINE_HINTS):
        yield from (m.span(1) for m in _LANDLINE_CTX.finditer(t))


def _scan_otp(t: str) -> Iterator[_Span]:
    low = t.lower()
    if any(h in low for h in _OTP_HINTS):
        yield from (m.span(1) for m in _OTP.finditer(t))


_scan_ascii_email = _scan(_EMAIL, lambda m: m.group(1).lower() not in _FILE_EXT
                          and not m.group().startswith("git@"), hints=("@",))


def _scan_email(t: str) -> Iterator[_Span]:
    yield from _scan_ascii_email(t)
    if "@" in t and not t.isascii():
        yield from (m.span() for m in _IDN_EMAIL.finditer(t) if not m.group().isascii())
    low = t.lower()
    # Obfuscated addresses: find each "at" token, walk back over the name, and match from there
    # (a regex pass from every word start costs ~30 µs on ordinary English prose). A plain " at "
    # is worth looking at only in a text with an e-mail word (or the shouted " AT ").
    bracketed = any(b in low for b in _AT_BRACKETS)
    plain = (" at " in low or "\tat" in low) and (" AT " in t or any(w in low for w in _EMAIL_WORDS))
    for a in _AT_TOKEN.finditer(t) if bracketed or plain else ():
        start = a.start()
        while start > 0 and t[start - 1] in " \t":
            start -= 1
        while start > 0 and (t[start - 1].isascii() and (t[start - 1].isalnum() or t[start - 1] in "._%+-")):
            start -= 1
        m = _OBF_EMAIL.match(t, start)
        if m and m.end() > a.end():
            g = m.group()
            spelled = not any(c in g for c in "[({<［（") and " AT " not in g
            if spelled and not _EMAIL_WORD.search(t, max(0, m.start() - 40), m.start()):
                continue  # "look at example.com": a plain " at " is prose without an e-mail word
            yield m.span()
    if "#" in t and "@" in t and _HASH_FOR_AT.search(t):  # "name#example.com（#换成@）"
        yield from (m.span() for m in _HASH_EMAIL.finditer(t))


_BUILTIN: dict[str, _Scanner] = {
    "private": _scan(_PRIVATE, hints=("<",)),
    "pem": _scan(_PEM, hints=("-----BEGIN",)),
    "jwt": _scan(_JWT, hints=("eyJ",)),
    "api_key": _scan_api_key,
    "aws_key": _scan_aws,
    "github_token": _scan(_GITHUB, lambda m: not _FILLER_RUN.search(m.group()), hints=("gh", "github_pat_")),
    "slack_token": _scan(_SLACK, lambda m: m.group(1) is not None or any(c.isdigit() for c in m.group()),
                         hints=("xox", "xapp-", "hooks.slack.com")),
    "google_key": _scan(_GOOGLE, hints=("AIza", "GOCSPX-", "ya29.")),
    "webhook": _scan_webhook,
    "conn_string": _scan(_CONN, lambda m: not _placeholder(m.group(1)), group=1, hints=("://",)),
    "assignment": _scan_assignment,
    "otp": _scan_otp,
    # icon@2x.png is a file name, git@github.com an SSH remote; 0.0.0.0/127.x/255.x are no one's address
    "email": _scan_email,
    "cn_id": _scan(_CN_ID, _id_ok),
    "iban": _scan_iban,
    "bank_card": _scan(_CARD, _card_ok),
    "cn_mobile": _scan_mobile,
    "cn_landline": _scan_landline,
    "ip": _scan(_IP, lambda m: m.group() != "0.0.0.0" and not m.group().startswith(("127.", "255.")),
                hints=(".",)),
}
assert tuple(_BUILTIN) == DETECTORS


@dataclass(frozen=True)
class Finding:
    """One masked span: the detector, its span in the original text, and what replaced it."""

    kind: str
    start: int
    end: int
    placeholder: str


@dataclass(frozen=True)
class Redacted:
    """The redacted text and what was found. Only ``kinds`` belongs in metadata, never the values."""

    text: str
    findings: tuple[Finding, ...]

    @property
    def kinds(self) -> dict[str, int]:
        """Detector name -> number of spans masked, for the memory's metadata."""
        return dict(Counter(f.kind for f in self.findings))


class Redactor:
    """A configured set of detectors; build it once and call :meth:`redact` on every text."""

    def __init__(self, *, disabled: Iterable[str] = (), enabled: Iterable[str] = (),
                 extra_patterns: Mapping[str, str] | None = None, allow: Iterable[str] = ()) -> None:
        disabled, enabled = set(disabled), set(enabled)
        extra = dict(extra_patterns or {})
        known = set(DETECTORS) | set(extra)
        for what, names in (("disabled", disabled), ("enabled", enabled)):
            unknown = sorted(names - known)
            if unknown:
                raise ValueError(f"unknown detector(s) in {what}: {', '.join(unknown)}; "
                                 f"known: {', '.join(DETECTORS)}")
        self._scanners: list[tuple[str, _Scanner]] = [
            (n, _BUILTIN[n]) for n in DETECTORS if n not in disabled and (n not in DEFAULT_OFF or n in enabled)]
        # kind -> placeholder, for English (False) and Chinese (True) text
        self._placeholders = {zh: {n: _PLACEHOLDERS.get(n, ("[SECRET]", "[SECRET]"))[zh] for n in DETECTORS}
                              for zh in (False, True)}
        for name, pattern in extra.items():
            if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name) or name in DETECTORS:
                raise ValueError(f"extra pattern name {name!r} must be identifier-like (letters, digits, _) "
                                 "and not the name of a built-in detector")
            try:
                rx = re.compile(pattern)
            except (re.error, TypeError) as e:
                raise ValueError(f"extra pattern {name!r} is not a valid regular expression: {e}") from None
            if name not in disabled:
                self._scanners.append((name, _scan(rx)))
                for names in self._placeholders.values():
                    names[name] = f"[{name.upper()}]"
        self._allow = frozenset(a for a in allow if a)

    def redact(self, text: str) -> Redacted:
        """Mask every finding in ``text``; spans in the findings refer to ``text`` itself."""
        scan_text = text.translate(_FW_TABLE) if _FULLWIDTH.search(text) else text
        taken: list[tuple[int, int, str]] = []
        for name, scanner in self._scanners:
            for s, e in scanner(scan_text):
                if s >= e or any(s < te and ts < e for ts, te, _ in taken):
                    continue  # an earlier detector (or an earlier match) already owns this text
                if self._allow and (text[s:e] in self._allow or _SEPARATORS.sub("", text[s:e]) in self._allow):
                    continue
                taken.append((s, e, name))
        if not taken:
            return Redacted(text, ())
        taken.sort()
        kept, pos = [], 0
        for s, e, _ in taken:
            kept.append(text[pos:s])
            pos = e
        kept.append(text[pos:])
        # Chinese placeholders when the text that stays is Chinese (a Han word inside a removed
        # <private> span should not decide the language of the rest).
        zh = any(has_han(k) for k in kept)
        findings = tuple(Finding(n, s, e, self._placeholders[zh][n]) for s, e, n in taken)
        return Redacted("".join(k + f.placeholder for k, f in zip(kept, findings)) + kept[-1], findings)


@lru_cache(maxsize=1)
def _default() -> Redactor:
    return Redactor()


def redact(text: str) -> Redacted:
    """Redact with the default detectors (a shared :class:`Redactor`)."""
    return _default().redact(text)
