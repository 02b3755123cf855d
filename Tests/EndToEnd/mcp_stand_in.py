"""A stdio MCP server stand-in: answers `initialize` (JSON-RPC 2.0, one message a line, as
the MCP stdio transport frames them) with its server info and, in `_meta`, the environment
it received, then `tools/list` with none; ends at end of input."""
import json
import os
import sys

for line in sys.stdin:
    if not line.strip():
        continue
    message = json.loads(line)
    if "id" not in message:
        continue  # a notification (notifications/initialized)
    if message.get("method") == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "stand-in", "version": "1.0"}, "_meta": {"environment": dict(os.environ)}}
    elif message.get("method") == "tools/list":
        result = {"tools": []}
    else:
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "method not found"}}), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
