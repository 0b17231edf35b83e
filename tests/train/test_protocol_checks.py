"""docs/PROTOCOL.md §5 details of the trainer: think prefix counted once, token anchor bonus only on
generated tokens, logged zero-variance share / K histogram / κ match the episodes, run folder
guard."""

from __future__ import annotations

import json
import math

import pytest
import torch


def test_rewards_see_the_think_prefix_exactly_once(smoke_run):
    from paravt.rewards import compose
    from paravt.rewards.format import scored_text
    from paravt.schema.tools import ToolCounts

    _, _, probe = smoke_run
    cfg = probe.trainer._reward_config()
    seen = 0
    for ro in probe.rollouts:
        for rec, b in zip(ro["records"], ro["breakdowns"], strict=True):
            prefix = rec.prefix
            texts = [t.text for t in rec.turns]
            assert prefix == "<think>\n" and len(texts) > 1
            assert all(t.startswith(prefix) for t in texts)  # every turn was pre-filled
            generated = [t[len(prefix) :] for t in texts]  # the model's own text, per turn
            for text, gen in zip(texts, generated, strict=True):
                assert scored_text(prefix, text).count("<think>") == 1 + gen.count("<think>")
            tc = rec.tool_counts
            execution = ToolCounts(tc.parseable_calls, tc.executed_ok, tc.errors)
            once = compose(
                prefix,
                generated,
                execution,
                rec.gold,
                rec.question_type,
                rec.options,
                cfg,
                answer=rec.prediction if rec.prediction is not None else "",
            )
            assert b.to_dict() == once.to_dict()  # what trained == prefix + generated, once a turn
            seen += 1
    assert seen


def test_turn_spans_are_the_generated_runs_and_prefills_are_prompt(smoke_run):
    """The trainer's turn boundaries come from the engine's counts; each later turn's pre-fill
    sits in the tool-turn delta, outside the loss."""
    from paravt.train.trainer import _turn_spans

    _, _, probe = smoke_run
    prefix_ids = probe.trainer._tokenizer.encode("<think>\n", add_special_tokens=False)
    for ro in probe.rollouts:
        for rec in ro["records"]:
            mask = rec.stream.loss_mask[rec.stream.prompt_len :]
            comp = rec.stream.token_ids[rec.stream.prompt_len :]
            spans = _turn_spans(rec)
            assert len(spans) == len(rec.turns) and spans[-1][1] == len(comp)
            inside = [0] * len(comp)
            for a, b in spans:
                inside[a:b] = [1] * (b - a)
            assert inside == mask
            for a, _ in spans[1:]:
                assert comp[a - len(prefix_ids) : a] == prefix_ids
                assert not any(mask[a - len(prefix_ids) : a])


def test_token_anchor_bonus_only_on_generated_structural_tokens(smoke_run):
    from paravt.rollout.streams import LossRow

    _, _, probe = smoke_run
    trainer = probe.trainer
    tok = trainer._tokenizer
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0

    def enc(text):
        return tok.encode(text, add_special_tokens=False)

    # row 0: generated text closing </think>, a tool turn quoting </think> and <answer>, generated
    # <answer>…</answer>, then padding; row 1: a failed episode (no loss, no bonus)
    gen1, tool, gen2 = (
        enc("Look.</think>"),
        enc("<answer>A</answer></think>"),
        enc("<answer>B</answer>"),
    )
    ids = gen1 + tool + gen2
    mask = [1] * len(gen1) + [0] * len(tool) + [1] * len(gen2)
    spans = [(0, len(gen1)), (len(gen1) + len(tool), len(ids))]
    width = len(ids) + 2
    rows = [
        LossRow([], ids, mask, [0.0] * len(ids), turns=spans, open_think=[False, False]),
        LossRow([], gen1, [0] * len(gen1), [0.0] * len(gen1), ok=False),
        LossRow([], ids, mask, [0.0] * len(ids), turns=spans, flat=True),
    ]
    completion_ids = torch.tensor(
        [ids + [pad, pad], gen1 + [pad] * (width - len(gen1)), ids + [pad, pad]], dtype=torch.long
    )
    loss_mask = torch.tensor([mask + [0, 0], [0] * width, mask + [0, 0]])
    bonus = trainer.token_anchor_bonus(rows, completion_ids, loss_mask)
    full = torch.tensor(trainer._token_bonus(ids, spans))
    m = torch.tensor(mask, dtype=torch.bool)
    assert full[~m].abs().sum() == 0  # turn spans hold only generated ids
    assert torch.equal(bonus[0, : len(ids)][m], full[m]) and full[m].abs().sum() > 0
    v = trainer.para_args.rewards.token_anchor_values
    assert float(bonus[0].sum()) == pytest.approx(v["</think>"] + v["<answer>"] + v["</answer>"])
    assert not bonus[0, : len(ids)][~m].any() and not bonus[0, len(ids) :].any()
    assert not bonus[1].any()
    assert not bonus[2].any()  # a zero-variance group gets no token-level anchor

    # In the real rollouts: every position outside the loss carries exactly the episode
    # advantage; inside, the bonus of the per-turn first-occurrence rule (none in a flat group).
    episodes = [
        json.loads(x) for x in (smoke_run[0] / "episodes" / "rank0.jsonl").read_text().splitlines()
    ]
    for step, ro in enumerate(probe.rollouts, start=1):
        base = [e["advantage"] for e in episodes if e["step"] == step]
        adv, mask = ro["advantages"], ro["tool_mask"]
        assert adv.dim() == 2 and len(base) == adv.shape[0]
        for i, (a, rec, flat) in enumerate(zip(base, ro["records"], ro["flat"], strict=True)):
            outside = adv[i][mask[i] == 0]
            assert outside.numel() and torch.allclose(outside, torch.full_like(outside, a))
            row = trainer._row_from_record(rec)
            expected = torch.zeros(adv.shape[1])
            if not flat:
                b = trainer._token_bonus(row.completion, row.turns, row.open_think)
                expected[: len(b)] = torch.tensor(b)
            expected = expected * mask[i]
            assert torch.allclose(adv[i] - a, expected, atol=1e-6)


def test_logged_zero_variance_share_k_histogram_and_kappa_match_the_episodes(smoke_run):
    run_dir, _, probe = smoke_run
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    G = probe.trainer.num_generations
    choices = list(probe.trainer.para_args.gating_choices)
    assert len(rows) == len(probe.rollouts)
    for row, ro in zip(rows, probe.rollouts, strict=True):
        totals = [b.total for b in ro["breakdowns"]]
        groups = [totals[i : i + G] for i in range(0, len(totals), G)]
        flat = [math.isclose(min(g), max(g), abs_tol=1e-6) for g in groups]
        assert row["groups/zero_variance_share"] == pytest.approx(sum(flat) / len(groups))
        ks = [e.frames_k for e in ro["episode_inputs"]]
        shares = {k: row[f"frames/k_share_{k}"] for k in choices}
        assert sum(shares.values()) == pytest.approx(1.0)
        for k in choices:
            assert shares[k] == pytest.approx(ks.count(k) / len(ks))
        kappa = sum(r.tool_counts.executed_ok > 0 for r in ro["records"]) / len(ro["records"])
        assert row["tools/kappa"] == pytest.approx(kappa)
        assert row["frames/k_mean"] == pytest.approx(sum(ks) / len(ks))


def test_fresh_run_into_a_folder_with_checkpoints_is_refused(
    tmp_path, shared_videos, smoke_args, capsys
):
    from paravt.cli.common import run_guarded
    from paravt.cli.main import cli
    from paravt.errors import UserError
    from paravt.train.run import load_command_config, run_training

    run_dir = tmp_path / "run"
    (run_dir / "checkpoint-2").mkdir(parents=True)
    (run_dir / "metrics.jsonl").write_text('{"step": 1}\n')
    overrides = smoke_args(run_dir, shared_videos)
    with pytest.raises(UserError, match="checkpoint-2.*--resume"):
        run_training(load_command_config("cpu-smoke", overrides))
    assert (run_dir / "metrics.jsonl").read_text() == '{"step": 1}\n'  # nothing was touched
    argv = ["train", "--config", "cpu-smoke"]
    for item in overrides:
        argv += ["--set", item]
    assert run_guarded(cli, argv) == 2
    assert "checkpoint-2" in capsys.readouterr().err


def test_distributed_and_vllm_keys_through_set(tmp_path):
    from paravt.errors import ConfigError
    from paravt.train.run import load_command_config, para_config

    fsdp = para_config(
        load_command_config(
            "cpu-smoke",
            (
                "trainer.fsdp=true",
                "trainer.fsdp_config.version=2",
                "trainer.fsdp_config.cpu_offload=false",
                "trainer.fsdp_config.state_dict_type=FULL_STATE_DICT",
            ),
        )
    )
    assert fsdp.fsdp is True
    assert fsdp.fsdp_config["version"] == 2 and fsdp.fsdp_config["cpu_offload"] is False
    assert fsdp.fsdp_config["state_dict_type"] == "FULL_STATE_DICT"
    ds = tmp_path / "ds.json"
    ds.write_text('{"zero_optimization": {"stage": 2}}')
    try:
        import deepspeed  # noqa: F401
    except ImportError:
        with pytest.raises(ConfigError, match="deepspeed"):
            load_command_config("cpu-smoke", (f"trainer.deepspeed={ds}",))
    # TRL's vLLM keys pass through as given (whether vLLM is installed is checked at training)
    vllm = para_config(
        load_command_config(
            "cpu-smoke",
            (
                "trainer.use_vllm=true",
                "trainer.vllm_mode=server",
                "trainer.vllm_server_host=10.0.0.7",
                "trainer.vllm_server_port=8011",
                "trainer.vllm_importance_sampling_mode=token_truncate",
            ),
        )
    )
    assert vllm.use_vllm is True and vllm.vllm_mode == "server"
    assert (vllm.vllm_server_host, vllm.vllm_server_port) == ("10.0.0.7", 8011)
    assert vllm.vllm_importance_sampling_mode == "token_truncate"
    recorded = para_config(load_command_config("cpu-smoke", ("trainer.vllm_mode=colocate",)))
    assert recorded.vllm_mode == "colocate" and recorded.use_vllm is False
    # what cannot serve multi-turn episodes is refused before any model loads
    for bad, why in (
        ("trainer.vllm_mode=remote", "use server or colocate"),
        ("trainer.vllm_structured_outputs_regex=.*", "every turn"),
    ):
        with pytest.raises(ConfigError, match=why):
            load_command_config("cpu-smoke", ("trainer.use_vllm=true", bad))


def test_rollout_generate_is_lock_stepped_only_when_forwards_are_collective(smoke_run):
    """ZeRO-3 with gathered weights (the default) must not sync ranks per token: episodes on two
    ranks may need different numbers of rounds, and synced generate calls would then hang."""
    from paravt.train.trainer import generation_sync

    assert generation_sync(fsdp=False, zero3=False, gather_for_generation=True) is False
    assert generation_sync(fsdp=False, zero3=True, gather_for_generation=True) is False
    assert generation_sync(fsdp=False, zero3=True, gather_for_generation=False) is None
    assert generation_sync(fsdp=True, zero3=False, gather_for_generation=True) is None
    assert smoke_run[2].trainer._backend.synced_gpus is False


def test_workers_that_did_not_form_a_process_group_are_refused(
    tmp_path, shared_videos, smoke_args, monkeypatch
):
    """torchrun / accelerate --multi_gpu on a GPU-less machine without use_cpu=true: every worker
    would train alone as rank 0 into the same run folder."""
    from paravt.errors import ConfigError
    from paravt.train.launch.process_group import check_process_group
    from paravt.train.run import load_command_config, run_training

    run_dir = tmp_path / "run"
    cfg = load_command_config(
        "cpu-smoke", smoke_args(run_dir, shared_videos, "trainer.use_cpu=false")
    )
    monkeypatch.setenv("WORLD_SIZE", "2")  # what the launcher tells each worker
    with pytest.raises(ConfigError, match="use_cpu=true"):
        run_training(cfg)
    assert not run_dir.exists()
    check_process_group(2)  # joined: fine
    monkeypatch.delenv("WORLD_SIZE")
    check_process_group(1)  # plain python: fine


def test_score_episode_passes_the_turns_so_only_the_final_turn_answers():
    """End to end from the engine's record: turn 0 answered and called a tool, the
    final turn did not answer; the answer terms must not read turn 0's answer."""
    from paravt.rewards import RewardConfig
    from paravt.schema.episodes import EpisodeRecord, TurnRecord
    from paravt.train.trainer import ParaGRPOTrainer

    call = (
        '<tool_call>{"name": "crop_video", "arguments": {"start_time": 1, "end_time": 2}}'
        "</tool_call>"
    )
    rec = EpisodeRecord(
        id="e",
        video="v.mp4",
        question="q",
        question_type="mcq",
        options=["a", "b"],
        gold="A",
        mode="parallel",
        evidence="frames",
        prefix="<think>\n",
    )
    rec.turns = [
        TurnRecord(index=0, text="<think>\nLook at the start.</think><answer>A</answer>" + call),
        TurnRecord(index=1, text="<think>\nThe start shows it.</think>"),
    ]
    rec.stream.token_ids = [1, 2, 3]
    rec.tool_counts.parseable_calls = rec.tool_counts.executed_ok = 1
    rec.prediction = "The start shows it."
    b = ParaGRPOTrainer.score_episode(None, rec, RewardConfig())
    assert b.fmt_base == pytest.approx(0.2 + 0.3 + 0.1)  # think, think before call, balanced
    assert b.anchor == pytest.approx(0.4)  # closed, but no think → answer flow in the final turn


def test_system_prompt_file_reaches_the_engine_and_a_missing_one_is_refused(tmp_path):
    """``engine.system_prompt`` (e.g. the toy task's short prompt) replaces the packaged prompt
    in the episodes the trainer runs; a path that is not a file fails before any model loads."""
    from types import SimpleNamespace

    from paravt.errors import ConfigError
    from paravt.train.run import load_command_config, para_config
    from paravt.train.trainer import ParaGRPOTrainer

    prompt = tmp_path / "short.txt"
    prompt.write_text("You answer with crop_video.\n")
    args = para_config(load_command_config("cpu-smoke", (f"engine.system_prompt={prompt}",)))
    engine = ParaGRPOTrainer._engine_config(SimpleNamespace(para_args=args), "train")
    assert engine.system_prompt == str(prompt)
    default = para_config(load_command_config("cpu-smoke", ()))
    assert (
        ParaGRPOTrainer._engine_config(SimpleNamespace(para_args=default), "train").system_prompt
        is None
    )
    with pytest.raises(ConfigError, match="system_prompt"):
        para_config(
            load_command_config("cpu-smoke", (f"engine.system_prompt={tmp_path / 'none.txt'}",))
        )
