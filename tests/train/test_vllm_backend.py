"""``use_vllm=true``: the episode engine sampling through TRL's vLLM generator.

vLLM itself cannot run here (no GPU, not installed), so TRL's real ``VLLMGeneration`` runs in
server mode against ``FakeVLLMServer`` (``tests/train/fake_vllm.py``) — a model in this process
that re-processes the PIL frames and refuses image pads that do not match them, as the server
does.
"""

from __future__ import annotations

import copy
import json
import math
import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest
import torch

FORCED = (
    "I need to check the start.</think>\n<tool_call>\n"
    '{"name": "crop_video", "arguments": {"video_path": "video", "start_time": 0, "end_time": 2}}'
    "\n</tool_call>\n<tool_call>\n"
    '{"name": "crop_video", "arguments": {"video_path": "video", "start_time": 1, "end_time": 3}}'
    "\n</tool_call>"
)


@pytest.fixture(scope="module")
def tiny(tiny_qwen3_dir):
    from transformers import AutoModelForImageTextToText, AutoProcessor

    model = AutoModelForImageTextToText.from_pretrained(tiny_qwen3_dir, dtype=torch.float32)
    processor = AutoProcessor.from_pretrained(tiny_qwen3_dir)
    return model.eval(), processor


def _episodes(video: Path, n: int, k: int = 2, tag: str = "e") -> list:
    """``n`` questions on one video, each worded differently (distinct prompts: a completion can
    be traced back to the one context it was sampled for)."""
    from paravt.schema.episodes import EpisodeInput

    return [
        EpisodeInput(
            id=f"{tag}{i}",
            video=str(video),
            question=f"What happens in part {tag}{i}?",
            options=["A", "B", "C", "D"],
            question_type="mcq",
            frames_k=k,
            answer="A",
        )
        for i in range(n)
    ]


def _pad_runs(ids: list[int], pad: int) -> int:
    return sum(1 for j, t in enumerate(ids) if t == pad and (j == 0 or ids[j - 1] != pad))


def _segments(mask: list[int]) -> list[tuple[int, int]]:
    """``[start, end)`` of each run of generated tokens."""
    out, j = [], 0
    while j < len(mask):
        if mask[j]:
            e = j
            while e < len(mask) and mask[e]:
                e += 1
            out.append((j, e))
            j = e
        else:
            j += 1
    return out


def _server_generator(tiny, **kw):
    """TRL's real generator in server mode over an in-process server holding a copy of the model."""
    from accelerate import Accelerator
    from fake_vllm import FakeVLLMServer, ServerlessVLLMGeneration

    model, processor = tiny
    server = FakeVLLMServer(copy.deepcopy(model), processor)
    generator = ServerlessVLLMGeneration(
        model=model,
        accelerator=Accelerator(cpu=True),
        processing_class=processor,
        mode="server",
        server=server,
        temperature=1.0,
        **kw,
    )
    return server, generator


def _engine_config(**kw):
    from paravt.agent.config import CropSettings, EngineConfig

    base = {
        "mode": "parallel",
        "max_turns": 2,
        "max_parallel": 5,
        "frames": 2,
        "max_new_tokens": 8,
        "temperature": 1.0,
        "min_pixels": 784,
        "max_pixels": 2048,
        "think_prefix": "<think>\n",
        "forced_tokens_mcq": 6,
        "crop": CropSettings(max_frames=2, min_pixels=784, max_pixels=2048),
    }
    return EngineConfig(**{**base, **kw})


def test_engine_through_trl_vllm_generation(tiny, video_path):
    """Real generation, real frames: pads fill the server's features, streams are as sampled."""
    from paravt.agent.engine import EpisodeEngine
    from paravt.rollout.vllm import VLLMBackend

    model, processor = tiny
    server, generator = _server_generator(tiny, max_completion_length=99)
    with torch.no_grad():  # the server starts from other weights: the first push must fix that
        next(server.model.parameters()).add_(1.0)
    backend = VLLMBackend(generator, processor, first_turn_text=FORCED)
    engine = EpisodeEngine(backend, _engine_config())
    video = video_path("torchcodec__testsrc2.mp4")
    with backend.rollout(0):
        records = engine.run(_episodes(video, 3))
    assert backend.syncs == 1 and server.weight_updates == 1 and server.cache_resets == 1
    for (name, mine), theirs in zip(
        model.named_parameters(), server.model.parameters(), strict=True
    ):
        assert torch.equal(mine, theirs), name
    with backend.rollout(0):  # same optimizer step (eval, accumulation): no second push
        engine.run(_episodes(video, 1, tag="x"))
    with backend.rollout(1):
        engine.run(_episodes(video, 1, tag="y"))
    assert backend.syncs == 2 and server.weight_updates == 2
    assert generator.max_completion_length == 99  # the per-call budget was put back

    codec = backend.codec
    served = {row["prompt"]: row for row in server.served}
    sampled_turns = 0
    for rec in records:
        assert rec.status == "ok", rec.error
        assert len(rec.turns) == 2  # the forced tool turn, then a sampled turn after the frames
        assert len(rec.stream.images) == 2 + 4  # overview + two windows of two frames
        ids = rec.stream.token_ids
        # the stream's pads: one run per image, each as long as its grid says
        assert _pad_runs(ids, codec.image_token_id) == len(rec.stream.images)
        assert ids.count(codec.image_token_id) == sum(
            codec.tokens_for_grid(tuple(g)) for g in rec.stream.image_grid_thw.tolist()
        )
        for s, e in _segments(rec.stream.loss_mask):
            if s == rec.stream.prompt_len:  # the forced turn, sampled by no one: NaN (on-policy)
                assert all(math.isnan(x) for x in rec.stream.logprobs[s:e])
                continue
            # what the server sampled for exactly the context before it, with its frames
            row = served[tuple(ids[:s])]
            assert row["completion"][: e - s] == ids[s:e]
            assert (
                row["images"] == _pad_runs(ids[:s], codec.image_token_id) == len(rec.stream.images)
            )
            assert all(x <= 0 and math.isfinite(x) for x in rec.stream.logprobs[s:e])
            sampled_turns += 1
    assert sampled_turns == len(records)
    # every frame reached the server at exactly the size its pads were counted for
    sizes = {
        (g[1] * codec.patch_size, g[2] * codec.patch_size)
        for rec in records
        for g in rec.stream.image_grid_thw.tolist()
    }
    assert set(server.image_sizes) == sizes


class ColocatedExpansion:
    """TRL's generator interface in colocate mode, doing to a token prompt what vLLM's processor
    does with it: every ``<|image_pad|>`` of image run ``i`` becomes as many pads as image ``i``
    has features (its grid under the model's image processor). Answers with a fixed row."""

    mode = "colocate"
    max_completion_length = temperature = top_p = 1
    generation_kwargs = None

    def __init__(self, processor, answer: list[int]):
        self.processor, self.answer = processor, answer
        self.pad = processor.tokenizer.convert_tokens_to_ids("<|image_pad|>")
        self.merge = int(processor.image_processor.merge_size) ** 2
        self.sent: list[tuple[list[int], int]] = []  # (prompt, images) of every call

    def sync_weights(self):
        pass  # no weights here

    def _features(self, image) -> int:
        grid = self.processor.image_processor(images=[image], return_tensors="pt")["image_grid_thw"]
        return int(grid.prod()) // self.merge

    def generate(self, prompts, images, num_generations):
        from paravt.rollout.vllm_prompt import image_pad_runs

        reported = []
        for j, ids in enumerate(prompts):
            ims = (images[j] if images is not None else None) or []
            self.sent.append((list(ids), len(ims)))
            lengths = [self._features(im) for im in ims]
            assert len(image_pad_runs(ids, self.pad)) == len(ims)  # vLLM pairs runs and images
            out, run = [], -1
            for k, tok in enumerate(ids):
                if tok != self.pad:
                    out.append(tok)
                    continue
                run += k == 0 or ids[k - 1] != self.pad
                out.extend([tok] * lengths[run])
            reported.append(out)
        rows = [list(self.answer) for _ in prompts]
        return reported, rows, [[[-0.5]] * len(r) for r in rows], [[[t] for t in r] for r in rows]


def test_colocated_vllm_gets_one_pad_per_frame_and_reports_the_stream(tiny, video_path):
    """Colocate mode: each frame's pad run goes to vLLM as one pad (vLLM expands it from the
    image), the stream the learner trains on stays expanded, and the prompt vLLM reports after
    its expansion is checked against it — sent expanded, it would not be, and that is an error
    naming the episode."""
    from paravt.agent.config import CropSettings
    from paravt.agent.engine import EpisodeEngine
    from paravt.rollout.vllm import VLLMBackend
    from paravt.rollout.vllm_prompt import VLLMPromptMismatchError, image_pad_runs

    _, processor = tiny
    backend = VLLMBackend(ColocatedExpansion(processor, []), processor, first_turn_text=FORCED)
    codec = backend.codec
    generator = backend.generator
    generator.answer = codec.encode_text("<answer>A</answer>") + [codec.end_of_turn_id]
    assert backend.collapse_pads
    budget = {"min_pixels": 4096, "max_pixels": 8192}  # frames of 4 to 8 pads each
    engine = EpisodeEngine(
        backend, _engine_config(**budget, crop=CropSettings(max_frames=2, **budget))
    )
    video = video_path("torchcodec__testsrc2.mp4")
    with backend.rollout(0):
        records = engine.run(_episodes(video, 2))
    pad = codec.image_token_id
    assert generator.sent and all(image_pad_runs(p, pad) == [1] * n for p, n in generator.sent)
    for rec in records:
        assert rec.status == "ok", rec.error
        assert len(rec.stream.images) == 2 + 4
        runs = image_pad_runs(rec.stream.token_ids, pad)
        assert runs == [codec.tokens_for_grid(tuple(g)) for g in rec.stream.image_grid_thw.tolist()]
        assert min(runs) > 1  # expanded: the learner's stream, not vLLM's prompt
    # the old behaviour (the stream sent as it is) is caught at the first call with frames
    backend.collapse_pads = False
    with backend.rollout(1), pytest.raises(VLLMPromptMismatchError, match=r"episode x0 turn 1"):
        engine.run(_episodes(video, 1, tag="x"))


def test_sampler_logprobs_match_the_policy(tiny, video_path):
    """The server holds the pushed weights and sees the same frames: its logprob of each sampled
    token is the policy's own (what TRL's importance-sampling correction measures)."""
    from paravt.agent.engine import EpisodeEngine
    from paravt.rollout.vllm import VLLMBackend

    model, processor = tiny
    _, generator = _server_generator(tiny)
    backend = VLLMBackend(generator, processor, first_turn_text=FORCED)
    engine = EpisodeEngine(backend, _engine_config(max_turns=1))
    with backend.rollout(0):
        (rec,) = engine.run(_episodes(video_path("torchcodec__testsrc2.mp4"), 1))
    assert rec.status == "ok", rec.error
    ids = torch.tensor([rec.stream.token_ids])
    codec = backend.codec
    with torch.no_grad():
        logits = (
            model(
                input_ids=ids,
                attention_mask=torch.ones_like(ids),
                pixel_values=rec.stream.pixel_values,
                image_grid_thw=rec.stream.image_grid_thw,
                mm_token_type_ids=(ids == codec.image_token_id).long(),
            )
            .logits[0]
            .float()
        )
    policy = torch.log_softmax(logits[:-1], -1).gather(-1, ids[0, 1:, None])[:, 0]
    diffs = [
        abs(rec.stream.logprobs[j] - float(policy[j - 1]))
        for j in range(rec.stream.prompt_len, len(rec.stream.token_ids))
        if rec.stream.loss_mask[j] and not math.isnan(rec.stream.logprobs[j])
    ]
    assert diffs and max(diffs) < 1e-3, max(diffs)


def test_vision_token_and_unechoed_stop_end_a_turn(tiny):
    from paravt.rollout.vllm import VLLMBackend, sampled_logprobs
    from paravt.schema.episodes import GenRequest, TokenPrompt

    _, processor = tiny

    class Scripted:
        """The generator interface, answering with fixed rows (no model)."""

        mode = "colocate"
        max_completion_length = temperature = top_p = 1
        generation_kwargs = None

        def __init__(self, rows):
            self.rows = rows

        def generate(self, prompts, images, num_generations):
            rows = self.rows[: len(prompts)]
            return (
                prompts,
                rows,
                [[[-0.5]] * len(r) for r in rows],
                [[[t] for t in r] for r in rows],
            )

    backend = VLLMBackend(Scripted([]), processor)
    codec = backend.codec
    text = codec.encode_text("a b c")
    pad, end = codec.image_token_id, codec.end_of_turn_id
    backend.generator.rows = [text + [pad] + text, text, text + [end], text * 10]
    req = GenRequest(
        "e", 1, "main", [], [], max_new_tokens=len(text) + 1, tokens=TokenPrompt([1, 2])
    )
    cut, short, stopped, full = backend.generate([req, req, req, req])
    assert cut.token_ids == text and cut.finish_reason == "length"  # the pad never enters
    assert short.token_ids == text and short.finish_reason == "stop"  # server kept its stop
    assert stopped.token_ids == text + [end] and stopped.finish_reason == "stop"
    assert full.finish_reason == "length"
    assert end in backend.generator.generation_kwargs["stop_token_ids"]
    # the sampled id's logprob is looked up among the candidates, NaN where none came back
    assert sampled_logprobs([7, 8], [[-0.1, -2.0], [None]], [[3, 7], [8]])[0] == -2.0
    assert math.isnan(sampled_logprobs([7, 8], [[-0.1, -2.0], [None]], [[3, 7], [8]])[1])


def test_a_failed_rollout_tells_the_other_ranks_at_their_next_handshake(tiny):
    """Server mode on 2 ranks (collective calls, lockstep): an error raised in this rank's rollout
    goes to the others' next handshake before it is re-raised; a failure read at a handshake
    raises ``RankFailedError`` naming the rank, and is not announced again."""
    from paravt.errors import RankFailedError
    from paravt.rollout.lockstep import RankFailure
    from paravt.rollout.vllm import VLLMBackend
    from paravt.schema.episodes import GenRequest, TokenPrompt

    _, processor = tiny

    class Server:
        mode = "server"
        generation_kwargs = None

    sent: list = []
    others: list = []  # what rank 1 sends at each handshake

    def gather(mine: list) -> list:
        sent.extend(mine)
        return [*mine, others.pop(0)]

    backend = VLLMBackend(Server(), processor, world_size=2, gather=gather)
    backend.loaded_step = 0  # no weight push: nothing here holds weights
    assert backend.lockstep
    with pytest.raises(ZeroDivisionError), backend.rollout(0):
        raise ZeroDivisionError("a tool's arithmetic on this rank")
    assert sent == [RankFailure("ZeroDivisionError", "a tool's arithmetic on this rank")]

    sent.clear()
    others.append(RankFailure("OSError", "video store gone"))
    req = GenRequest("e", 1, "main", [], [], max_new_tokens=4, tokens=TokenPrompt([1, 2]))
    failed = pytest.raises(RankFailedError, match="rank 1 failed .* OSError: video store gone")
    with failed, backend.rollout(0):
        backend.generate([req])
    assert len(sent) == 1 and not isinstance(sent[0], RankFailure)  # its share, nothing more


def test_importance_sampling_ratio_modes():
    from paravt.errors import ConfigError
    from paravt.rollout.vllm import importance_sampling_ratio

    old = torch.tensor([[-1.0, -1.0, -1.0], [-1.0, -1.0, -1.0]])
    sampled = torch.tensor([[-1.5, -1.0, float("nan")], [-1.0, -3.0, -1.0]])
    mask = torch.tensor([[1, 1, 0], [1, 1, 1]])
    tok = importance_sampling_ratio(old, sampled, mask, "token_truncate", None, 3.0)
    assert torch.allclose(tok[0], torch.tensor([math.exp(0.5), 1.0, 1.0]))
    assert tok[1, 1] == 3.0  # exp(2) truncated
    seq = importance_sampling_ratio(old, sampled, mask, "sequence_mask", None, 3.0)
    assert (
        seq.shape == (2, 1)
        and seq[1, 0] == 0.0
        and torch.isclose(seq[0, 0], torch.tensor(math.exp(0.5)))
    )
    with pytest.raises(ConfigError):
        importance_sampling_ratio(old, sampled, mask, "bogus", None, None)


def test_use_vllm_without_vllm_is_a_config_error_before_any_model_loads(
    tmp_path, shared_videos, smoke_args
):
    from paravt.errors import ConfigError
    from paravt.train.run import load_command_config, para_config, run_training
    from paravt.train.trainer import ParaGRPOTrainer

    pytest.importorskip("trl")
    try:
        import vllm  # noqa: F401

        pytest.skip("vLLM is installed here")
    except ImportError:
        pass
    run_dir = tmp_path / "run"
    # server mode's folder push needs no vLLM here; its NCCL push does
    overrides = (
        "trainer.use_vllm=true",
        "trainer.vllm_mode=server",
        "trainer.vllm_weight_push=nccl",
    )
    cfg = load_command_config("cpu-smoke", smoke_args(run_dir, shared_videos, *overrides))
    with pytest.raises(ConfigError, match=r"vllm-env.sh.*vllm_weight_push=nccl.*use_vllm=false"):
        run_training(cfg)
    assert not run_dir.exists()
    with pytest.raises(ConfigError, match="use_vllm=false"):
        ParaGRPOTrainer(model=None, args=para_config(cfg))


def test_colocated_vllm_refuses_a_budget_its_processor_would_resize(tiny, monkeypatch):
    """Colocated vLLM loads the model folder's processor: a frame budget entirely outside its
    pixel range would be re-sized on every frame (features != pads) — refused up front."""
    import paravt.rollout.vllm as vb
    from paravt.errors import ConfigError
    from paravt.train.run import load_command_config, para_config
    from paravt.train.trainer import ParaGRPOTrainer

    _, processor = tiny  # its image processor: [1024, 65536] pixels
    monkeypatch.setattr(vb, "is_vllm_available", lambda *a, **k: True)
    monkeypatch.setattr(
        vb, "vllm_stack_problem", lambda **_: None
    )  # a known stack, as if installed
    small = ("trainer.use_vllm=true", "engine.min_pixels=64", "engine.max_pixels=512")
    args = para_config(load_command_config("cpu-smoke", small))
    with pytest.raises(ConfigError, match="shortest_edge.*min_pixels/max_pixels"):
        ParaGRPOTrainer(model=None, args=args, processing_class=processor)
    assert vb.budget_outside(processor, 784, 2048) is None  # overlapping: frames can pass


def test_training_steps_through_trl_vllm_generation(
    tmp_path, shared_videos, smoke_args, train_probe, monkeypatch
):
    """cpu-smoke with use_vllm=true: TRL builds the (serverless) generator, weights are pushed
    once per step, the sampler's logprobs feed TRL's importance-sampling correction."""
    import trl.trainer.grpo_trainer as grpo
    from fake_vllm import serverless_factory

    import paravt.rollout.vllm as vb
    import paravt.train.trainer as trainer_module
    from paravt.train.metrics import read_jsonl
    from paravt.train.run import load_command_config, run_training

    servers: list = []
    monkeypatch.setattr(vb, "is_vllm_available", lambda *a, **k: True)
    monkeypatch.setattr(
        vb, "vllm_stack_problem", lambda **_: None
    )  # a known stack, as if installed
    monkeypatch.setattr(grpo, "VLLMGeneration", serverless_factory(servers))
    # TRL's server-mode generator (collective calls, lockstep) in place of paravt's own client
    make = serverless_factory(servers)
    monkeypatch.setattr(
        trainer_module, "server_generation",
        lambda t: make(
            model=t.model, accelerator=t.accelerator, processing_class=t.processing_class,
            mode="server", temperature=t.temperature, max_completion_length=t.max_completion_length,
        ),
    )  # fmt: skip
    run_dir = tmp_path / "run"
    cfg = load_command_config(
        "cpu-smoke",
        smoke_args(
            run_dir,
            shared_videos,
            "trainer.use_vllm=true",
            "trainer.vllm_mode=server",
            "trainer.vllm_importance_sampling_mode=token_truncate",
            "trainer.max_steps=2",
            "trainer.save_steps=100",
        ),
    )
    probe = train_probe()
    summary = run_training(cfg, on_trainer=probe.attach)
    assert summary["global_step"] == 2
    (server,) = servers
    trainer = probe.trainer
    assert trainer._backend.syncs == 2 and server.weight_updates == 2
    assert server.served and server.image_sizes  # every sampled turn came from the server
    out = probe.outputs[0]
    ratio, mask = out["importance_sampling_ratio"], out["completion_mask"] * out["tool_mask"]
    assert ratio.shape == out["completion_ids"].shape
    assert torch.isfinite(out["sampling_per_token_logps"]).all()
    # the server held the step's weights and saw the same frames: the ratio is ~1 everywhere
    assert torch.allclose(ratio[mask.bool()], torch.ones(()), atol=1e-3)
    rows = [r for r in read_jsonl(run_dir / "metrics.jsonl") if "loss" in r]
    assert [r["step"] for r in rows] == [1, 2]
    for r in rows:  # TRL's names for the correction's metrics
        assert abs(r["sampling/importance_sampling_ratio/mean"] - 1) < 1e-3
        assert r["sampling/sampling_logp_difference/max"] < 1e-3
    assert json.loads((run_dir / "config.json").read_text())["trainer_resolved"]["use_vllm"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.ranks
@pytest.mark.slow
def test_two_ranks_with_different_rounds_stay_in_lockstep(tmp_path, tiny_qwen3_dir, shared_videos):
    """torchrun, 2 gloo ranks, server mode: rank 0's episodes take three generate calls, rank
    1's one call with other budgets and more requests — every collective call is matched, no
    rank waits forever, and each rank gets the completions of its own prompts."""
    exe = shutil.which("torchrun")
    if exe is None:
        pytest.skip("torchrun not on PATH")
    worker = Path(__file__).with_name("vllm_lockstep_worker.py")
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(__file__).resolve().parents[2] / "src"), env.get("PYTHONPATH", "")]
    )
    done = subprocess.run(
        [
            exe,
            "--nproc_per_node",
            "2",
            "--master_port",
            str(_free_port()),
            str(worker),
            str(tiny_qwen3_dir),
            str(shared_videos / "torchcodec__testsrc2.mp4"),
            str(tmp_path),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    served = {tuple(p): c for p, c in ranks[0]["server"]}
    # two rollouts each: rank 0 two episodes of two turns (three generate calls with the
    # sub-agent round between), rank 1 three one-turn episodes
    assert [t for _, t in ranks[0]["records"]] == [2] * 4
    assert [t for _, t in ranks[1]["records"]] == [1] * 6
    for rank in ranks:
        assert all(status == "ok" for status, _ in rank["records"])
        assert rank["syncs"] == 2
        for prompt, completion in rank["pairs"]:
            assert served[tuple(prompt)] == completion  # this rank's own prompt's completion
    assert ranks[1]["fillers"] > 0  # rank 1 kept joining rank 0's later rounds
