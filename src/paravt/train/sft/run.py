"""``paravt sft`` as a library call: recipe → run folder → rows → trajectories → SFTTrainer.

The run folder holds what ``paravt train``'s does — ``config.json`` (the resolved config),
``data_report.json`` + ``skipped_rows.jsonl``, ``metrics.jsonl`` (one row per logging step:
loss, tokens, token accuracy, plus the run's episodes and skips), ``checkpoint-N/``, ``final/``
(a model folder ``--model`` / ``model:`` loads) and ``summary.json`` — plus ``trajectories/``
(the played episodes, see ``paravt.train.sft.trajectories``).

Why TRL's ``SFTTrainer`` and not HF ``Trainer``: it takes pre-tokenised rows when
``dataset_kwargs.skip_prepare_dataset`` is set and the rows carry ``labels`` (its own
``completion_mask`` folding happens only in the dataset preparation that this skips), accepts a
custom collator, and its loss is the masked next-token NLL through TRL's fused LM head, with
token accuracy, entropy and token counts logged. What it cannot do is build such rows from
images: its vision path re-renders the chat and re-runs the processor, which is exactly the
re-tokenising paravt never does. So the rows come from the engine and our collator batches them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trl import SFTConfig as TRLSFTConfig

from paravt.agent.engine import EpisodeEngine
from paravt.config import build, load_config
from paravt.errors import ConfigError
from paravt.train.launch.checkpoints import agreed_checkpoint
from paravt.train.launch.process_group import join_process_group
from paravt.train.launch.startup import shared_model_path
from paravt.train.run import (
    load_model,
    make_builtin_data,
    recipe_path,
    start_run_folder,
    train_and_save,
    training_rows,
)
from paravt.train.sft.config import SFTConfig

__all__ = ["load_sft_config", "run_sft"]

#: per-step rows in the run folder (the name ``paravt train`` uses by default)
METRICS_FILE = "metrics.jsonl"
#: trainer keys the pre-tokenised multimodal streams cannot honour
_REFUSED = {
    "packing": "an episode's frames belong to its own stream; streams cannot be packed",
    "padding_free": "Qwen-VL's M-RoPE needs padded rows with their image positions",
    "assistant_only_loss": "the loss mask comes from the engine (generated tokens), not the template",
    "completion_only_loss": "the loss mask comes from the engine (generated tokens)",
}


def sft_args(cfg: SFTConfig):
    """TRL's ``SFTConfig`` from the ``trainer`` section, with the run folder; what the
    pre-tokenised streams cannot honour is refused (``_REFUSED``)."""
    data = cfg.trainer.arguments()
    for key, why in _REFUSED.items():
        if data.get(key):
            raise ConfigError(f"trainer.{key}: not supported by paravt sft ({why}); drop it")
    if data.get("dataset_kwargs") not in (None, {}):
        raise ConfigError("trainer.dataset_kwargs: paravt sft sets it (the rows are pre-tokenised)")
    join_process_group(data, TRLSFTConfig)  # before HF sets up devices (__post_init__)
    data["output_dir"] = cfg.output_dir
    data["dataset_kwargs"] = {"skip_prepare_dataset": True}
    data["remove_unused_columns"] = False  # keep pixel_values / image_grid_thw for the collator
    return build(TRLSFTConfig, data, prefix="trainer.")


def load_sft_config(config: str | None, overrides: tuple[str, ...] = ()) -> SFTConfig:
    """``paravt sft``'s config: ``load_config`` of a recipe (a YAML path or a packaged recipe's
    name) and ``--set`` overrides, with TRL's ``SFTConfig`` built once to fail fast."""
    return load_config(
        SFTConfig, recipe_path(config) if config else None, overrides, check=sft_args
    )


def model_card(name: str, base_model: str) -> str:
    """The run folder's README.md: what the model was fine-tuned from and how. TRL's own card
    names the base model only when it is a Hub id, and wrote "a fine-tuned version of
    [None](https://huggingface.co/None)" for a local folder or a tiny model."""
    hub = not base_model.startswith("tiny:") and not Path(base_model).expanduser().exists()
    front = f"base_model: {base_model}\n" if hub else ""
    return (
        f"---\n{front}library_name: transformers\ntags:\n- paravt\n- sft\n- trl\n---\n\n"
        f"# {name}\n\nFine-tuned from `{base_model}` with `paravt sft`: supervised fine-tuning "
        "on episodes the paravt episode engine played (parallel crop_video calls, then an "
        "answer), the loss on the generated tokens only, through TRL's SFTTrainer. `config.json` "
        "in the run folder holds the resolved recipe, `metrics.jsonl` the logged steps; the "
        "model is in `final/`.\n"
    )


def _trainer_class():
    """``ParaSFTTrainer``: TRL's SFTTrainer that adds the run's counts to every logged row, logs
    the first and the last step whatever ``logging_steps`` says (a run shorter than it trained
    in silence and wrote no ``metrics.jsonl``), and writes paravt's model card."""
    from transformers import TrainerCallback
    from trl import SFTTrainer

    class LogFirstAndLastStep(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == 1 or state.global_step >= state.max_steps:
                control.should_log = True
            return control

    class ParaSFTTrainer(SFTTrainer):
        _tag_names = ["trl", "sft", "paravt"]  # noqa: RUF012 - TRL reads a list

        def __init__(self, *args, run_counts: dict | None = None, base_model: str = "", **kw):
            super().__init__(*args, **kw)
            self.run_counts = dict(run_counts or {})
            self.base_model = base_model
            self.add_callback(LogFirstAndLastStep())

        def log(self, logs: dict, start_time: float | None = None) -> None:
            if "loss" in logs:
                logs = {**logs, **self.run_counts}
            super().log(logs, start_time)

        def create_model_card(self, model_name=None, dataset_name=None, tags=None) -> None:
            if self.is_world_process_zero():
                run_dir = Path(str(self.args.output_dir))
                card = model_card(model_name or run_dir.name, self.base_model)
                (run_dir / "README.md").write_text(card, encoding="utf-8")

    return ParaSFTTrainer


def run_sft(
    cfg: SFTConfig, resume: bool = False, console: Any = None, on_trainer: Any = None
) -> dict:
    """Play the trajectories (or reuse them on resume), fine-tune, save ``final/``; the summary."""
    from paravt.train.launch.resumed_steps import StepsFromArgs
    from paravt.train.metrics import MetricsJsonl
    from paravt.train.sft import trajectories as traj
    from paravt.train.sft.dataset import StreamCollator, trajectory_dataset

    run_dir = Path(cfg.output_dir)
    args = sft_args(cfg)
    is_main = args.process_index == 0
    run_dir.mkdir(parents=True, exist_ok=True)
    ckpt = agreed_checkpoint(run_dir, resume, args)
    metrics_path = run_dir / METRICS_FILE
    if is_main:
        start_run_folder(run_dir, cfg, args, ckpt, metrics_path)
    model_path = shared_model_path(cfg.model, run_dir, args)
    make_builtin_data(cfg.data, run_dir, args)
    rows, data_report = training_rows(cfg.data, run_dir, args, console)
    model, processor = load_model(model_path, args)

    folder = run_dir / traj.CACHE_DIR
    image_pad = processor.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    merge_area = int(getattr(processor.image_processor, "merge_size", 2)) ** 2
    with args.main_process_first(desc="trajectories"):
        report = traj.read_report(folder) if (resume or not is_main) else None
        if report is None:
            if not is_main:
                raise ConfigError(f"{folder}: the main process wrote no complete trajectory cache")
            backend = traj.make_trajectory_backend(
                cfg.trajectories.backend, cfg.trajectories.options, processor
            )
            inputs = traj.episode_inputs(
                rows, cfg.engine.frames, cfg.frames_gating, cfg.gating_choices, args.seed
            )
            report = traj.generate(
                EpisodeEngine(backend, cfg.engine),
                inputs,
                folder,
                image_pad,
                merge_area,
                cfg.trajectories.batch_size,
                args.max_length,
                console,
            )
    if report["kept"] == 0:
        raise ConfigError(
            f"no trajectory to train on: all {report['episodes']} episodes were skipped "
            f"({report['skip_reasons']}); see {folder / 'episodes.jsonl'}"
        )
    if is_main and console is not None:
        console.print(
            f"trajectories: {report['kept']} kept, {report['skipped']} skipped "
            f"{report['skip_reasons'] or ''}"
        )
    pixel_dtype = model.dtype if args.bf16 or args.fp16 else None
    trainer = _trainer_class()(
        model=model,
        args=args,
        train_dataset=trajectory_dataset(folder),
        processing_class=processor,
        data_collator=StreamCollator(processor, pixel_dtype),
        callbacks=[MetricsJsonl(metrics_path), StepsFromArgs()],
        run_counts={
            "episodes": report["kept"],
            "skipped_episodes": report["skipped"],
            "skipped_rows": len(data_report.skipped),
        },
        base_model=cfg.model,
    )
    if is_main and console is not None:  # one live line instead of HF's tqdm bar and log dicts
        from transformers.trainer_callback import PrinterCallback, ProgressCallback

        from paravt.train.progress import ProgressLine  # loads transformers

        trainer.remove_callback(ProgressCallback)
        trainer.remove_callback(PrinterCallback)
        trainer.add_callback(ProgressLine(console))
    if on_trainer is not None:  # tests attach probes here
        on_trainer(trainer)
    return train_and_save(
        trainer,
        processor,
        run_dir,
        ckpt,
        metrics_path,
        {"data": data_report.summary(), "trajectories": report},
    )
