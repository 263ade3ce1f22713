"""The MCP server surface: one tool per ``Mnemo`` operation."""
