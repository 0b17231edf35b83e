"""ParaGRPOTrainer vs plain TRL, on the same tiny model, in one process.

1. ``step``: training-step time of ``ParaGRPOTrainer`` (episode engine, direct mode: no tools,
   overview frames decoded from the video each step) against ``trl.GRPOTrainer`` given the same
   questions with the same K frames pre-decoded as images in the dataset. Same model, same number of
   generations, same new-token budget, same pixel budget. The ratio is our overhead per step; prompt
   token counts of both are recorded because our prompt carries the system prompt and timestamps.
2. ``rollout``: one rollout with tools for the same batch and the same calls (the first assistant
   turn is forced to the same three ``crop_video`` calls on both sides, the rest is sampled):
   ``ParaGRPOTrainer.run_episodes`` (every call of the batch decoded together by
   ``tools.execute_windows``) against TRL's own ``tools=`` loop (``GRPOTrainer._generate`` →
   ``_tool_call_loop``, which calls a Python ``crop_video`` tool once per call, sample after
   sample). TRL's loop cannot parse the tiny model's chat template by itself, so the benchmark sets
   TRL's own Qwen3 response parser on the tokenizer (``trl.chat_template_utils.qwen3_template``);
   the tool function decodes its window with paravt's video engine, one open per call, the way a
   TRL user's tool would. Both total rollout time and the time spent inside tool execution are
   reported.

Run: ``OMP_NUM_THREADS=1 python benchmarks/bench_trainer.py [--steps 4] [--out benchmarks/results/bench_trainer.json]``
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
VIDEOS = ROOT.parent / "shared" / "videos"
CLIPS = [
    "decord__flipping_a_pancake.mkv",
    "mediabunny__trim-buck-bunny.webm",
    "torchcodec__var_fps_video.mp4",
    "torchcodec__testsrc2.mp4",
]
CALLS = [(0.0, 2.0), (2.0, 4.0), (1.0, 3.0)]
FIRST_TURN = "I need to look closer.</think>\n" + "\n".join(
    f'<tool_call>\n{{"name": "crop_video", "arguments": {{"video_path": "video", "start_time": {s}, "end_time": {e}}}}}\n'
    "</tool_call>"
    for s, e in CALLS
)
MIN_PX, MAX_PX, K, NEW_TOKENS, WINDOW_FRAMES = 784, 2048, 4, 16, 2


class StepTimer:
    def __init__(self):
        self.t = None
        self.times = []

    def on_step_begin(self, args, state, control, **kw):
        self.t = time.perf_counter()

    def on_step_end(self, args, state, control, **kw):
        self.times.append(time.perf_counter() - self.t)


def _callback(timer):
    from transformers import TrainerCallback

    class CB(TrainerCallback):
        def on_step_begin(self, *a, **k):
            timer.on_step_begin(*a, **k)

        def on_step_end(self, *a, **k):
            timer.on_step_end(*a, **k)

    return CB()


def _rows():
    return [
        {
            "prompt": f"What happens in this clip ({c})?",
            "prompt_id": f"q{i}",
            "video": str(VIDEOS / c),
            "question_type": "oe",
            "options_json": "null",
            "answer_json": json.dumps("a clip"),
        }
        for i, c in enumerate(CLIPS)
    ]


def _load(model_dir):
    from transformers import AutoModelForImageTextToText, AutoProcessor

    model = AutoModelForImageTextToText.from_pretrained(model_dir, dtype=torch.float32)
    proc = AutoProcessor.from_pretrained(model_dir)
    proc.tokenizer.padding_side = "left"
    proc.image_processor.size = {"shortest_edge": MIN_PX, "longest_edge": MAX_PX}
    return model, proc


def _common(out_dir, steps):
    return {
        "output_dir": str(out_dir),
        "use_cpu": True,
        "bf16": False,
        "gradient_checkpointing": False,
        "beta": 0.0,
        "num_generations": 2,
        "per_device_train_batch_size": 4,
        "max_steps": steps,
        "learning_rate": 1e-5,
        "max_completion_length": NEW_TOKENS,
        "temperature": 1.0,
        "report_to": [],
        "save_strategy": "no",
        "logging_steps": 1,
        "seed": 0,
        "disable_tqdm": True,
    }


def _overview_images(path):
    from PIL import Image

    from paravt.video import VideoSource

    frames = VideoSource(path).overview(K)
    return [Image.fromarray(f.permute(1, 2, 0).numpy()) for f in frames.data]


def bench_step(model_dir, tmp, steps):
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from paravt.agent.config import CropSettings
    from paravt.rewards import RewardConfig
    from paravt.train.config import ParaGRPOConfig
    from paravt.train.engine_config import TrainEngineConfig
    from paravt.train.trainer import ParaGRPOTrainer

    rows = _rows()
    # Ours: direct mode (no tool), K overview frames decoded by the engine each step.
    model, proc = _load(model_dir)
    args = ParaGRPOConfig(
        **_common(tmp / "para", steps),
        engine=TrainEngineConfig(
            mode="direct",
            frames=K,
            min_pixels=MIN_PX,
            max_pixels=MAX_PX,
            max_new_tokens=NEW_TOKENS,
            think_prefix="",
            crop=CropSettings(min_pixels=MIN_PX, max_pixels=MAX_PX),
        ),
        frames_gating=False,
        rewards=RewardConfig(token_anchor=False),
        episode_log=False,
    )
    timer_p = StepTimer()
    para = ParaGRPOTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=proc,
        callbacks=[_callback(timer_p)],
    )
    para.keep_last_rollout = True
    para.train()
    para_prompt = statistics.mean(r.prompt_len for r in para.last_rollout["records"])

    # Plain TRL: the same questions with the same K frames as dataset images.
    model, proc = _load(model_dir)
    from paravt.agent.prompts import load_prompts

    system = load_prompts().system(
        "direct", 1, 5
    )  # the same system prompt our direct episodes start with
    trl_rows = [
        {
            "prompt": [
                {"role": "system", "content": system},
                {"role": "user", "content": r["prompt"]},
            ],
            "images": _overview_images(r["video"]),
        }
        for r in rows
    ]
    args = GRPOConfig(**_common(tmp / "trl", steps))
    timer_t = StepTimer()
    lengths = []

    def reward(prompts, completions, completion_ids=None, **kw):
        lengths.extend(len(c) for c in completion_ids)
        return [0.0] * len(prompts)

    plain = GRPOTrainer(
        model=model,
        reward_funcs=reward,
        args=args,
        train_dataset=Dataset.from_list(trl_rows),
        processing_class=proc,
        callbacks=[_callback(timer_t)],
    )
    plain.generation_config.suppress_tokens = sorted(
        set(plain.generation_config.suppress_tokens or []) | set(para._backend.suppress_ids)
    )
    plain.train()
    tok_prompt = proc.apply_chat_template(
        [
            trl_rows[0]["prompt"][0],
            trl_rows[0]["prompt"][1]
            | {
                "content": [
                    *({"type": "image"} for _ in range(K)),
                    {"type": "text", "text": rows[0]["prompt"]},
                ]
            },
        ],
        add_generation_prompt=True,
        tokenize=True,
        return_dict=True,
        images=trl_rows[0]["images"],
    )
    para_med = statistics.median(timer_p.times[1:])
    trl_med = statistics.median(timer_t.times[1:])
    return {
        "what": "median training-step time, steps 2..N (step 1 warms up); 2 prompts x 2 generations per step",
        "para_grpo_step_s": round(para_med, 4),
        "trl_grpo_step_s": round(trl_med, 4),
        "overhead_ratio": round(para_med / trl_med, 3),
        "para_step_times_s": [round(t, 4) for t in timer_p.times],
        "trl_step_times_s": [round(t, 4) for t in timer_t.times],
        "para_prompt_tokens_mean": para_prompt,
        "trl_prompt_tokens": len(tok_prompt["input_ids"][0]),
        "frames_per_prompt": K,
        "new_tokens_budget": NEW_TOKENS,
        "note": "both sides start with the same (direct-mode) system prompt; ours adds a <t seconds> timestamp "
        "per frame and decodes the K overview frames from the video every step (TRL got them "
        "pre-decoded in the dataset)",
    }


def _trl_crop_tool(timing):
    from PIL import Image

    from paravt.tools.batch import window_plan
    from paravt.tools.results import CropConfig
    from paravt.video import VideoSource

    config = CropConfig(max_frames=WINDOW_FRAMES)
    state = {"video": None}

    def crop_video(video_path: str, start_time: float, end_time: float) -> list:
        """Look closer at one time window of the video.

        Args:
            video_path: Path of the video being asked about.
            start_time: Window start, in seconds.
            end_time: Window end, in seconds.

        Returns:
            The window's frames and a line saying what they cover.
        """
        t0 = time.perf_counter()
        src = VideoSource(
            state["video"]
        )  # a tool call knows only its arguments: it opens the file itself
        end = min(float(end_time), src.meta.duration)
        plan = window_plan(src, float(start_time), end, config)
        frames = src.frames_at([t for t, _ in plan])
        out = [
            {"type": "image", "image": Image.fromarray(f.permute(1, 2, 0).numpy())}
            for f in frames.data
        ]
        out.append(
            {"type": "text", "text": f"{len(frames.times)} frames from {start_time}s to {end}s."}
        )
        timing.append(time.perf_counter() - t0)
        return out

    return crop_video, state


def bench_rollout(model_dir, tmp):
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer
    from trl.chat_template_utils import qwen3_template

    from paravt.agent.config import CropSettings
    from paravt.rewards import RewardConfig
    from paravt.train.config import ParaGRPOConfig
    from paravt.train.engine_config import TrainEngineConfig
    from paravt.train.trainer import ParaGRPOTrainer

    rows = _rows()[:2]  # 2 prompts x 2 generations = 4 episodes x 3 calls
    model, proc = _load(model_dir)
    args = ParaGRPOConfig(
        **_common(tmp / "para-r", 1),
        engine=TrainEngineConfig(
            mode="parallel",
            frames=K,
            min_pixels=MIN_PX,
            max_pixels=MAX_PX,
            max_new_tokens=NEW_TOKENS,
            max_turns=1,
            crop=CropSettings(max_frames=WINDOW_FRAMES, min_pixels=MIN_PX, max_pixels=MAX_PX),
        ),
        frames_gating=False,
        first_turn_text=FIRST_TURN,
        rewards=RewardConfig(token_anchor=False),
        episode_log=False,
    )
    para = ParaGRPOTrainer(
        model=model, args=args, train_dataset=Dataset.from_list(rows), processing_class=proc
    )
    inputs = [r for r in rows for _ in range(2)]
    para.run_episodes(para.episode_inputs(inputs, 0, "train"), "train")  # warm-up
    engine_stats = []
    orig_make = para._make_engine

    def make(mode):
        eng = orig_make(mode)
        engine_stats.append(eng)
        return eng

    para._make_engine = make
    t0 = time.perf_counter()
    records = para.run_episodes(para.episode_inputs(inputs, 0, "train"), "train")
    para_total = time.perf_counter() - t0
    stats = engine_stats[-1].tool_stats
    para_tool = sum(float(getattr(s, "seconds", 0.0)) for s in stats)
    para_calls = sum(c.status == "ok" for r in records for c in r.calls)

    # TRL's tools= loop on the same prompts and calls.
    model, proc = _load(model_dir)
    proc.tokenizer.response_template = qwen3_template
    timing: list[float] = []
    tool, state = _trl_crop_tool(timing)
    from paravt.agent.prompts import load_prompts

    system = load_prompts().system(
        "parallel", 1, 5
    )  # the same system prompt our episodes start with
    trl_rows = [
        {
            "prompt": [
                {"role": "system", "content": system},
                {"role": "user", "content": r["prompt"]},
            ],
            "images": _overview_images(r["video"]),
        }
        for r in rows
    ]
    common = _common(tmp / "trl-r", 1)
    common["max_completion_length"] = (
        4096  # TRL drops tool results past this budget; per-turn cap below
    )
    targs = GRPOConfig(
        **common, max_tool_calling_iterations=1, generation_kwargs={"max_new_tokens": NEW_TOKENS}
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=lambda prompts, **k: [0.0] * len(prompts),
        args=targs,
        train_dataset=Dataset.from_list(trl_rows),
        processing_class=proc,
        tools=[tool],
    )
    trainer.generation_config.suppress_tokens = list(para._backend.suppress_ids)
    forced_ids = proc.tokenizer(FIRST_TURN, add_special_tokens=False)["input_ids"] + [
        proc.tokenizer.convert_tokens_to_ids("<|im_end|>")
    ]
    original = trainer._generate_single_turn
    calls = {"n": 0}

    def first_turn_forced(
        prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False
    ):
        calls["n"] += 1
        if calls["n"] == 1:
            return [list(forced_ids) for _ in prompt_ids], None
        return original(prompt_ids, images, multimodal_fields, num_generations, has_tool_images)

    trainer._generate_single_turn = first_turn_forced
    from trl.data_utils import prepare_multimodal_messages

    trainer.model.train()
    prompts = [
        prepare_multimodal_messages(r["prompt"], images=r["images"])
        for r in trl_rows
        for _ in range(2)
    ]
    trainer._generate_and_score_completions  # noqa: B018 (documented entry; we call _generate directly)
    trainer._standalone_tools = [tool]
    trainer._sync_tool_dicts = [{"crop_video": tool} for _ in prompts]
    trainer._async_tool_dicts = [{} for _ in prompts]
    # One video per prompt; TRL's tool gets no episode context, so the benchmark points it at the right file.
    video_of = {i: rows[i // 2]["video"] for i in range(len(prompts))}
    state["video"] = video_of[0]
    orig_tool_dict = trainer._sync_tool_dicts

    def per_sample(i):
        def run(**kw):
            state["video"] = video_of[i]
            return tool(**kw)

        return run

    trainer._sync_tool_dicts = [{"crop_video": per_sample(i)} for i in range(len(prompts))]
    del orig_tool_dict
    t0 = time.perf_counter()
    out = trainer._generate(prompts)
    trl_total = time.perf_counter() - t0
    tool_images = out[-1]
    trl_prompt_tokens = statistics.mean(len(p) for p in out[0])
    timings = {
        k: round(sum(getattr(r.timings, k) for r in records), 4)
        for k in ("decode_s", "preprocess_s", "generate_s")
    }
    return {
        "what": "one rollout of 4 episodes (2 prompts x 2 generations), first turn forced to 3 crop_video calls, "
        "then one sampled turn; same videos, windows, frames per window and pixel budget on both sides",
        "para_rollout_s": round(para_total, 4),
        "trl_tools_rollout_s": round(trl_total, 4),
        "rollout_ratio_trl_over_para": round(trl_total / para_total, 3),
        "para_tool_exec_s": round(para_tool, 4),
        "trl_tool_exec_s": round(sum(timing), 4),
        "tool_exec_ratio_trl_over_para": round(sum(timing) / para_tool, 3) if para_tool else None,
        "para_prompt_tokens_mean": statistics.mean(r.stream.prompt_len for r in records),
        "trl_prompt_tokens_mean": trl_prompt_tokens,
        "para_episode_timings_summed": timings,
        "para_calls_executed": para_calls,
        "trl_calls_executed": len(timing),
        "trl_tool_images": sum(len(x) for x in tool_images),
        "para_tool_images": sum(
            sum(1 for im in r.stream.images if im.source == "tool") for r in records
        ),
        "trl_setup_note": "TRL cannot parse the tiny model's chat template on its own; its Qwen3 response "
        "parser (trl.chat_template_utils.qwen3_template) was set on the tokenizer, and "
        "_generate_single_turn was wrapped only to force the first turn (as first_turn_text "
        "does for ParaGRPOTrainer). Our side includes decoding the overview frames from the "
        "videos; the TRL side got them pre-decoded in the dataset. Both prompts start with "
        "the same system prompt.",
    }


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "bench_trainer.json"))
    a = ap.parse_args(argv)
    from paravt.models.tiny import make_tiny_model

    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        model_dir = make_tiny_model(tmp / "tiny", arch="qwen3-vl")
        result = {
            "benchmark": "bench_trainer",
            "model": "tiny random qwen3-vl (paravt.models.tiny)",
            "torch_threads": torch.get_num_threads(),
            "python": platform.python_version(),
            "step": bench_step(model_dir, tmp, a.steps),
            "rollout": bench_rollout(model_dir, tmp),
        }
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
