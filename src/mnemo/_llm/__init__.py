"""The optional chat port: an OpenAI-compatible client and the few prompts mnemo sends it."""
