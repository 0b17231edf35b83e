"""The memory plan (``paravt.train.launch.plan``) against memory measured on the CPU, and its rules.

The states (weights, gradients, AdamW) are checked against the bytes a real training step
allocates: a forward with an image, a backward and an AdamW step on the tiny and toy models (fp32
and bf16), and one optimizer step of the real trainer (``run_training`` on ``cpu-smoke``). The
tolerance is 1%: the plan counts every parameter, so only the optimizer's scalar ``step`` tensors
differ. (Resident size is no measure at this scale: the toy step's grown by -2 MB to +66 MB
against 66 MB planned, as freed memory was reused.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from paravt.train.launch.plan import (
    GB,
    ContextBudget,
    Launch,
    ModelShape,
    fix_for,
    memory_plan,
    model_shape,
    shape_of_model,
    strategy_of,
    tokens_per_frame,
    world_size_of,
)

QWEN3_VL_8B = Path(__file__).parent / "data" / "qwen3-vl-8b"
TOL = 0.01


def _tensor_bytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))


def _real_step(model, processor, dtype) -> dict:
    """One forward (text + one image), backward and AdamW step; the bytes of each state."""
    model = model.to(dtype).train()
    tok = processor.tokenizer
    pad = tok.convert_tokens_to_ids("<|image_pad|>")
    special = ("<|vision_start|>", "<|image_pad|>", "<|vision_end|>")
    ids = [tok.convert_tokens_to_ids(t) for t in special] + tok("the video shows").input_ids
    ids = torch.tensor([ids])
    patch = model.config.vision_config.patch_size
    pv = torch.randn(4, 3 * 2 * patch * patch, dtype=dtype)
    out = model(
        input_ids=ids,
        pixel_values=pv,
        image_grid_thw=torch.tensor([[1, 2, 2]]),
        mm_token_type_ids=(ids == pad).long(),
        labels=ids,
    )
    out.loss.backward()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    opt.step()
    states = [t for s in opt.state.values() for k, t in s.items() if k != "step"]
    return {
        "weights": _tensor_bytes(model.parameters()),
        "gradients": _tensor_bytes(p.grad for p in model.parameters()),
        "optimizer (AdamW)": _tensor_bytes(states),
    }


def _ctx(**kw) -> ContextBudget:
    base = dict(
        frames=4,
        overview_tokens_per_frame=2,
        window_tokens_per_frame=2,
        max_turns=2,
        max_parallel=5,
        window_frames=2,
        max_new_tokens=12,
        forced_tokens=12,
        evidence="frames",
        subagent_max_tokens=12,
    )
    base.update(kw)
    return ContextBudget(**base)


def _launch(**kw) -> Launch:
    base = dict(
        strategy="ddp",
        world_size=1,
        bf16=False,
        beta=0.0,
        micro_batch=1,
        rollout_batch=4,
        gradient_checkpointing=False,
    )
    base.update(kw)
    return Launch(**base)


@pytest.mark.parametrize("preset", ["tiny", "toy"])
@pytest.mark.parametrize("bf16", [False, True])
def test_states_match_the_bytes_a_real_cpu_step_allocates(preset, bf16):
    from paravt.models.tiny import build_tiny

    model, processor = build_tiny("qwen3-vl", preset=preset)
    shape = shape_of_model(model, preset)
    plan = memory_plan(shape, _launch(bf16=bf16), _ctx())
    measured = _real_step(model, processor, torch.bfloat16 if bf16 else torch.float32)
    for name, got in measured.items():
        want = plan.item(name).bytes
        assert abs(got - want) <= TOL * want, (name, got, want)
    assert plan.item("reference model").bytes == 0  # beta = 0: TRL builds none
    assert plan.item("fp32 master").bytes == 0


def test_states_match_one_optimizer_step_of_the_real_trainer(tmp_path, shared_videos, smoke_args):
    """cpu-smoke, one step: params + grads + AdamW states at HF's optimizer step."""
    from transformers import TrainerCallback

    from paravt.train.launch.plan import plan_for_command
    from paravt.train.run import load_command_config, run_training

    seen: dict = {}

    class Measure(TrainerCallback):
        def __init__(self, trainer):
            self.trainer = trainer

        def on_optimizer_step(self, args, state, control, **kw):
            model, opt = self.trainer.model, self.trainer.optimizer
            states = [t for s in opt.state.values() for k, t in s.items() if k != "step"]
            seen.update(
                weights=_tensor_bytes(model.parameters()),
                gradients=_tensor_bytes(p.grad for p in model.parameters() if p.grad is not None),
                optimizer=_tensor_bytes(states),
                ref=trainer_ref_bytes(self.trainer),
            )

    def trainer_ref_bytes(trainer) -> int:
        ref = getattr(trainer, "ref_model", None)
        return 0 if ref is None else _tensor_bytes(ref.parameters())

    cfg = load_command_config(
        "cpu-smoke",
        smoke_args(tmp_path / "run", shared_videos, "trainer.max_steps=1", "trainer.beta=0.04"),
    )
    run_training(cfg, on_trainer=lambda t: t.add_callback(Measure(t)))
    shape = model_shape(str(tmp_path / "run" / "tiny-qwen3-vl"))
    plan = plan_for_command(cfg, world_size=1, shape=shape)
    assert plan.launch.strategy == "ddp"
    for name, key in (
        ("weights", "weights"),
        ("gradients", "gradients"),
        ("optimizer (AdamW)", "optimizer"),
        ("reference model", "ref"),
    ):
        want = plan.item(name).bytes
        assert want > 0
        assert abs(seen[key] - want) <= TOL * want, (name, seen[key], want)


def test_qwen3_vl_8b_counts_its_published_parameters_from_config_alone():
    shape = model_shape(str(QWEN3_VL_8B))
    assert shape.params == 8_767_123_696  # "8.77B" on the model card
    assert (shape.layers, shape.hidden, shape.kv_heads, shape.head_dim) == (36, 4096, 8, 128)
    assert shape.factor == 32


def _qwen3_8b() -> ModelShape:
    return ModelShape(
        name="qwen3-vl-8b",
        params=8_767_123_696,
        trainable=8_767_123_696,
        layers=36,
        hidden=4096,
        intermediate=12288,
        kv_heads=8,
        head_dim=128,
        vocab=151936,
        factor=32,
        vision_hidden=1152,
        vision_depth=27,
        largest_unit=622_329_856,
    )


def _paper_ctx() -> ContextBudget:
    return _ctx(
        frames=64,
        overview_tokens_per_frame=49,
        window_tokens_per_frame=49,
        max_turns=3,
        max_parallel=5,
        window_frames=16,
        max_new_tokens=2048,
        forced_tokens=256,
        evidence="subagent",
        subagent_max_tokens=512,
    )


def test_plain_ddp_of_8b_holds_about_105_gb_of_states_and_is_refused_with_the_fix():
    launch = _launch(world_size=8, bf16=True, beta=0.01, micro_batch=1, rollout_batch=7)
    plan = memory_plan(_qwen3_8b(), launch, _paper_ctx())
    assert plan.phase_bytes("state") / GB == pytest.approx(105.2, abs=0.1)
    assert not plan.fits
    assert "ZeRO-3" in fix_for(plan)


@pytest.mark.parametrize("strategy", ["zero3", "fsdp2"])
def test_sharded_8b_fits_8x80_with_one_episode_a_loss_forward(strategy):
    shape, ctx = _qwen3_8b(), _paper_ctx()
    one = _launch(
        strategy=strategy,
        world_size=8,
        bf16=True,
        beta=0.01,
        rollout_batch=7,
        gradient_checkpointing=True,
    )
    plan = memory_plan(shape, one, ctx)
    assert plan.fits, plan.total / GB
    # 16 bytes a parameter over 8 GPUs (fp32 master included) + the sharded bf16 reference;
    # ZeRO-3 also holds its live parameters and buckets (zero3_items)
    zero3 = sum(i.bytes for i in plan.items if i.name.startswith("zero3:"))
    assert (zero3 > 0) == (strategy == "zero3")
    assert plan.phase_bytes("state") == pytest.approx(shape.params * (16 + 2) / 8 + zero3)
    seven = memory_plan(shape, _launch(**{**one.__dict__, "micro_batch": 7}), ctx)
    assert not seven.fits
    assert "per_device_train_batch_size=1" in fix_for(seven)


def test_context_and_token_rules():
    assert tokens_per_frame(32, 784, 50176) == 49
    assert tokens_per_frame(28, 784, 50176) == 64
    assert tokens_per_frame(32, 784, 1024) == 1
    ctx = _paper_ctx()
    # prompt text + overview + 3 turns + forced answer + 3 tool turns of 5 summaries
    assert ctx.context_tokens == 1536 + 64 * 57 + 3 * 2048 + 256 + 3 * 5 * (512 + 32)
    framed = _ctx(evidence="frames", window_frames=16, window_tokens_per_frame=49, max_turns=3)
    assert framed.tool_turn_tokens == 5 * (16 * 57 + 32)


def test_set_overrides_reach_the_plan_typed():
    """``--set`` leaves arrive as text; the plan reads them as YAML, as the trainer does."""
    from paravt.train.launch.plan import plan_for_command
    from paravt.train.run import load_command_config

    shape = model_shape(str(QWEN3_VL_8B))
    cfg = load_command_config(
        "cpu-smoke",
        ("trainer.frames_gating=true", "trainer.gating_choices=[4, 8]"),
    )
    plan = plan_for_command(cfg, world_size=8, strategy="zero3", shape=shape)
    assert plan.context.frames == 8


def test_strategy_and_world_size_come_from_the_launch(tmp_path):
    ds = tmp_path / "ds.json"
    ds.write_text(json.dumps({"zero_optimization": {"stage": 3}}))
    assert strategy_of({"deepspeed": str(ds)}) == "zero3"
    assert strategy_of({"deepspeed": {"zero_optimization": {"stage": 2}}}) == "zero2"
    assert strategy_of({"fsdp": True}) == "fsdp2"
    assert (
        strategy_of({}, {"distributed_type": "DEEPSPEED", "deepspeed_config": {"zero_stage": 3}})
        == "zero3"
    )
    assert strategy_of({}) == "ddp"
    assert world_size_of(None, {"num_processes": 8}, None) == 8
    assert world_size_of(None, {"num_processes": 8}, "4") == 4
    assert world_size_of(2, {}, "4") == 2


def test_cli_prints_the_table_and_refuses_what_cannot_fit(capsys):
    """The packaged paragrpo recipe on 8×80 GB: ZeRO-3 fits, plain DDP is refused (exit 2) with
    one line naming the fix. Runs without a GPU although the recipe says bf16."""
    from paravt.cli.main import main

    base = ["train", "--config", "paragrpo", "--set", f"model={QWEN3_VL_8B}", "--plan"]
    assert main([*base, "--world-size", "8", "--strategy", "zero3"]) == 0
    out = capsys.readouterr().out
    assert "reference model" in out and ": fits" in out
    assert main([*base, "--world-size", "8", "--strategy", "ddp", "--json"]) == 2
    captured = capsys.readouterr()
    assert json.loads(captured.out)["fits"] is False
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and "ZeRO-3" in err[0]


def test_train_start_warns_about_plain_ddp_of_an_8b_model_with_the_plan_numbers(caplog, tmp_path):
    from paravt.models.tiny import make_tiny_model
    from paravt.train.launch.startup import warn_if_plain_ddp_too_big
    from paravt.train.run import load_command_config, para_config

    cfg = load_command_config(
        "paragrpo",
        (f"model={QWEN3_VL_8B}", "trainer.bf16=false", "trainer.use_cpu=true")
        + ("trainer.gradient_accumulation_steps=8",),
    )
    args = para_config(cfg)
    with caplog.at_level("WARNING", logger="paravt.train.run"):
        message = warn_if_plain_ddp_too_big(cfg, args, str(QWEN3_VL_8B))
    assert message and message in caplog.text
    assert "plain DDP with a 8.8 B model" in message and "ZeRO-3" in message
    make_tiny_model(tmp_path / "tiny")
    small = load_command_config("cpu-smoke", ())
    assert warn_if_plain_ddp_too_big(small, para_config(small), str(tmp_path / "tiny")) is None


def test_the_colocate_default_share_is_trls():
    from trl import GRPOConfig

    from paravt.train.launch.plan import TRL_VLLM_GPU_MEMORY_UTILIZATION

    field = GRPOConfig.__dataclass_fields__["vllm_gpu_memory_utilization"]
    assert field.default == TRL_VLLM_GPU_MEMORY_UTILIZATION


def test_vllm_colocate_holds_its_share_and_server_mode_counts_the_trainer_side_only():
    shape, ctx = _qwen3_8b(), _paper_ctx()
    base = dict(
        strategy="zero3",
        world_size=8,
        bf16=True,
        beta=0.01,
        rollout_batch=7,
        gradient_checkpointing=True,
        use_vllm=True,
    )
    hf = memory_plan(shape, _launch(**{**base, "use_vllm": False}), ctx)
    co = memory_plan(shape, _launch(**base, vllm_gpu_memory_utilization=0.35), ctx)
    share = co.item("vllm engine (colocate)")
    assert share.bytes == pytest.approx(0.35 * 80 * GB) and share.phase == "state"
    assert co.phase_bytes("state") == pytest.approx(hf.phase_bytes("state") + share.bytes)
    # the rollout's KV cache and gathered weights live in vLLM's share, not beside it
    names = {i.name for i in co.items}
    assert "rollout: KV cache" not in names and "rollout: gathered weights" not in names
    assert co.fits
    asleep = memory_plan(shape, _launch(**base, vllm_sleep=True), ctx)
    assert asleep.item("vllm engine (colocate)").phase == "rollout"
    small = memory_plan(shape, _launch(**base, vllm_gpu_memory_utilization=0.2), ctx)
    assert small.total < small.gpu_bytes and not small.fits  # 16 GB cannot hold 17.5 GB
    assert "vllm_gpu_memory_utilization" in fix_for(small)
    server = memory_plan(shape, _launch(**base, vllm_mode="server"), ctx)
    assert server.item("vllm server").bytes == 0
    assert server.phase_bytes("state") == pytest.approx(hf.phase_bytes("state"))
    assert server.phase_bytes("rollout") == shape.largest_unit * 2


def test_step_time_is_the_stated_formula():
    from paravt.train.launch.step_time import GPUS, MFU, step_time

    shape, ctx = _qwen3_8b(), _paper_ctx()
    launch = _launch(
        strategy="zero3",
        world_size=8,
        bf16=True,
        beta=0.01,
        rollout_batch=7,
        accumulation=7,
        gradient_checkpointing=True,
    )
    plan = memory_plan(shape, launch, ctx)
    est = step_time(plan, GPUS["h100"])
    L = ctx.context_tokens
    forward = 2 * shape.params * L + 2 * shape.layers * shape.hidden * L * L
    # 7 rows × (forward + backward + recompute) and the reference's 7 forwards; no old policy
    assert est.loss_s == pytest.approx((4 * 7 + 7) * forward / (989e12 * MFU))
    assert est.decode_steps == 3 * 2048 + 256 + 3 * 512
    assert est.rollouts == 1 and est.gpus == 8
    assert est.step_s == pytest.approx(est.rollout_s + est.loss_s)
    # decoding is bandwidth-bound: H200 (4.8 TB/s) against H100 (3.35 TB/s), same FLOPs
    fast = step_time(plan, GPUS["h200"])
    assert est.decode_step_s / fast.decode_step_s == pytest.approx(4.8 / 3.35)
    assert fast.loss_s == pytest.approx(est.loss_s)
    # vLLM's importance sampling adds the old policy's forward
    vllm = step_time(
        memory_plan(shape, _launch(**{**launch.__dict__, "use_vllm": True}), ctx), GPUS["h100"]
    )
    assert vllm.loss_s == pytest.approx((4 * 7 + 7 + 7) * forward / (989e12 * MFU))
    served = memory_plan(
        shape, _launch(**{**launch.__dict__, "use_vllm": True, "vllm_mode": "server"}), ctx
    )
    assert step_time(served, GPUS["h100"], server_gpus=4).gpus == 12


def test_the_kl_as_a_reward_keeps_the_reference_model_in_the_plan():
    """With ``rewards.kl_in_reward`` (the reference recipes: beta 0) the trainer builds TRL's
    reference model anyway, and, with no sampler log-probs, runs the old policy's forward for the
    KL's behaviour log-probs: the plan counts both (before, beta 0 counted neither)."""
    from paravt.train.launch.plan import plan_for_command
    from paravt.train.launch.step_time import GPUS, step_time
    from paravt.train.run import load_command_config

    shape = model_shape(str(QWEN3_VL_8B))
    plain = load_command_config("cpu-smoke", ("trainer.beta=0",))
    kl = load_command_config("cpu-smoke", ("trainer.beta=0", "rewards.kl_in_reward=0.01"))
    without = plan_for_command(plain, world_size=8, strategy="zero3", shape=shape)
    with_kl = plan_for_command(kl, world_size=8, strategy="zero3", shape=shape)
    assert without.item("reference model").bytes == 0
    assert with_kl.item("reference model").bytes > 0
    assert with_kl.launch.old_for_kl and not without.launch.old_for_kl
    extra = step_time(with_kl, GPUS["h100"]).loss_s - step_time(without, GPUS["h100"]).loss_s
    assert extra > 0  # the reference's forward and the old policy's


def test_zero3_counts_its_live_parameters_buckets_and_the_cuda_nccl_allowance(tmp_path):
    """DeepSpeed's defaults: 1e9 live parameters (2 GB in bf16), a 5e8 reduce bucket and a 5e7
    prefetch bucket (1.1 GB), 1 GB of CUDA context and NCCL: 4.1 GB a rank at 8B, where the
    plan counted nothing. ``"auto"`` buckets follow transformers' rule (hidden², 0.9 × hidden²)."""
    from paravt.train.launch.plan import launch_of

    shape, ctx = _qwen3_8b(), _paper_ctx()
    base = dict(strategy="zero3", world_size=8, bf16=True, beta=0.01, rollout_batch=7)
    plan = memory_plan(shape, _launch(**base, gradient_checkpointing=True), ctx)
    assert plan.item("zero3: live parameters").bytes == pytest.approx(2.0e9)
    assert plan.item("zero3: buckets + CUDA/NCCL").bytes == pytest.approx(1.1e9 + 1.0e9)
    ds = tmp_path / "ds.json"
    ds.write_text(json.dumps({"zero_optimization": {
        "stage": 3, "reduce_bucket_size": "auto", "stage3_prefetch_bucket_size": "auto",
        "stage3_max_live_parameters": 3e8,
    }}))  # fmt: skip
    auto = launch_of({"deepspeed": str(ds), "bf16": True}, "zero3", 8)
    assert auto.zero3_reduce_bucket is None and auto.zero3_live_params == 3e8
    plan = memory_plan(shape, auto, ctx)
    assert plan.item("zero3: live parameters").bytes == pytest.approx(6e8)
    assert plan.item("zero3: buckets + CUDA/NCCL").bytes == pytest.approx(1.9 * 4096**2 * 2 + 1.0e9)
    ddp = memory_plan(shape, _launch(**{**base, "strategy": "fsdp2"}), ctx)
    assert not [i for i in ddp.items if i.name.startswith("zero3:")]


def test_the_lm_head_line_is_trls_fused_head_not_the_logits():
    """TRL 1.16 computes log-probs in [4096, 32768] tiles (``add_fused_lm_head``): the 8B paper
    context's 17.7 GB of logits (14,560 completion tokens × 151,936 × 8 bytes) is gone; what
    stays is the hidden states and their fp32 gradient, one tile and the head's fp32 gradient."""
    from trl.kernels import chunked_logprob
    from trl.trainer import utils as trl_utils

    from paravt.train.launch.plan import TRL_TOKEN_CHUNK, TRL_VOCAB_CHUNK

    assert chunked_logprob.TOKEN_CHUNK_SIZE == TRL_TOKEN_CHUNK
    assert trl_utils._CHUNKED_LOGPROB_CHUNK_SIZE == TRL_VOCAB_CHUNK
    shape, ctx = _qwen3_8b(), _paper_ctx()
    launch = _launch(strategy="zero3", world_size=8, bf16=True, gradient_checkpointing=True)
    head = memory_plan(shape, launch, ctx).item("loss: LM head (fused)")
    n = ctx.completion_tokens
    assert n == 14_560
    want = n * 4096 * (2 + 4) + 4096 * 32768 * 2 + 151_936 * 4096 * 4
    assert head.bytes == want and head.bytes / GB == pytest.approx(3.12, abs=0.01)


def test_the_nccl_push_counts_rank_0s_packed_buffers():
    """Server mode with ``vllm_weight_push: nccl``: rank 0 holds the gathered bucket and its
    serving-dtype copy (the embedding, 1.24 GB, is a bucket of its own) and vLLM's two packed
    1 GiB buffers, each up to one more tensor: 7.1 GB at 8B, where the plan said 1.24."""
    shape, ctx = _qwen3_8b(), _paper_ctx()
    base = dict(strategy="zero3", world_size=8, bf16=True, rollout_batch=7, use_vllm=True)
    nccl = memory_plan(shape, _launch(**base, vllm_mode="server", vllm_weight_push="nccl"), ctx)
    push = nccl.item("rollout: NCCL push (rank 0)")
    largest = shape.largest_unit * 2
    assert push.bytes == largest * 2 + 2 * (1024**3 + largest)
    assert push.bytes / GB == pytest.approx(7.12, abs=0.01)
    folder = memory_plan(shape, _launch(**base, vllm_mode="server"), ctx)
    assert "rollout: NCCL push (rank 0)" not in {i.name for i in folder.items}


def test_colocate_derives_its_model_length_and_refuses_a_share_without_one_episodes_kv():
    """Colocated vLLM is started at the recipe's longest context, not the model's 262,144
    tokens; a share whose KV cache cannot hold that is refused with one line."""
    shape, ctx = _qwen3_8b(), _paper_ctx()
    base = dict(strategy="zero3", world_size=8, bf16=True, beta=0.01, rollout_batch=7,
                gradient_checkpointing=True, use_vllm=True)  # fmt: skip
    ok = memory_plan(shape, _launch(**base, vllm_gpu_memory_utilization=0.35), ctx)
    assert ok.vllm_max_model_length == ctx.context_tokens == 19_744
    assert ok.vllm_kv_tokens >= ok.vllm_max_model_length and ok.fits
    # 0.24 × 80 GB = 19.2 GB: the 17.5 GB of weights leave 1.7 GB, ~11,500 tokens at 147,456 B
    tight = memory_plan(shape, _launch(**base, vllm_gpu_memory_utilization=0.24), ctx)
    assert tight.vllm_weights < tight.vllm_share
    assert tight.vllm_kv_tokens < tight.vllm_max_model_length and not tight.fits
    line = fix_for(tight)
    assert "\n" not in line and "one episode needs 19,744" in line
    assert "vllm_gpu_memory_utilization" in line


def test_train_start_sets_the_colocated_model_length_and_refuses_a_short_share():
    """What ``paravt train`` does before the model loads (``colocated_model_length``), on an
    80 GB GPU; nothing without one (vLLM's CPU backend sizes its KV cache itself)."""
    from types import SimpleNamespace

    from paravt.errors import ConfigError
    from paravt.train.launch.startup import colocated_model_length
    from paravt.train.run import load_command_config

    sets = (f"model={QWEN3_VL_8B}", "trainer.vllm_mode=colocate")
    cfg = load_command_config(
        "paragrpo", (*sets, "trainer.vllm_gpu_memory_utilization=0.35"), check_trainer=False
    )

    def args(**kw):
        base = dict(use_vllm=True, vllm_mode="colocate", world_size=8, vllm_max_model_length=None)
        return SimpleNamespace(**{**base, **kw})

    a = args()
    assert colocated_model_length(cfg, a, str(QWEN3_VL_8B), 80e9) == a.vllm_max_model_length
    assert 0 < a.vllm_max_model_length < 262_144  # the recipe's context, not the model's
    assert colocated_model_length(cfg, args(), str(QWEN3_VL_8B), None) is None
    short = load_command_config(
        "paragrpo", (*sets, "trainer.vllm_gpu_memory_utilization=0.23"), check_trainer=False
    )
    with pytest.raises(ConfigError, match=r"^vLLM's colocated share \(0.23 × 80 GB.*one episode"):
        colocated_model_length(short, args(), str(QWEN3_VL_8B), 80e9)


def test_cli_refuses_a_colocated_share_without_one_episodes_kv_in_one_line(capsys):
    """Within the GPU (54 GB of 80) but vLLM could not start: the one line says why, not that
    the plan is larger than the GPU."""
    from paravt.cli.main import main

    argv = ["train", "--config", "paragrpo", "--set", f"model={QWEN3_VL_8B}", "--plan",
            "--world-size", "8", "--strategy", "zero3", "--set", "trainer.vllm_mode=colocate",
            "--set", "trainer.vllm_gpu_memory_utilization=0.23", "--json"]  # fmt: skip
    assert main(argv) == 2
    captured = capsys.readouterr()
    shown = json.loads(captured.out)
    assert shown["vllm_max_model_length"] == 19_744 and shown["vllm_kv_tokens"] < 19_744
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and "the plan does not fit: vLLM's colocated share" in err[0]
    assert "more than 80 GB" not in err[0]
