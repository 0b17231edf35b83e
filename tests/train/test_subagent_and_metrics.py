"""Sub-agent trajectories in the loss; metrics file truncation on resume; ``paravt plot``; config errors."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner


@pytest.mark.parametrize("in_loss", [True, False])
def test_subagent_trajectories_join_the_loss_with_the_episode_advantage(
    tmp_path, shared_videos, in_loss, train_probe, smoke_args
):
    from paravt.train.run import load_command_config, run_training

    cfg = load_command_config(
        "cpu-smoke",
        smoke_args(
            tmp_path / "run",
            shared_videos,
            "engine.evidence=subagent",
            f"trainer.subagent_in_loss={in_loss}",
            "trainer.per_device_train_batch_size=2",
            "trainer.max_steps=1",
            "engine.max_turns=1",
            "trainer.save_steps=100",
        ),
    )
    probe = train_probe()
    run_training(cfg, on_trainer=probe.attach)
    ro, out = probe.rollouts[0], probe.outputs[0]
    records = ro["records"]
    subs = [s for r in records for s in r.subagents]
    assert (
        len(records) == 2 and len(subs) >= 2
    )  # every executed window was summarised by the sub-agent
    n_rows = out["completion_ids"].shape[0]
    assert n_rows == (len(records) + len(subs) if in_loss else len(records))
    if in_loss:
        adv = out["advantages"] if out["advantages"].dim() == 1 else out["advantages"][:, 0]
        row = len(records)
        ep_adv = ro["advantages"] if ro["advantages"].dim() == 1 else ro["advantages"][:, 0]
        # the episodes' rows come first; the sub-agent rows follow them
        for r, a in zip(records, ep_adv[: len(records)], strict=True):
            for sub in r.subagents:
                comp = sub.stream.token_ids[sub.stream.prompt_len :]
                assert (
                    out["tool_mask"][row, : len(comp)].tolist()
                    == sub.stream.loss_mask[sub.stream.prompt_len :]
                )
                assert out["num_images"][row] == len(sub.stream.images) >= 2  # the window's frames
                assert float(adv[row]) == pytest.approx(float(a))  # the episode's advantage
                row += 1
        # every row's images reached the loss forward
        assert probe.loss_image_rows == [int(out["pixel_values"].shape[0])]
        assert out["pixel_values"].shape[0] == int(out["image_grid_thw"].prod(-1).sum())


def test_metrics_truncation_and_jsonl_callback(tmp_path):
    from paravt.train.metrics import MetricsJsonl, read_jsonl, step_metrics, truncate_after

    path = tmp_path / "metrics.jsonl"
    path.write_text(
        "".join(json.dumps({"step": s, "loss": 0.1}) + "\n" for s in (1, 2, 3, 4))
        + '{"step": 5, "lo'
    )
    assert truncate_after(path, 2) == 3  # rows 3, 4 and the torn line
    assert [r["step"] for r in read_jsonl(path)] == [1, 2]

    class State:
        is_world_process_zero = True
        global_step = 3
        epoch = 0.5

    cb = MetricsJsonl(path)
    cb.on_log(None, State(), None, logs={"loss": 0.2, "reward/fmt": 0.5})
    cb.on_log(None, State(), None, logs={"train_runtime": 1.0})
    assert [r["step"] for r in read_jsonl(path)] == [1, 2, 3]
    assert json.loads((tmp_path / "train_summary.json").read_text())["train_runtime"] == 1.0

    stats = [
        {
            "acc": 1.0,
            "fmt": 0.5,
            "anchor": 0.2,
            "tool": 0.3,
            "total": 1.8,
            "executed_ok": 2,
            "calls": 3,
            "call_errors": 1,
            "parse_errors": 0,
            "turns": 2,
            "tool_turns": 1,
            "k": 4,
            "gen_tokens": 10,
            "total_tokens": 20,
            "episode_error": 0,
        },
        {
            "acc": 0.0,
            "fmt": 0.1,
            "anchor": 0.0,
            "tool": 0.0,
            "total": 0.1,
            "executed_ok": 0,
            "calls": 0,
            "call_errors": 0,
            "parse_errors": 0,
            "turns": 1,
            "tool_turns": 0,
            "k": 8,
            "gen_tokens": 6,
            "total_tokens": 6,
            "episode_error": 0,
        },
    ]
    m = step_metrics(stats, 0.5, [4, 8, 16])
    assert (
        m["tools/kappa"] == 0.5
        and m["tools/calls_per_episode"] == 1.5
        and m["tools/calls_per_turn"] == 3.0
    )
    assert m["tools/error_rate"] == pytest.approx(1 / 3) and m["frames/k_mean"] == 6.0
    assert m["frames/k_share_4"] == 0.5 and m["frames/k_share_16"] == 0.0


def test_plot_draws_one_line_per_run(tmp_path):
    from paravt.cli.main import cli

    for name, fmt in (("paragrpo", 0.6), ("vanilla", 0.13)):
        d = tmp_path / name
        d.mkdir()
        (d / "metrics.jsonl").write_text(
            "".join(
                json.dumps({"step": s, "reward/fmt": fmt, "tools/kappa": 0.2}) + "\n"
                for s in range(1, 6)
            )
        )
    out = tmp_path / "fig.png"
    res = CliRunner().invoke(
        cli,
        [
            "plot",
            str(tmp_path / "paragrpo"),
            str(tmp_path / "vanilla"),
            "--out",
            str(out),
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["steps"] == {"paragrpo": 5, "vanilla": 5}
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    res = CliRunner().invoke(cli, ["plot", str(tmp_path), "--out", str(out)])
    assert res.exit_code != 0


def test_bad_config_is_a_user_error_with_exit_2(tmp_path):
    from paravt.cli.common import run_guarded
    from paravt.cli.main import cli

    assert run_guarded(cli, ["train", "--config", "cpu-smoke", "--set", "trainer.max_stepz=1"]) == 2
    assert run_guarded(cli, ["train", "--config", "no-such-recipe"]) == 2
    assert run_guarded(cli, ["train", "--config", "cpu-smoke", "--set", "engine.mode=fast"]) == 2
    assert (
        run_guarded(
            cli, ["train", "--config", "cpu-smoke", "--set", f"output_dir={tmp_path}/r", "--resume"]
        )
        == 2
    )  # nothing to resume from
    from paravt.train.run import load_command_config, para_config

    # the paper recipes are written for 8 ranks (7 prompts x 8 generations); on one process use 8 per device
    one_proc = (
        "trainer.bf16=false",
        "trainer.use_cpu=true",
        "trainer.per_device_train_batch_size=8",
    )
    for name in ("paragrpo", "vanilla_grpo", "vanilla_grpo-sync", "cpu-smoke"):
        assert load_command_config(name, one_proc).trainer
    paper = para_config(load_command_config("paragrpo", one_proc))
    assert paper.rewards.anchor_lambda == 0.5 and paper.frames_gating
    assert paper.engine.think_prefix == "<think>\n"
    assert (
        paper.gating_choices == [4, 8, 16, 32, 64]
        and paper.beta == 0.0  # the KL is the reward's, as the reference has it
        and paper.rewards.kl_in_reward == 0.01
        and paper.temperature == 0.7
    )
    vanilla = para_config(load_command_config("vanilla_grpo", one_proc))
    assert vanilla.rewards.anchor_lambda == 0 and not vanilla.frames_gating
    assert vanilla.engine.think_prefix == ""
    # the reference's layout, as paragrpo's: a server, staleness 2, the decoupled loss
    assert vanilla.use_vllm and vanilla.vllm_mode == "server" and vanilla.max_staleness == 2
    assert vanilla.vllm_importance_sampling_mode == paper.vllm_importance_sampling_mode
    sync = para_config(load_command_config("vanilla_grpo-sync", one_proc))
    assert not sync.use_vllm and sync.max_staleness == 0 and sync.rewards == vanilla.rewards
    from paravt.rollout.vllm import is_vllm_available

    if not is_vllm_available():  # use_vllm=true without vLLM: the fix, before TRL builds anything
        from paravt.errors import ConfigError
        from paravt.train.trainer import ParaGRPOTrainer

        with pytest.raises(ConfigError, match="use_vllm=false"):
            ParaGRPOTrainer(
                model=None,
                args=para_config(load_command_config("cpu-smoke", ("trainer.use_vllm=true",))),
            )
