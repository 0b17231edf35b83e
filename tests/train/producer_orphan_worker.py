"""The trainer of ``test_async_training``'s orphan test: ``paravt train`` on the cpu-smoke
recipe at ``max_staleness = 2`` with the producer in a child process (``trainer.producer:
process``) against the stand-in server the test started. After step 1 it writes its rollout
process's pid to ``argv[4]`` and stops in the learner's thread, so the test can SIGKILL this
process with the child running.

``argv``: run folder, video folder, model folder, pid file, server URL.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path


def main() -> None:
    from transformers import TrainerCallback

    from paravt.train.run import load_command_config, run_training

    run_dir, videos, model, pid_file, url = sys.argv[1:6]
    cfg = load_command_config(
        "cpu-smoke",
        (
            f"output_dir={run_dir}", "data.path=builtin:smoke", f"data.video_root={videos}",
            f"model={model}", "trainer.use_vllm=true", "trainer.vllm_mode=server",
            f"trainer.vllm_server_base_url={url}", "trainer.vllm_check_weights=false",
            "trainer.vllm_importance_sampling_mode=token_truncate", "trainer.max_staleness=2",
            "trainer.producer=process", "trainer.max_steps=4", "trainer.save_steps=100",
        ),
    )  # fmt: skip

    def attach(trainer) -> None:
        class Hold(TrainerCallback):
            def on_step_end(self, args, state, control, **kw):
                Path(pid_file).write_text(str(trainer._async.child.pid))
                time.sleep(600)  # killed here by the test

        trainer.add_callback(Hold())

    run_training(cfg, on_trainer=attach)


if __name__ == "__main__":
    main()
