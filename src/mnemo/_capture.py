"""Capture: detect what is worth remembering in conversation (rules first, an LLM when asked).

``CaptureOps`` is a mixin of :class:`mnemo.Mnemo`.
"""

from __future__ import annotations


class CaptureOps:
    """Operations that turn conversation into memories (``auto``)."""
