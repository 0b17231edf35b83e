"""One rank of ``test_two_trainer_ranks_share_one_vllm_server`` (run under torchrun, from the vLLM
environment).

``argv``: model folder, video folder, the server's base URL, output folder. ``paravt train`` on the
cpu-smoke recipe, DDP on 2 gloo ranks, in server mode against the one real vLLM server the test
started: each rank sends its own requests (no lockstep), the folder push meets the ranks once a
step. Each rank writes ``rank{r}.json``: the steps it trained, its weight pushes, whether it ran
in lockstep, its filler prompts, the requests it sent on their own and the generate requests its
client made (by episode id), the records' statuses, and its sampler/policy logprob gap.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main() -> None:
    from gloo_ranks import SERVER_RANKS_WAITS

    from paravt.train.run import load_command_config, run_training

    model_dir, videos, base_url, out = sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4])
    cfg = load_command_config(
        "cpu-smoke",
        (
            f"output_dir={out / 'run'}", "data.path=builtin:smoke", f"data.video_root={videos}",
            f"model={model_dir}", "trainer.use_vllm=true", "trainer.vllm_mode=server",
            f"trainer.vllm_server_base_url={base_url}",
            "trainer.vllm_importance_sampling_mode=token_truncate", "trainer.max_steps=2",
            "trainer.save_steps=100", *SERVER_RANKS_WAITS,
        ),
    )  # fmt: skip
    seen: dict = {"trainer": None, "sent": [], "gaps": [], "records": []}

    def attach(trainer) -> None:
        seen["trainer"] = trainer
        client = trainer.vllm_generation.client
        send = client.generate

        def recording(token_ids, images, sampling, *, what=""):
            seen["sent"].append(what)
            return send(token_ids, images, sampling, what=what)

        client.generate = recording
        score = trainer._generate_and_score_completions

        def scored(inputs):
            result = score(inputs)
            mask = (result["completion_mask"] * result["tool_mask"]).bool()
            diff = (result["old_per_token_logps"] - result["sampling_per_token_logps"])[mask]
            seen["gaps"].append(float(diff.abs().max()) if mask.any() else None)
            return result

        trainer._generate_and_score_completions = scored

    summary = run_training(cfg, on_trainer=attach)
    trainer = seen["trainer"]
    backend = trainer._backend
    rank = trainer.accelerator.process_index
    result = {
        "rank": rank,
        "world": trainer.accelerator.num_processes,
        "global_step": summary["global_step"],
        "syncs": backend.syncs,
        "pushed": list(trainer.vllm_generation.push.pushed),
        "lockstep": backend.lockstep,
        "fillers": backend.filler_prompts,
        "alone": backend.alone_requests,
        "rounds_calls": backend.calls,
        "sent": seen["sent"],
        "gaps": seen["gaps"],
    }
    (out / f"rank{rank}.json").write_text(json.dumps(result))


if __name__ == "__main__":
    from paravt.train.launch.process_group import leave_process_group

    main()
    leave_process_group()
