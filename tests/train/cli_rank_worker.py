"""One rank of ``test_teardown_ranks``: ``paravt train`` through the CLI's own entry point, as
``torchrun -m paravt.cli.main train ...`` runs it, then the gloo threads still running once the
command has returned (it leaves the process group before it prints its result).

``argv``: the output folder, then the CLI's arguments. Each rank writes ``rank{r}.json``: the
command's exit code and those threads.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from gloo_ranks import gloo_threads

from paravt.cli.main import main

if __name__ == "__main__":
    out = Path(sys.argv[1])
    code = main(sys.argv[2:])
    rank = os.environ["RANK"]
    left = {"exit_code": code, "gloo_threads_after_leaving": gloo_threads()}
    (out / f"rank{rank}.json").write_text(json.dumps(left))
    sys.exit(code)
