"""Context injection: the few right memories for a prompt, under a token budget, logged.

``ContextOps`` is a mixin of :class:`mnemo.Mnemo`.
"""

from __future__ import annotations


class ContextOps:
    """Operations that feed an assistant (``context``, ``log``)."""
