"""cpu-smoke end to end: real tool calls on real videos through ParaGRPOTrainer."""

from __future__ import annotations

import copy
import dataclasses
import json
from collections import defaultdict

import torch


def test_runs_the_configured_steps_with_executed_tool_calls(smoke_run):
    run_dir, summary, probe = smoke_run
    assert summary["global_step"] == 3
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2, 3]
    for key in (
        "reward/acc",
        "reward/fmt",
        "reward/anchor",
        "reward/tool",
        "tools/kappa",
        "tools/calls_per_episode",
        "tools/parse_failure_rate",
        "tools/error_rate",
        "groups/zero_variance_share",
        "frames/k_mean",
        "episode/turns",
        "completions/mean_length",
        "loss",
    ):
        assert key in rows[0], key
    records = [r for ro in probe.rollouts for r in ro["records"]]
    assert all(r.status == "ok" for r in records)
    assert sum(c.status == "ok" for r in records for c in r.calls) >= 3 * len(records) // 2
    assert all(r.tool_counts.executed_ok >= 1 for r in records)
    assert rows[0]["tools/kappa"] > 0
    config = json.loads((run_dir / "config.json").read_text())
    assert config["trainer_resolved"]["first_turn_text"].count("crop_video") == 3


def test_tool_turn_tokens_are_masked_out_of_the_loss(smoke_run):
    _, _, probe = smoke_run
    tok = probe.trainer._tokenizer
    resp_open = tok.convert_tokens_to_ids("<tool_response>")
    call_close = tok.convert_tokens_to_ids("</tool_call>")
    image_pad = tok.convert_tokens_to_ids("<|image_pad|>")
    for ro, out in zip(probe.rollouts, probe.outputs, strict=True):
        for i, rec in enumerate(ro["records"]):
            comp = rec.stream.token_ids[rec.stream.prompt_len :]
            mask = out["tool_mask"][i, : len(comp)].tolist()
            assert mask == rec.stream.loss_mask[rec.stream.prompt_len :]
            assert 0 < sum(mask) < len(comp)  # generated turns train, the tool turn does not
            ids = torch.tensor(comp)
            m = torch.tensor(mask)
            # the engine's tool turn opens with <tool_response> and is masked (the sampled turns
            # of a random model may hold that token too, and those are trained as generated)
            assert (ids[m == 0] == resp_open).any()
            assert not m[ids == image_pad].any()  # tool frames are context, never targets
            assert m[ids == call_close].all()  # the model's own structural tokens are trained
            assert out["tool_mask"][i, len(comp) :].sum() == 0  # padding never trains


def test_every_image_of_the_episode_reaches_the_loss_forward(smoke_run):
    _, _, probe = smoke_run
    for ro, out in zip(probe.rollouts, probe.outputs, strict=True):
        for i, (rec, inp) in enumerate(zip(ro["records"], ro["episode_inputs"], strict=True)):
            assert (
                out["num_images"][i] == len(rec.stream.images) > inp.frames_k
            )  # overview + tool frames
            n_pad = int((torch.tensor(rec.stream.token_ids) == probe.trainer._image_pad).sum())
            assert n_pad == int(torch.as_tensor(rec.stream.image_grid_thw).prod(-1).sum()) // 4
        assert out["pixel_values"].shape[0] == int(out["image_grid_thw"].prod(-1).sum())
        assert (
            out["mm_token_type_ids"].sum()
            == (
                torch.cat([out["prompt_ids"], out["completion_ids"]], 1) == probe.trainer._image_pad
            ).sum()
        )
    # The loss forward (grad on) ran the vision tower on every patch row of the batch.
    grad_rows = [rows for grad, rows in probe.visual_calls if grad]
    assert grad_rows, "the loss forward never ran the vision tower"
    assert sorted(grad_rows) == sorted(int(o["pixel_values"].shape[0]) for o in probe.outputs)
    assert probe.loss_image_rows == [int(o["pixel_values"].shape[0]) for o in probe.outputs]


def test_frames_gating_same_k_within_a_group_different_across_prompts(smoke_run):
    _, _, probe = smoke_run
    k_of = defaultdict(set)
    for ro in probe.rollouts:
        for inp, rec in zip(ro["episode_inputs"], ro["records"], strict=True):
            k_of[(ro["epoch"], inp.id)].add(inp.frames_k)
            assert len(rec.overview_times) == inp.frames_k
    assert all(len(ks) == 1 for ks in k_of.values())  # one K per group
    assert len({next(iter(ks)) for ks in k_of.values()}) > 1  # K varies across prompts


def test_anchor_terms_nonzero_under_the_think_prefix(smoke_run):
    from paravt.train.trainer import _turn_spans

    _, _, probe = smoke_run
    tok = probe.trainer._tokenizer
    think_close = tok.convert_tokens_to_ids("</think>")
    structural = [
        tok.convert_tokens_to_ids(t) for t in ("</think>", "</tool_call>", "<answer>", "</answer>")
    ]
    for ro in probe.rollouts:
        for rec, b in zip(ro["records"], ro["breakdowns"], strict=True):
            assert (
                rec.prefix == "<think>\n"
                and rec.stream.token_ids[rec.stream.prompt_len - 1] != think_close
            )
            assert b.anchor > 0  # the forced first turn closes its pre-filled <think>
        adv = ro["advantages"]
        assert adv.dim() == 2  # token-level anchoring: per-token advantages
        comp = ro["completion_ids"]
        plain = ro["tool_mask"] == 1
        for t in structural:
            plain &= comp != t
        for i, rec in enumerate(ro["records"]):  # a turn's last token may carry the penalty
            for _, end in _turn_spans(rec):
                plain[i, end - 1] = False
        rows_adv = adv[:, :1].expand_as(adv)
        assert torch.equal(adv[plain], rows_adv[plain])  # the bonus sits only on structural tokens
    # the forced first turn's </think> is credited wherever the group's rewards vary
    credited = [
        ro["advantages"][i][_turn_spans(rec)[0][0] : _turn_spans(rec)[0][1]]
        for ro in probe.rollouts
        for i, (rec, flat) in enumerate(zip(ro["records"], ro["flat"], strict=True))
        if not flat
    ]
    assert credited and all(len(set(c.tolist())) > 1 for c in credited)


def test_checkpoint_is_safetensors_and_reloads_with_from_pretrained(smoke_run):
    from transformers import AutoModelForImageTextToText, AutoProcessor

    run_dir, summary, probe = smoke_run
    ckpt = run_dir / "checkpoint-2"
    assert (ckpt / "model.safetensors").is_file() and not list(ckpt.glob("pytorch_model*.bin"))
    assert (ckpt / "optimizer.pt").is_file() and (ckpt / "scheduler.pt").is_file()
    model = AutoModelForImageTextToText.from_pretrained(ckpt)
    final = AutoModelForImageTextToText.from_pretrained(summary["final_model"])
    AutoProcessor.from_pretrained(summary["final_model"])
    changed = [
        k
        for k, v in final.state_dict().items()
        if k in probe.initial_state and not torch.equal(v, probe.initial_state[k])
    ]
    assert changed, "training did not change any weight"
    assert sum(p.numel() for p in model.parameters()) == sum(p.numel() for p in final.parameters())


def test_image_token_feature_mismatch_is_refused(smoke_run):
    import copy

    import pytest

    from paravt.train.trainer import FeatureMismatchError

    _, _, probe = smoke_run
    rec = copy.copy(probe.rollouts[0]["records"][0])
    rec.stream = copy.copy(rec.stream)  # the shared record's stream stays as it was
    pad = probe.trainer._image_pad
    cut = rec.stream.token_ids.index(pad)
    rec.stream.token_ids = (
        rec.stream.token_ids[:cut] + rec.stream.token_ids[cut + 1 :]
    )  # one image token lost
    with pytest.raises(FeatureMismatchError, match="image-pad tokens"):
        probe.trainer._row_from_record(rec)
    rec.stream.image_grid_thw = None
    with pytest.raises(FeatureMismatchError, match="no image features"):
        probe.trainer._row_from_record(rec)


def test_gradient_accumulation_rolls_out_once_per_step_and_splits_the_loss(
    tmp_path, shared_videos, train_probe, smoke_args
):
    """4 episodes a step as 2 micro-batches of 2: one rollout of all 4 per optimizer step (the
    group advantage needs the whole group), then 2 loss forwards of 2 episodes each. The toy
    experiment's RL runs this way to stay in memory at K = 64."""
    from paravt.train.run import load_command_config, run_training

    run_dir = tmp_path / "run"
    cfg = load_command_config(
        "cpu-smoke",
        smoke_args(
            run_dir,
            shared_videos,
            "engine.max_new_tokens=32",
            "trainer.max_steps=2",
            "trainer.per_device_train_batch_size=2",
            "trainer.gradient_accumulation_steps=2",
        ),
    )
    probe = train_probe()
    summary = run_training(cfg, on_trainer=probe.attach)
    assert summary["global_step"] == 2
    assert [len(ro["records"]) for ro in probe.rollouts] == [4, 4]
    assert len(probe.loss_image_rows) == 4  # 2 steps x 2 micro-batches
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    for ro in probe.rollouts:  # both members of a group in the one rollout, with one K
        ks = defaultdict(set)
        for inp in ro["episode_inputs"]:
            ks[inp.id].add(inp.frames_k)
        assert sorted(len(v) for v in ks.values()) == [1, 1]


def test_a_truncated_episode_leaves_the_loss_and_padding_keeps_pad_to_multiple_of(smoke_run):
    """TRL's mask_truncated_completions and pad_to_multiple_of, honoured by the override on the
    smoke run's real rows: an episode whose last turn hit the token limit adds nothing to the loss
    (the others keep theirs), and both padded widths are multiples of the setting."""
    _, _, probe = smoke_run
    trainer = probe.trainer
    records = probe.rollouts[0]["records"]
    edited = copy.deepcopy(records[0])
    for reason, truncated in (("length", True), ("stop", False)):
        edited.turns[-1].finish_reason = reason
        assert trainer._row_from_record(edited).truncated is truncated
    rows = [trainer._row_from_record(r) for r in records]
    live = [i for i, r in enumerate(rows) if r.ok and sum(r.mask) > 0]
    assert len(live) >= 2
    cut = live[0]
    rows = [dataclasses.replace(r, truncated=i == cut) for i, r in enumerate(rows)]
    saved = trainer.mask_truncated_completions, trainer.pad_to_multiple_of
    try:
        trainer.mask_truncated_completions, trainer.pad_to_multiple_of = False, None
        plain = trainer._collate(rows, torch.device("cpu"))
        trainer.mask_truncated_completions, trainer.pad_to_multiple_of = True, 8
        masked = trainer._collate(rows, torch.device("cpu"))
    finally:
        trainer.mask_truncated_completions, trainer.pad_to_multiple_of = saved
    cut_tokens = int(plain.loss_mask[cut].sum())
    assert cut_tokens > 0 and int(masked.loss_mask[cut].sum()) == 0
    for i in live[1:]:
        assert int(masked.loss_mask[i].sum()) == int(plain.loss_mask[i].sum())
    assert int(masked.num_items_in_batch) == int(plain.num_items_in_batch) - cut_tokens
    assert masked.prompt_ids.size(1) % 8 == 0 and masked.completion_ids.size(1) % 8 == 0
    assert masked.completion_ids.size(1) >= plain.completion_ids.size(1)
    mm = masked.mm_token_type_ids
    assert mm.shape == masked.prompt_completion_ids.shape


def test_each_rollout_crosses_as_groups_with_the_step_they_were_sampled_under(smoke_run):
    """The learner reads the rollout as ``RolloutGroup``s: the step's episodes in batch order,
    one K per group, every episode with the policy version (optimizer steps taken) that sampled
    it, which in the synchronous loop is the step itself."""
    _, _, probe = smoke_run
    for step, ro in enumerate(probe.rollouts):
        groups = ro["groups"]
        assert [r for g in groups for r in g.records] == ro["records"]
        assert [e for g in groups for e in g.inputs] == ro["episode_inputs"]
        for g in groups:
            assert {e.id for e in g.inputs} == {g.prompt_id}
            assert {e.frames_k for e in g.inputs} == {g.frames_k}
            assert g.policy_versions == [step] * len(g.records)


def test_the_recipe_as_shipped_updates_the_model_from_its_first_step(tmp_path, monkeypatch):
    """cpu-smoke shows the update path: rewards differ within a group, so the loss or the
    gradient is non-zero at steps 1 and 2 (at 12 new tokens a turn every episode scored the
    same, and every step logged loss 0 and grad norm 0)."""
    from paravt.train.run import load_command_config, run_training

    monkeypatch.chdir(tmp_path)
    cfg = load_command_config(
        "cpu-smoke",
        (f"output_dir={tmp_path / 'run'}", "trainer.max_steps=2", "trainer.save_steps=10"),
    )
    run_training(cfg)
    rows = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    for r in rows:
        assert r["reward_std"] > 0 and r["groups/zero_variance_share"] < 1, r
        assert r["grad_norm"] > 0 or r["loss"] != 0, r
