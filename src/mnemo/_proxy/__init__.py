"""``mnemo proxy``: an OpenAI-compatible server that adds memory to any chat client (see ``app``, ``server``)."""
