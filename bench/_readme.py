"""Writing a benchmark's section into bench/README.md, between its own markers."""

from __future__ import annotations

from pathlib import Path

README = Path(__file__).resolve().parent / "README.md"


def write_section(start: str, end: str, section: str) -> None:
    """Put ``section`` (which begins with ``start`` and ends with ``end`` and a newline) in place
    of the old one, or at the end of the README the first time."""
    text = README.read_text("utf-8")
    if start in text:
        text = text[: text.index(start)] + section + text[text.index(end) + len(end) + 1:]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    README.write_text(text, "utf-8")
