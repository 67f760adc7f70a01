#!/usr/bin/env python3
"""An AI agent's side of `touchgate mcp`, played by the official MCP Python SDK (PyPI `mcp`).

    agent.py CALLS SERVER ARGS...

Starts SERVER ARGS... as a stdio MCP server, initializes, lists the tools, then makes each
call in CALLS (a JSON list of {"tool": name, "arguments": {...}}) in order. Prints one JSON
line per step: {"initialized": protocol version, "server": name}, {"tools": [names]}, then
{"tool": name, "is_error": bool, "text": ..., "structured": ...} per call. The server's
standard error passes through to ours (the test's virtual finger reads its prompts there).
"""
import asyncio, json, os, sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def say(value):
    print(json.dumps(value), flush=True)


async def main():
    calls = json.loads(sys.argv[1])
    # The whole environment, as an agent's configuration would give it (the SDK's default
    # passes only a few variables; the test's data directory and virtual reader are in others).
    params = StdioServerParameters(command=sys.argv[2], args=sys.argv[3:], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            say({"initialized": init.protocol_version, "server": init.server_info.name})
            tools = await session.list_tools()
            say({"tools": [tool.name for tool in tools.tools],
                 "schemas": {tool.name: tool.input_schema for tool in tools.tools}})
            for call in calls:
                result = await session.call_tool(call["tool"], call.get("arguments", {}))
                text = "".join(part.text for part in result.content if getattr(part, "text", None) is not None)
                say({"tool": call["tool"], "is_error": bool(result.is_error), "text": text,
                     "structured": result.structured_content})


asyncio.run(main())
