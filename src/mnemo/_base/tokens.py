"""Offline token estimates for context budgets (no tokenizer is downloaded or loaded).

The rule, calibrated on OpenAI's cl100k and Anthropic's published ratios:

* each CJK character (Han, kana, Hangul, full-width punctuation) counts as **one token**
  (real tokenizers give 0.7–1.5 per Chinese character; 1 keeps budgets honest);
* any other run of text counts as the larger of ``ceil(chars / 4)`` and
  ``ceil(words × 1.3)`` — the two usual rules of thumb; taking the larger errs on the side
  of staying under the budget for short words, code and paths.

``tests/test_context.py`` checks the estimate against a few known cl100k counts.
"""

from __future__ import annotations

import math
import re

_CJK = re.compile(
    "[\u1100-\u11ff\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u31a0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef\U00020000-\U0002fa1f]"
)
_WORD = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def estimate_tokens(text: str) -> int:
    """About how many tokens ``text`` costs a model (see the module docstring for the rule)."""
    if not text:
        return 0
    cjk = len(_CJK.findall(text))
    rest = _CJK.sub(" ", text)
    chars = len(rest.strip())
    if not chars:
        return cjk
    words = len(_WORD.findall(rest))
    return cjk + max(math.ceil(chars / 4), math.ceil(words * 1.3))


def has_cjk(text: str, share: float = 0.1) -> bool:
    """Whether CJK characters make up at least ``share`` of the non-space characters."""
    letters = [ch for ch in text if not ch.isspace()]
    if not letters:
        return False
    return len(_CJK.findall(text)) / len(letters) >= share
