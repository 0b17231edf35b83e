"""``crop_video`` and ``video_info`` over MCP, with the official SDK's low-level server.

Why the low-level server: the tool's input schema is the engine's own (``calls``), and its
argument rules (``MM:SS`` strings, aliases, clamping) are the engine's too, so the SDK must pass
the arguments through as they came instead of validating them against a schema derived from a
Python signature. Each call runs on a worker thread (decoding is blocking work), at most
``max_concurrent`` at once, under ``timeout_s``; a call that fails in any way becomes a tool
error result (``is_error``) and the server keeps serving.
"""

from __future__ import annotations

import base64
import logging
import sys
from typing import Any

import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from paravt import __version__
from paravt.config import build
from paravt.logs import one_line_logging
from paravt.serve.calls import VIDEO_INFO_SCHEMA, ToolReply, ToolService, crop_video_schema
from paravt.serve.config import ServeToolsConfig
from paravt.tools.schema import TOOL_NAME, TOOL_SCHEMA

__all__ = ["serve"]

logger = logging.getLogger(__name__)

SERVER_NAME = "paravt-tools"


def _result(reply: ToolReply) -> types.CallToolResult:
    content: list[Any] = [types.TextContent(text=reply.text)]
    content += [
        types.ImageContent(data=base64.b64encode(png).decode("ascii"), mime_type="image/png")
        for png in reply.images
    ]
    return types.CallToolResult(
        content=content,
        structured_content=None if reply.error else reply.data,
        is_error=reply.error,
    )


def build_server(cfg: ServeToolsConfig, service: ToolService | None = None) -> Server:
    """The MCP server of ``cfg``'s tools (not yet running)."""
    service = service or ToolService(cfg)
    limiter = anyio.CapacityLimiter(cfg.max_concurrent)
    tools = [
        types.Tool(
            name=TOOL_NAME,
            description=TOOL_SCHEMA["function"]["description"],
            input_schema=crop_video_schema(cfg),
        ),
        types.Tool(
            name="video_info",
            description="Duration (seconds), frame rate, width, height and frame count of a video.",
            input_schema=VIDEO_INFO_SCHEMA,
        ),
    ]
    run = {TOOL_NAME: service.crop_video, "video_info": service.video_info}

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        fn = run.get(params.name)
        if fn is None:
            names = ", ".join(run)
            return _result(
                ToolReply(f"unknown tool {params.name!r}: this server has {names}", error=True)
            )
        arguments = dict(params.arguments or {})
        try:
            with anyio.fail_after(cfg.timeout_s):
                reply = await anyio.to_thread.run_sync(
                    fn, arguments, limiter=limiter, abandon_on_cancel=True
                )
        except TimeoutError:
            reply = ToolReply(
                f"{params.name}: the call took longer than this server's limit of "
                f"{cfg.timeout_s:g} s; ask for a shorter window or fewer frames",
                error=True,
                kind="timeout",
            )
        except Exception as e:  # noqa: BLE001 - one failing call must not stop the server
            logger.exception("internal error in %s(%r)", params.name, arguments)
            reply = ToolReply(f"{params.name}: internal error: {type(e).__name__}: {e}", error=True)
        return _result(reply)

    return Server(
        SERVER_NAME, version=__version__, on_list_tools=list_tools, on_call_tool=call_tool
    )


async def _serve_stdio(server: Server) -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def serving_line(cfg: ServeToolsConfig) -> str:
    """What the server says on stderr as it starts: where it serves, what, and from where."""
    roots = ", ".join(cfg.video_roots) or "none"
    tools = f"{TOOL_NAME} and video_info"
    if cfg.http_port:
        where = f"on http://127.0.0.1:{cfg.http_port}/mcp (streamable HTTP; Ctrl-C stops it)"
    else:
        where = "on stdio (MCP; it stops when the client closes stdin)"
    return f"paravt serve-tools: serving {tools} {where}; video roots: {roots}"


def serve(cfg: ServeToolsConfig) -> None:
    """Serve until the client goes away: stdio, or streamable HTTP on 127.0.0.1 with a port.
    One line on stderr says where (stdout is the stdio protocol's)."""
    import torch

    torch.set_num_threads(cfg.torch_threads)
    server = build_server(cfg)
    print(serving_line(cfg), file=sys.stderr, flush=True)
    if cfg.http_port:
        import uvicorn

        app = server.streamable_http_app(host="127.0.0.1")
        uvicorn.run(app, host="127.0.0.1", port=cfg.http_port, log_level="warning")
    else:
        anyio.run(_serve_stdio, server)


def serve_from_dict(data: dict) -> None:
    """The launcher's entry: ``data`` is a ``ServeToolsConfig`` as ``paravt.config.to_dict``
    wrote it. Logged failures (a corrupt region of a video) are one line each on stderr."""
    one_line_logging()
    serve(build(ServeToolsConfig, data))
