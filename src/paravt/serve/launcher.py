"""The launcher file a harness starts as ``python FILE``, with no arguments.

Why a file: lmms-eval (``mcp_server_path``) and other harnesses start an MCP server as
``python <path>``, and the SDK's stdio client passes only a few environment variables through, so
neither flags nor environment can carry the settings. ``write_launcher`` writes them into the
file, as JSON, with the interpreter that wrote it: started by another ``python`` (the harness's
own environment, which need not have paravt), the file re-executes itself under that
interpreter, so paravt's stack and the harness's stay apart.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from paravt import __version__
from paravt.config import to_dict
from paravt.serve.config import ServeToolsConfig

__all__ = ["write_launcher"]

TEMPLATE = '''#!/usr/bin/env python3
"""paravt serve-tools launcher (paravt {version}): crop_video and video_info over MCP stdio.

Written by `paravt serve-tools --write-entry`; start it as `python {name}` (lmms-eval:
mcp_server_path={name}). Edit SETTINGS or write the file again to change them.
"""
import json
import os
import sys

PYTHON = {python!r}
PREFIX = {prefix!r}
SETTINGS = json.loads({settings!r})

if os.path.realpath(sys.prefix) != PREFIX and os.path.exists(PYTHON):
    os.execv(PYTHON, [PYTHON, os.path.abspath(__file__)])

from paravt.serve.mcp_server import serve_from_dict  # noqa: E402

serve_from_dict(SETTINGS)
'''


def write_launcher(cfg: ServeToolsConfig, path: str | Path) -> Path:
    """Write the launcher of ``cfg`` at ``path`` (made executable); returns its path."""
    path = Path(path).expanduser().resolve()
    data = to_dict(cfg)
    data["video_roots"] = [os.path.realpath(r) for r in cfg.video_roots]
    text = TEMPLATE.format(
        version=__version__,
        name=path.name,
        python=sys.executable,
        prefix=os.path.realpath(sys.prefix),
        settings=json.dumps(data, sort_keys=True),
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path
