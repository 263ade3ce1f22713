"""Regenerate ``src/mnemo/data/pinyin.tsv``: the toneless Mandarin readings of the 6,763 GB2312
characters, the usual reading first, one character per line.

    pip install pypinyin && python scripts/gen_pinyin.py

The readings come from pypinyin's character table (MIT licence; its data is derived from the
Unicode Han Database). mnemo reads the generated file and needs neither at run time: loading
pypinyin's table costs ~130 ms, this file ~5 ms.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

from pypinyin.pinyin_dict import pinyin_dict

OUT = Path(__file__).resolve().parent.parent / "src" / "mnemo" / "data" / "pinyin.tsv"


def toneless(reading: str) -> str:
    """``zhāng`` → ``zhang``, ``lǜ`` → ``lü`` (ü kept: it is spelt u, v or yu in names)."""
    out = []
    for ch in unicodedata.normalize("NFD", reading):
        if unicodedata.combining(ch) and ch != "\u0308":
            continue
        out.append(ch)
    return unicodedata.normalize("NFC", "".join(out))


def main() -> None:
    lines = [
        "# Toneless Mandarin readings of the GB2312 characters, usual reading first (scripts/gen_pinyin.py;",
        "# from pypinyin's table, MIT licence, derived from the Unicode Han Database). For names across",
        "# scripts: 张伟 ⇄ Zhang Wei, 杭州 ⇄ Hangzhou.",
    ]
    for cp in range(0x4E00, 0x9FA6):
        ch = chr(cp)
        try:
            ch.encode("gb2312")
        except UnicodeEncodeError:
            continue
        readings = pinyin_dict.get(cp)
        if not readings:
            continue
        seen = list(dict.fromkeys(toneless(r) for r in readings.split(",")))
        lines.append(f"{ch}\t{' '.join(seen)}")
    OUT.write_text("\n".join(lines) + "\n", "utf-8")
    print(f"wrote {len(lines) - 3} characters to {OUT}")


if __name__ == "__main__":
    main()
