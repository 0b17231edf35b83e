"""Start-up check of a multi-node run: every rank sees the same run folder and checkpoints.

Only rank 0 writes the config, the logs and the model checkpoints, but every rank resumes from a
checkpoint and HF Trainer's sharded states (optimizer, RNG per rank) land beside them. A node
whose ``output_dir`` is a local disk, or another mount, would train from another checkpoint, or
from none, and the collectives would cross or hang. So before anything loads:

- each rank writes a token file into the run folder and looks for every other rank's (``.nodes/``
  under the run folder, removed again); a rank that misses one is a ``ConfigError`` on every rank
  naming which rank on which host sees what;
- each rank names the newest ``checkpoint-N`` it sees and its files; views that differ are a
  ``ConfigError`` on every rank, raised after the all-gather, so no node is left waiting.

A network file system may show a file another node just wrote a little later (attribute caching):
the token check looks for the other ranks' files for up to ``TOKEN_WAIT_S`` before it decides.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from paravt.errors import ConfigError

__all__ = ["check_same_folder"]

#: seconds a rank keeps looking for the other ranks' token files (NFS attribute caches)
TOKEN_WAIT_S = 10.0
TOKEN_DIR = ".nodes"

Gather = Callable[[list], list]


def check_same_folder(run_dir: Path, rank: int, world: int, gather: Gather) -> None:
    """ConfigError on every rank unless every rank sees every rank's token file in ``run_dir``."""
    host = socket.gethostname()
    nonce = gather([uuid.uuid4().hex if rank == 0 else None])[0]
    folder = run_dir / TOKEN_DIR
    folder.mkdir(parents=True, exist_ok=True)
    mine = folder / f"{nonce}.rank{rank}"
    mine.write_text(f"{host}\n")
    gather([None])  # every rank has written its token
    wanted = [folder / f"{nonce}.rank{r}" for r in range(world)]
    deadline = time.monotonic() + TOKEN_WAIT_S
    while True:
        seen = [r for r, p in enumerate(wanted) if p.is_file()]
        if len(seen) == world or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    views = gather([(host, seen)])
    mine.unlink(missing_ok=True)
    blind = [
        f"rank {r} on {host} sees the token files of ranks {seen} only"
        for r, (host, seen) in enumerate(views)
        if len(seen) != world
    ]
    if blind:
        raise ConfigError(
            f"output_dir={run_dir} is not one folder for every rank: "
            + "; ".join(blind)
            + f" (of {world}). Put output_dir on a file system every node mounts at the same "
            "path (docs/train/MULTI_GPU.md, Multi-node)"
        )


def checkpoint_view(ckpt: Path | None) -> tuple[str, list[str]] | None:
    """``(checkpoint-N, its files)`` of the newest checkpoint this rank sees, or None."""
    if ckpt is None:
        return None
    return ckpt.name, sorted(os.listdir(ckpt))


def check_same_checkpoints(run_dir: Path, newest: Path | None, gather: Gather) -> None:
    """ConfigError on every rank unless every rank sees the same newest checkpoint (``newest``:
    this rank's; name and files) in ``run_dir``: a ``--resume`` would continue different runs."""
    views = gather([(socket.gethostname(), checkpoint_view(newest))])
    if len({repr(v) for _, v in views}) == 1:
        return
    described = []
    for r, (host, view) in enumerate(views):
        what = "no checkpoint" if view is None else f"{view[0]} ({len(view[1])} files)"
        described.append(f"rank {r} on {host} sees {what}")
    raise ConfigError(
        f"the ranks see different checkpoints in output_dir={run_dir}: "
        + "; ".join(described)
        + ". Every node must see the same run folder: put it on a shared file system mounted at "
        "the same path (docs/train/MULTI_GPU.md, Multi-node)"
    )
