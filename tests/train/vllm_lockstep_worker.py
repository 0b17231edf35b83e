"""One rank of ``test_two_ranks_with_different_rounds_stay_in_lockstep`` (run under torchrun).

``argv``: model folder, video, output folder. Rank 0 holds the (in-process) vLLM server and runs
two episodes that take three generate calls (a forced tool turn, sub-agent summaries of the
windows, the forced answer); rank 1 runs three one-round episodes (``direct``) with another
budget. Both do two optimizer steps' rollouts, then write ``rank{r}.json``: each episode's status
and turn count, the (prompt, completion) pairs this rank got back, weight pushes, filler prompts,
and on rank 0 every (prompt, completion) the server produced.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import torch


def main() -> None:
    from accelerate import Accelerator
    from accelerate.utils import gather_object
    from transformers import AutoModelForImageTextToText, AutoProcessor

    sys.path.insert(0, str(Path(__file__).parent))
    from fake_vllm import FakeVLLMServer, ServerlessVLLMGeneration
    from test_vllm_backend import FORCED, _engine_config, _episodes

    from paravt.agent.engine import EpisodeEngine
    from paravt.rollout.vllm import VLLMBackend

    model_dir, video, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    acc = Accelerator(cpu=True)
    rank = acc.process_index
    model = AutoModelForImageTextToText.from_pretrained(model_dir, dtype=torch.float32).eval()
    processor = AutoProcessor.from_pretrained(model_dir)
    server = FakeVLLMServer(copy.deepcopy(model), processor) if rank == 0 else None
    generator = ServerlessVLLMGeneration(
        model=model, accelerator=acc, processing_class=processor, mode="server", server=server
    )
    pairs: list = []
    trl_generate = generator.generate

    def logged(prompts, images, num_generations, profiler=None):
        result = trl_generate(prompts, images, num_generations, profiler)
        pairs.extend(zip(prompts, result[1], strict=True))
        return result

    generator.generate = logged
    backend = VLLMBackend(
        generator,
        processor,
        first_turn_text=FORCED if rank == 0 else None,
        world_size=acc.num_processes,
        gather=gather_object,
    )
    if rank == 0:
        config = _engine_config(max_turns=1, evidence="subagent", subagent_max_tokens=5)
        per_step = 2
    else:
        config = _engine_config(mode="direct", max_new_tokens=4, forced_tokens_mcq=4)
        per_step = 3
    engine = EpisodeEngine(backend, config)
    records = []
    for step in (0, 1):
        with backend.rollout(step):
            records.extend(engine.run(_episodes(video, per_step, tag=f"r{rank}s{step}-")))
    fillers = [p for p in pairs if p[0] == [backend.pad_token_id]]
    own = [(list(p), list(c)) for p, c in pairs if p != [backend.pad_token_id]]
    result = {
        "records": [(r.status if r.status == "ok" else r.error, len(r.turns)) for r in records],
        "pairs": own,
        "syncs": backend.syncs,
        "fillers": len(fillers),
        "server": [(list(s["prompt"]), s["completion"]) for s in server.served] if server else [],
    }
    (out / f"rank{rank}.json").write_text(json.dumps(result))
    acc.wait_for_everyone()


if __name__ == "__main__":
    from paravt.train.launch.process_group import leave_process_group

    main()
    leave_process_group()  # gloo's threads stop before exit: an abort at exit fails the launch
