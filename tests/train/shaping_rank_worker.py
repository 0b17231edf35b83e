"""One rank of ``test_reference_shaping_ranks``: cpu-smoke trained with the reference's batch
normalisation and KL reward, each step's loss inputs saved for the test.

``argv``: the output folder, then ``--set`` overrides. Each rank writes ``rank{r}-step{n}.pt``:
the advantages TRL's loss received and the loss mask (generated, not padding).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch

from paravt.train.run import load_command_config, run_training


def attach(out: Path):
    def on_trainer(trainer):
        rank = os.environ["RANK"]
        original = trainer._generate_and_score_completions
        steps = []

        def wrapped(inputs):
            result = original(inputs)
            steps.append(1)
            mask = result["completion_mask"] * result["tool_mask"]
            saved = {"advantages": result["advantages"].detach().cpu(), "mask": mask.cpu()}
            torch.save(saved, out / f"rank{rank}-step{len(steps)}.pt")
            return result

        trainer._generate_and_score_completions = wrapped

    return on_trainer


if __name__ == "__main__":
    out = Path(sys.argv[1])
    cfg = load_command_config("cpu-smoke", tuple(sys.argv[2:]))
    run_training(cfg, on_trainer=attach(out))
