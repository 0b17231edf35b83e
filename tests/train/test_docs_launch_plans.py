"""Every launch command of the train guides (docs/TRAIN.md and docs/train/*.md) goes through
``paravt train --plan`` and must fit.

Why: the docs' examples went stale as the recipes changed (a multi-node example at 98 prompts a
step and ~273 GB a GPU, a colocated-vLLM example under plain DDP). Each fenced ``bash`` block's
``paravt train`` line, alone or under ``torchrun`` / ``accelerate launch``, is parsed here: the
launcher gives the world size (``--nnodes × --nproc_per_node``, ``--num_processes``) and the
accelerate config; the accelerate and DeepSpeed files it names are the ones the docs print
(their ``yaml`` / ``json`` blocks); a model folder is replaced by a folder holding only that
model's ``config.json`` (no weight, no download). The plan then runs in-process through the CLI
and must exit 0: it fits the GPU it names, and the step-time estimate computes.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
import yaml
from doc_commands import fenced_blocks, shell_commands

from paravt.cli.main import main
from paravt.train.run import load_command_config

ROOT = Path(__file__).resolve().parents[2]
#: the train guides: the entry page and its topics
GUIDES = [ROOT / "docs" / "TRAIN.md", *sorted((ROOT / "docs" / "train").glob("*.md"))]
DATA = ROOT / "tests" / "train" / "data"
#: a model's folder name in the docs -> a folder with its published config.json
MODEL_CONFIGS = {
    "Qwen3-VL-8B-Instruct": DATA / "qwen3-vl-8b",
    "qwen3-vl-8b": DATA / "qwen3-vl-8b",
    "Qwen3-VL-2B-Instruct": DATA / "qwen3-vl-2b",
}
#: run folders the docs train from, and the model they hold (sft-toy fine-tunes its toy preset)
RUN_MODELS = {"runs/sft-toy/final": "tiny:qwen3-vl:toy"}
#: how many train launch commands the guides hold at least (a parser that finds none fails)
MIN_COMMANDS = 10
#: ... and the entry page and the multi-GPU page each
MIN_PER_GUIDE = {"TRAIN.md": 3, "MULTI_GPU.md": 3}


def train_commands(text: str) -> list[tuple[int, str]]:
    """``(line number, command)`` of each train launch in the bash blocks (continuations
    joined, comments dropped: ``doc_commands.shell_commands``)."""
    return [(n, c) for n, c in shell_commands(text, ("bash",)) if _is_train(shlex.split(c))]


def _is_train(words: list[str]) -> bool:
    for i, w in enumerate(words[:-1]):
        if (w.endswith("paravt") or w == "paravt.cli.main") and words[i + 1] == "train":
            return True
    return False


def doc_config_files(text: str, folder: Path) -> None:
    """The accelerate / DeepSpeed files the docs print, written under the names they use."""
    for lang, _, body in fenced_blocks(text):
        if lang == "yaml":
            data = yaml.safe_load(body)
            if not isinstance(data, dict):
                continue
            kind = str(data.get("distributed_type", ""))
            name = {"MULTI_GPU": "ddp.yaml", "FSDP": "fsdp.yaml"}.get(kind)
            if kind == "DEEPSPEED":
                name = f"zero{data['deepspeed_config']['zero_stage']}.yaml"
            if name:
                (folder / name).write_text(body)
        elif lang == "json" and "zero_optimization" in body:
            stage = json.loads(body)["zero_optimization"]["stage"]
            (folder / f"ds_zero{stage}.json").write_text(body)


def plan_argv(command: str) -> list[str]:
    """The ``paravt train --plan`` arguments of a documented launch command."""
    words = shlex.split(command)
    while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):  # VAR=value prefixes
        words.pop(0)
    at = next(i for i in range(len(words) - 1) if words[i + 1] == "train" and _is_train(words[i:]))
    launcher = words[:at]
    args = [w for w in words[at + 2 :] if w != "..."]  # "..." elides the data keys
    world, acc_config = None, None
    if launcher and launcher[0] == "srun" and "torchrun" in launcher:  # Slurm: one per node
        launcher = launcher[launcher.index("torchrun") :]
    if launcher and launcher[0] == "torchrun":
        opts = _options(launcher[1:])
        world = int(opts.get("--nnodes", 1)) * int(opts.get("--nproc_per_node", 1))
    elif launcher[:2] == ["accelerate", "launch"]:
        opts = _options(launcher[2:])
        acc_config = opts.get("--config_file")
        if "--num_processes" in opts:
            world = int(opts["--num_processes"])
    overrides = [args[i + 1] for i, a in enumerate(args[:-1]) if a == "--set"]
    config = args[args.index("--config") + 1]
    model = next((o.split("=", 1)[1] for o in overrides[::-1] if o.startswith("model=")), None)
    if model is None:
        model = load_command_config(config, tuple(overrides), check_trainer=False).model
    argv = ["train", *args, "--set", f"model={_config_folder(model)}"]
    if "--plan" not in args:
        argv.append("--plan")
    if world and "--world-size" not in args:
        argv += ["--world-size", str(world)]
    if acc_config and "--accelerate-config" not in args:
        argv += ["--accelerate-config", acc_config]
    return argv


def _options(words: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for i, w in enumerate(words):
        if w.startswith("--"):
            nxt = words[i + 1] if i + 1 < len(words) else ""
            out[w] = "" if nxt.startswith("-") else nxt
    return out


def _config_folder(model: str) -> str:
    if model.startswith("tiny:"):
        return model
    if model in RUN_MODELS:
        return RUN_MODELS[model]
    name = Path(model).name
    if name not in MODEL_CONFIGS:
        raise AssertionError(
            f"model={model!r}: no config.json for it in tests/train/data (MODEL_CONFIGS); name a "
            "model the docs test knows, or add its published config.json"
        )
    return str(MODEL_CONFIGS[name])


def _where(path: Path) -> str:
    return path.relative_to(ROOT / "docs").as_posix()


#: ``(page, line number, command)`` of every train launch in the guides
COMMANDS = [(_where(p), n, c) for p in GUIDES for n, c in train_commands(p.read_text())]


def test_the_docs_hold_the_launch_commands():
    assert len(COMMANDS) >= MIN_COMMANDS, COMMANDS
    for launcher in ("torchrun ", "accelerate launch ", "paravt train "):
        assert any(launcher in c for _, _, c in COMMANDS), launcher
    for name, least in MIN_PER_GUIDE.items():
        found = [c for page, _, c in COMMANDS if Path(page).name == name]
        assert len(found) >= least, (name, found)


@pytest.mark.parametrize(
    "page,line,command", COMMANDS, ids=[f"{page}:{n}" for page, n, _ in COMMANDS]
)
def test_every_documented_launch_fits_its_plan(page, line, command, tmp_path, monkeypatch, capsys):
    for guide in GUIDES:  # the accelerate and DeepSpeed files may be printed on another page
        doc_config_files(guide.read_text(), tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    argv = plan_argv(command)
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc == 0, f"docs/{page}:{line}: {command}\n  plan: paravt {shlex.join(argv)}\n{err}"
    assert "fits" in out and "step time, an ESTIMATE" in out, out


def test_a_stale_launch_is_caught():
    """The multi-node example as it stood (plain DDP, 7 prompts a rank on top of the recipe's
    accumulation of 7) is refused by the same path."""
    stale = (
        "torchrun --nnodes 2 --nproc_per_node 8 -m paravt.cli.main train --config paragrpo "
        "--set model=/shared/models/Qwen3-VL-8B-Instruct --set trainer.per_device_train_batch_size=7"
    )
    assert main(plan_argv(stale)) == 2
