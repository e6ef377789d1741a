"""Call one tool of CAO's MCP server over stdio, as an agent would; print its result as JSON.

Runs under CAO's own virtualenv (`.tools/cao/bin/python`), never Baton's: it starts
`cao-mcp-server` from that venv, speaks MCP to it, and prints the tool's structured
result (or its text) on stdout. Usage: `call_tool.py TOOL '{"arg": "value"}'`.
The environment (CAO_API_HOST/PORT, CAO_TERMINAL_ID, HOME) is passed to the server.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from fastmcp import Client
from fastmcp.client.transports import StdioTransport


async def _call(tool: str, arguments: dict) -> object:
    server = Path(sys.executable).with_name("cao-mcp-server")
    transport = StdioTransport(command=str(server), args=[], env=dict(os.environ))
    async with Client(transport) as client:
        result = await client.call_tool(tool, arguments, raise_on_error=False, timeout=600)
    if result.structured_content is not None:
        return result.structured_content
    texts = [getattr(item, "text", "") for item in result.content]
    return {"text": "\n".join(texts), "is_error": result.is_error}


def main() -> int:
    tool, arguments = sys.argv[1], json.loads(sys.argv[2])
    print(json.dumps(asyncio.run(_call(tool, arguments))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
