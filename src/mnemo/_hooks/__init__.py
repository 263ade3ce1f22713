"""Assistant hooks (Claude Code, OpenCode): the import-light client, the handlers and the warm service."""
