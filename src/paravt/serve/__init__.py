"""paravt's tools for agents and harnesses outside paravt: ``crop_video`` and ``video_info``
served over MCP (``paravt serve-tools``).

Why a room of its own, above ``agent``: a call must give the frames the episode engine gives
(the same argument rules, frame choice, decoding and pixel budget), so it runs through
``paravt.tools.execute_windows`` with the engine's budget resize (``paravt.agent.vision``), and
only the transport is new. ``calls`` holds that execution without any MCP type (tested on its
own), ``paths`` the confinement of video paths to the roots given at start, ``mcp_server`` the
MCP adapter (the optional ``mcp`` SDK: ``pip install -e ".[mcp]"``), ``launcher`` the file a
harness starts as ``python FILE``.
"""

__all__: list[str] = []  # nothing here is for the other rooms
