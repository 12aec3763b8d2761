"""MCP servers as tool sources (the official `mcp` SDK, imported only when a server is used)."""
