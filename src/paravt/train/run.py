"""``paravt train`` as a library call: recipe → run folder → data → ParaGRPOTrainer → checkpoints.

The command's config is ``TrainCommandConfig``, read by the one loader of every command
(``paravt.config.load_config``; ``load_command_config`` finds a packaged recipe by name): the
model (a folder, a Hub id, or ``tiny:<arch>`` for a tiny random model built into the run
folder), the data section, the run folder, ``engine`` — the episode engine's ``EngineConfig``
with training defaults (``paravt.train.engine_config``), the same keys as in
``infer``/``eval``/``sft`` — ``rewards`` — every reward constant, a ``RewardConfig`` — and
``trainer`` — the keys of ``ParaGRPOConfig`` (TRL's GRPOConfig + paravt's training knobs), typed
and checked as the recipe is read (``ParaGRPOKeys``), so a typo fails before any model loads.
``para_config`` builds the ``ParaGRPOConfig`` from the sections: the engine section becomes
``ParaGRPOConfig.engine`` and the rewards ``ParaGRPOConfig.rewards``. Keys that moved are
``TrainCommandConfig.RENAMED`` (``paravt.config.Renamed``): the five reward keys that used to be
flat ``trainer`` keys are still read, with a ``FutureWarning`` (removed in paravt 0.2); an engine
knob left under ``trainer`` is a ``ConfigError`` that names its new home.

The run folder holds ``config.json`` (the resolved config), ``data_report.json`` +
``skipped_rows.jsonl`` (rows dropped for missing/unreadable videos), ``metrics.jsonl`` (one row per
step), ``checkpoint-N/`` (safetensors + optimizer, scheduler, RNG and data position, by HF
Trainer) and ``final/`` (the trained model + processor, loadable with ``from_pretrained``).
``resume=True`` continues from the newest checkpoint and first cuts ``metrics.jsonl`` back to that
checkpoint's step, so the file stays continuous after a crash.
A fresh run (no ``resume``) into a folder that already holds checkpoints is refused: the
old checkpoints would be mistaken for this run's by a later resume.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar, Literal

from paravt.agent.prompts import check_user_template
from paravt.config import Renamed, build, load_config, to_dict
from paravt.data import load_training_rows, to_dataset
from paravt.errors import ConfigError, UserError
from paravt.rewards.config import RewardConfig
from paravt.schema.run_summary import RunSummary
from paravt.train.config import ParaGRPOConfig, ParaGRPOKeys, learner_dtype
from paravt.train.engine_config import MOVED_TO_ENGINE, TrainEngineConfig
from paravt.train.launch.checkpoints import agreed_checkpoint, checkpoint_step
from paravt.train.launch.process_group import check_process_group, join_process_group
from paravt.train.launch.startup import (
    colocated_model_length,
    gpu_memory_bytes,
    rank_split,
    shared_model_path,
    warn_if_plain_ddp_too_big,
)
from paravt.train.layout import Layout, layout_problem

__all__ = ["load_command_config", "run_training"]

logger = logging.getLogger(__name__)

RECIPES = (
    "paragrpo",
    "paragrpo-sync",
    "vanilla_grpo",
    "vanilla_grpo-sync",
    "cpu-smoke",
    "sft-toy",
    "sft-smoke",
)


@dataclass
class DataConfig:
    """``path``: .parquet / .jsonl file, or a built-in set (``builtin:toy``, generated into the
    run folder; ``builtin:smoke``, questions over ../shared/videos: ``BUILTIN_DATA``);
    ``video_root``: relative video paths are resolved against it; ``limit``: the first N rows of
    the file, usable or not (the skip report covers exactly those)."""

    path: str = "builtin:smoke"
    video_root: str = "."
    format: Literal["auto", "parquet", "jsonl"] = "auto"
    limit: int | None = None


#: The reward keys that used to be flat ``trainer`` keys: deprecated aliases of
#: ``rewards.<key>`` (recipes written before the move, e.g. the toy experiment's saved ones),
#: removed in paravt 0.2.
FLAT_REWARD_KEYS = (
    "format_weight",
    "anchor_lambda",
    "token_anchor",
    "token_anchor_values",
    "oe_metric",
)
_IN_ENGINE = (
    "the episode engine's knobs live in the recipe's top-level engine section (engine: in the "
    "YAML, --set engine.KEY=VALUE), not under trainer"
)


@dataclass
class TrainCommandConfig:
    """``engine``: the episode engine's config (every ``EngineConfig`` key, training defaults);
    ``rewards``: every reward constant (``RewardConfig``); ``trainer``: the ``ParaGRPOConfig``
    keys (TRL's, sampling, gating; ``ParaGRPOKeys``), which ``para_config`` builds into the
    ``ParaGRPOConfig`` with the other sections; ``layout``: the trainer ranks and servers the
    recipe is written for (``paravt.train.layout``). ``RENAMED``: the keys that moved."""

    model: str = "tiny:qwen3-vl"
    output_dir: str = "runs/paravt"
    layout: Layout = field(default_factory=Layout)
    data: DataConfig = field(default_factory=DataConfig)
    engine: TrainEngineConfig = field(default_factory=TrainEngineConfig)
    rewards: RewardConfig = field(default_factory=RewardConfig)
    trainer: ParaGRPOKeys = field(default_factory=ParaGRPOKeys)

    RENAMED: ClassVar[tuple[Renamed, ...]] = (
        *(Renamed(f"trainer.{k}", f"rewards.{k}", "0.2") for k in FLAT_REWARD_KEYS),
        Renamed("trainer.engine", "engine", None, _IN_ENGINE),
        *(
            Renamed(f"trainer.{k}", f"engine.{v}", None, _IN_ENGINE)
            for k, v in MOVED_TO_ENGINE.items()
        ),
        Renamed(
            "trainer.rewards",
            "rewards",
            None,
            "the reward constants live in the recipe's top-level rewards section (rewards: in "
            "the YAML, --set rewards.KEY=VALUE), not under trainer",
        ),
        Renamed(
            "trainer.output_dir", "output_dir", None, "the run folder is the top-level output_dir"
        ),
    )


def recipe_path(name_or_path: str) -> Path:
    """A YAML path as given, or a packaged recipe by name (``paragrpo``, ``vanilla_grpo``, ``cpu-smoke``)."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or p.exists():
        if not p.is_file():
            raise ConfigError(f"recipe file not found: {p}")
        return p
    name = (
        name_or_path.replace("_", "-")
        if name_or_path.replace("_", "-") == "cpu-smoke"
        else name_or_path
    )
    res = resources.files("paravt.train") / "recipes" / f"{name}.yaml"
    if not res.is_file():
        raise ConfigError(
            f"unknown recipe {name_or_path!r}: use a YAML path or one of {', '.join(RECIPES)}"
        )
    return Path(str(res))


#: Built-in data sets: ``toy`` is generated into the run folder when a run starts (4 short toy
#: videos, an mcq and a tvg question each: ``paravt.toy``), so the smoke recipes run on a clean
#: clone; ``smoke`` is six packaged questions over the real test videos of ``../shared/videos``
#: (give ``data.video_root``), which the test suite trains on.
BUILTIN_DATA = ("toy", "smoke")
#: the folder of the run that ``builtin:toy`` is generated into
BUILTIN_TOY_DIR = "builtin-toy"


def builtin_data(name: str, run_dir: Path | None = None) -> tuple[Path, Path | None]:
    """``(rows file, video root or None for data.video_root)`` of ``builtin:name``; ``toy``
    reads what ``make_builtin_data`` wrote into ``run_dir``."""
    if name == "smoke":
        return Path(str(resources.files("paravt.train") / "recipes" / "smoke_data.jsonl")), None
    if name == "toy" and run_dir is not None:
        folder = run_dir / BUILTIN_TOY_DIR
        return folder / "train.jsonl", folder
    raise UserError(
        f"data.path=builtin:{name}: the built-in data sets are "
        f"{', '.join('builtin:' + n for n in BUILTIN_DATA)}"
    )


def make_builtin_data(data: DataConfig, run_dir: Path, args: Any) -> None:
    """Generate ``builtin:toy`` into the run folder on the main process (about a second; again
    only if it is missing), every rank waiting for it."""
    if data.path != "builtin:toy":
        return
    if args.process_index == 0:
        folder = run_dir / BUILTIN_TOY_DIR
        if not (folder / "train.jsonl").is_file():
            from paravt.toy.generate import make_toy_task
            from paravt.toy.task import ToyTaskConfig

            make_toy_task(
                ToyTaskConfig(out=str(folder), n=4, seed=0, durations=[20], visibility_videos=0)
            )
    if args.world_size > 1:
        from accelerate.utils import broadcast_object_list

        broadcast_object_list([None], from_process=0)  # the other ranks wait for the files


def para_config(
    cfg: TrainCommandConfig,
    world_output_dir: str | None = None,
    *,
    at_world_size: int | None = None,
) -> ParaGRPOConfig:
    """The ``ParaGRPOConfig`` of ``cfg``: its ``trainer`` keys with the run folder (or
    ``world_output_dir``), the engine and the rewards; HF sets up the devices as it is built
    (the launch's process group is joined first: ``join_process_group``). A launch whose ranks
    do not split the batch into whole groups is refused first, in one line (``layout_problem``
    at the launcher's ``WORLD_SIZE``). ``at_world_size``: build it as that many ranks would,
    with no process group (what tests/train/test_recipe_layouts.py checks every shipped recipe
    with, at its ``layout.trainer_ranks``)."""
    from torch.distributed import DistNetworkError  # torch: heavy, loaded when a run starts

    data = cfg.trainer.arguments()
    launched = os.environ.get("WORLD_SIZE", "1")  # the launcher's own report, not a setting
    world = at_world_size or (int(launched) if launched.isdigit() else 1)
    problem = layout_problem(world, data)
    if problem:
        raise ConfigError(problem)
    args_cls = _at_world_size(at_world_size) if at_world_size else ParaGRPOConfig
    join_process_group(data, args_cls)  # before HF sets up devices (__post_init__)
    data.update(
        output_dir=world_output_dir or cfg.output_dir, engine=cfg.engine, rewards=cfg.rewards
    )
    try:
        return build(args_cls, data, prefix="trainer.")
    except ImportError as e:  # e.g. trainer.deepspeed=... without the deepspeed package
        raise ConfigError(
            f"the trainer settings need a package that is not installed ({e}); install it "
            "(e.g. pip install deepspeed) or drop the key (trainer.deepspeed, ...)"
        ) from e
    except DistNetworkError as e:  # HF joins the launch's rendezvous as it sets up devices
        raise ConfigError(
            "this process was started as one rank of a launch (RANK, WORLD_SIZE, MASTER_ADDR, "
            f"MASTER_PORT={os.environ.get('MASTER_PORT', '?')} are set) whose rendezvous "
            f"could not be opened ({str(e).split('. ')[0]}): another job holds that port; give "
            "the launch a free port (torchrun --master_port, accelerate launch --main_process_port)"
            ", or unset those variables to train as one process"
        ) from e


def _at_world_size(n: int) -> type[ParaGRPOConfig]:
    """``ParaGRPOConfig`` whose ``world_size`` is ``n`` without a process group: TRL splits the
    batch by ``world_size`` as the config is built, which is all a layout check needs."""

    class AtWorldSize(ParaGRPOConfig):
        @property
        def world_size(self) -> int:
            return n

    return AtWorldSize


def start_run_folder(
    run_dir: Path,
    cfg: Any,
    args: Any,
    ckpt: Path | None,
    metrics_path: Path,
    log_dirs: tuple[str, ...] = (),
) -> None:
    """Main process: record the resolved config; on resume cut the per-step logs back to the
    checkpoint's step (``metrics_path`` and ``log_dirs/*.jsonl``), on a fresh run clear them."""
    import shutil

    from paravt.train.metrics import truncate_after  # loads transformers
    from paravt.train.numerics import numerics_record  # loads torch

    (run_dir / "config.json").write_text(
        json.dumps(
            {
                "command": to_dict(cfg),
                "trainer_resolved": args.to_dict(),
                "resumed_from": str(ckpt) if ckpt else None,
                # threads, SIMD kernels, releases: what the seed and config leave open
                "numerics": numerics_record(),
            },
            indent=2,
            default=str,
        )
    )
    if ckpt is not None:
        step = checkpoint_step(ckpt)
        truncate_after(metrics_path, step)
        for folder in log_dirs:
            for log in (run_dir / folder).glob("*.jsonl"):
                truncate_after(log, step)
        return
    if metrics_path.exists():  # a fresh run starts fresh logs
        metrics_path.unlink()
    for folder in log_dirs:
        shutil.rmtree(run_dir / folder, ignore_errors=True)


def training_rows(data: DataConfig, run_dir: Path, args: Any, console: Any = None):
    """``(rows, SkipReport)`` of the data section, the same rows on every rank (the videos are
    probed once, split across the ranks); the report goes to the run folder (main)."""
    is_main = args.process_index == 0
    data_path, video_root = data.path, data.video_root
    if data_path.startswith("builtin:"):
        rows_file, root = builtin_data(data_path.split(":", 1)[1], run_dir)
        data_path, video_root = str(rows_file), str(root) if root is not None else video_root
    rows, report = load_training_rows(
        data_path,
        video_root,
        data.format,
        data.limit,
        report_dir=run_dir if is_main else None,  # written even when no row is usable
        split=rank_split(args),
    )
    if is_main and console is not None and report.skipped:
        console.print(
            f"[yellow]skipped {len(report.skipped)} of {report.total} rows "
            f"(see {run_dir / 'skipped_rows.jsonl'})[/yellow]"
        )
    return rows, report


def load_model(model_path: str, args: Any):
    """``(model, processor)`` in the trainer's precision (bf16 / fp16 / fp32), left padding."""
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    dtype = getattr(torch, learner_dtype(args))  # the one rule, also vLLM's (vllm_dtype)
    model = AutoModelForImageTextToText.from_pretrained(model_path, dtype=dtype)
    processor = AutoProcessor.from_pretrained(model_path)
    processor.tokenizer.padding_side = "left"
    return model, processor


def train_and_save(
    trainer: Any,
    processor: Any,
    run_dir: Path,
    ckpt: Path | None,
    metrics_path: Path,
    extra: dict,
    stop: Any = None,
) -> dict:
    """Train (from ``ckpt`` when resuming), save ``final/`` (model + processor) and
    ``summary.json``; the summary, with ``extra`` (data and other counts) merged in. A run that
    stops early — asked to (``stop``: a ``StopAtStepEnd``), or after a rollout error it cannot go
    on from — saves a checkpoint and raises ``RunStopped`` (``paravt.train.launch.stopping``)."""
    from paravt.train.launch.stopping import (
        save_after_failure,
        stopped_by_request,
        stopping_error,
    )
    from paravt.train.launch.teardown import release_trainer

    try:
        try:
            result = trainer.train(resume_from_checkpoint=str(ckpt) if ckpt else None)
        except Exception as e:
            if stopping_error(e):
                raise save_after_failure(trainer, run_dir, e) from e
            raise
        step = int(trainer.state.global_step)
        if stop is not None and stop.stopped_at is not None and step < int(trainer.state.max_steps):
            raise stopped_by_request(stop.request.reason() or "request", step, run_dir)
        final_dir = run_dir / "final"
        trainer.save_model(str(final_dir))
        is_main = trainer.args.process_index == 0
        if is_main:
            processor.save_pretrained(str(final_dir))
        summary = RunSummary(
            run_dir=str(run_dir),
            global_step=step,
            final_model=str(final_dir),
            metrics_file=str(metrics_path),
            resumed_from=str(ckpt) if ckpt else None,
            train_loss=float(result.training_loss) if result is not None else None,
            extra=extra,
        ).to_json()
        if is_main:
            (run_dir / "summary.json").write_text(json.dumps(summary, indent=2))
        return summary
    finally:
        release_trainer(trainer)  # before the process group is left (leave_process_group)


def run_training(
    cfg: TrainCommandConfig, resume: bool = False, console: Any = None, on_trainer: Any = None
) -> dict:
    """Train per ``cfg``; returns a summary (steps, run folder, final model path, skips).

    ``console`` (a rich console on stderr) receives the skipped-rows notice and the live progress
    line (``paravt.train.progress``), which then replaces HF's tqdm bar and printed log dicts.
    """
    # the trainer, the rollout and vLLM load when a run starts (the recipe needs TRL only)
    from paravt.rollout.vllm import require_vllm
    from paravt.rollout.vllm_server import ServerGeneration
    from paravt.train.launch.resumed_steps import StepsFromArgs
    from paravt.train.launch.stopping import StopAtStepEnd, StopRequest
    from paravt.train.metrics import MetricsJsonl
    from paravt.train.trainer import ParaGRPOTrainer

    run_dir = Path(cfg.output_dir)
    args = para_config(cfg)  # validates before anything heavy happens
    check_process_group(args.world_size)
    require_vllm(args)  # use_vllm=true without vLLM installed: the fix, before any model loads
    is_main = args.process_index == 0
    run_dir.mkdir(parents=True, exist_ok=True)

    ckpt = agreed_checkpoint(run_dir, resume, args)
    # read by the vLLM server generator: a resumed run pushes its weights before the probe
    args.resume_from_checkpoint = str(ckpt) if ckpt else None
    metrics_path = run_dir / args.metrics_file
    if is_main:
        start_run_folder(run_dir, cfg, args, ckpt, metrics_path, log_dirs=("episodes",))
    model_path = shared_model_path(cfg.model, run_dir, args)
    warn_if_plain_ddp_too_big(cfg, args, model_path)
    colocated_model_length(cfg, args, model_path, gpu_memory_bytes())
    make_builtin_data(cfg.data, run_dir, args)
    rows, report = training_rows(cfg.data, run_dir, args, console)
    check_user_template(cfg.engine.user_template, rows)  # every row now, not at its first step

    model, processor = load_model(model_path, args)
    trainer = ParaGRPOTrainer(
        model=model,
        args=args,
        train_dataset=to_dataset(rows),
        processing_class=processor,
        callbacks=[MetricsJsonl(metrics_path), StepsFromArgs()],
    )
    if is_main and console is not None:  # the live line replaces HF's tqdm bar and log dicts
        from transformers.trainer_callback import PrinterCallback, ProgressCallback

        from paravt.train.progress import ProgressLine  # loads transformers

        trainer.remove_callback(ProgressCallback)
        trainer.remove_callback(PrinterCallback)
        trainer.add_callback(ProgressLine(console))
    with StopRequest() as request:  # SIGTERM: save and stop after the step in progress
        stop = StopAtStepEnd(request, args.world_size)
        trainer.add_callback(stop)
        generator = getattr(trainer, "vllm_generation", None)
        if isinstance(generator, ServerGeneration):  # an outage's wait ends on the request too
            generator.client.stop = request.reason
        if on_trainer is not None:  # tests and benchmarks attach probes here
            on_trainer(trainer)
        try:
            return train_and_save(
                trainer, processor, run_dir, ckpt, metrics_path, {"data": report.summary()}, stop
            )
        finally:
            if isinstance(generator, ServerGeneration):
                generator.client.close()  # its /health watcher


def load_command_config(
    config: str | None, overrides: tuple[str, ...] = (), check_trainer: bool = True
) -> TrainCommandConfig:
    """``paravt train``'s config: ``load_config`` of a recipe (a YAML path or a packaged recipe's
    name, ``recipe_path``) and ``--set`` overrides. ``check_trainer`` builds the
    ``ParaGRPOConfig`` too, so a bad combination fails before anything loads; the memory plan
    leaves it out, since HF refuses ``bf16`` on a machine without a GPU, where a plan is made
    before a launch."""
    return load_config(
        TrainCommandConfig,
        recipe_path(config) if config else None,
        overrides,
        check=para_config if check_trainer else None,
    )
