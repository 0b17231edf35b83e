"""Every command of README.md and the guides (INFER, TRAIN and docs/train/, EVAL, TOY_TASK), run
as written.

Each command of their shell blocks (``doc_commands.shell_commands``, the extraction
``tests/train/test_docs_launch_plans.py`` uses too) is either run here, in a folder of its own,
and must exit 0 with no traceback on stderr; or skipped with the reason it cannot run on a test
machine (a GPU, vLLM or another server, the network, a benchmark's or the reader's own files,
hours of work). A command the table below does not know fails the test, so a new command in the
docs is either run or given its reason. A command whose output a doc shows (a fenced block right
after its own) is run and its stdout compared with that block, under the masking rule of
docs/TESTING.md, "Output the docs show" (``doc_commands.shown_outputs``, ``output_differences``).

How it runs: a single ``paravt`` command with no shell syntax goes through the CLI's ``main``
in this process, with its words as the shell splits them, in the same folder and ``HOME``; every
other (the README's main command, chained with ``&&``, among them) runs in ``bash`` through the
console script. Why: a fresh interpreter's imports (torch, torchcodec, transformers) were 4 to 6
s of each command here, most of this file's time, and the README's command still checks the
console script and the shell.

"As written" allows three changes: ``/tmp/`` becomes the test's own folder, ``~`` is a home
folder made for the test, and a toy set of more than ``TOY_SET_CAP`` videos is made with that
many: video i of a set depends on (seed, split, i) alone (tests/toy/test_toy_task_prefix.py), so
the smaller set is the first videos of the one the command makes, and the 1,000 of the docs took
two thirds of this file's time (a set of 4 still has every question type the generator mixes). Inputs a command names as the reader's own (``video.mp4``,
``toy.mp4``, ``./my-checkpoint``) are made first, from the generated test videos and the tiny
model. The runs use the shipped toy demo and the tiny models only.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from doc_commands import output_differences, shell_commands, shown_outputs

#: each command is long and sets up its own folder: the tests go to whichever worker is free
pytestmark = pytest.mark.spread

REPO = Path(__file__).resolve().parents[2]
DOCS = ["README.md", "docs/INFER.md", "docs/TRAIN.md", "docs/EVAL.md", "docs/TOY_TASK.md"]
DOCS += sorted(p.relative_to(REPO).as_posix() for p in (REPO / "docs" / "train").glob("*.md"))

#: (pattern, why it is not run here), first match wins
SKIPPED = [
    (
        r"^python benchmarks/bench_backend_agreement",
        "a benchmark script over the reader's toy run "
        "folder (RUN/); benchmarks/README.md says how its numbers were made",
    ),
    (r"^VENV/bin/python", "needs vLLM's own environment (scripts/vllm-env.sh) and a run folder"),
    (r"^scripts/vllm-env\.sh", "builds vLLM's environment: downloads wheels (network)"),
    (
        r"torchrun|accelerate launch",
        "a multi-GPU launch; its memory plan runs in tests/train/test_docs_launch_plans.py",
    ),
    (
        r"--backend openai|python -m lmms_eval",
        "needs an OpenAI-compatible model server (vLLM, SGLang) and, for lmms-eval, the harness",
    ),
    (
        r"^paravt train (?!.*model=tests/train/data/).*--plan\b",
        "a memory plan: it runs in-process, with every train launch of the guides, in "
        "tests/train/test_docs_launch_plans.py",
    ),
    (
        r"--set model=/models/",
        "the paper recipe on an 8B or 2B model in /models (GPUs); its plan "
        "runs in tests/train/test_docs_launch_plans.py",
    ),
    (
        r"^paravt infer video\.mp4 -q .*(--option \"He|--type tvg|--quiet\b)|jq -c",
        "the default model, the released 8B checkpoint: a download (network) and a GPU",
    ),
    (r"~/data/", "a benchmark's release files in the reader's folders, and the 8B model"),
    (r"paravt view runs/|paravt eval report runs/", "the reader's own eval and training runs"),
    (
        r"--config sft-toy",
        "sft-toy's 2 epochs over 2,000 toy episodes: hours on 2 cores (its "
        "mechanics run in tests/cli/test_training_output.py on sft-smoke)",
    ),
    (
        r"model=runs/sft-toy/final \.\.\.",
        "continues from the run folder of the sft command above "
        "('...' elides the data keys); the plan runs in tests/train/test_docs_launch_plans.py",
    ),
]


@dataclass
class Run:
    """How to run one command: the inputs it needs first (``setup``), where (``cwd``: the
    test's folder, or the repository for a path relative to it), and whether it is ``slow``."""

    setup: tuple[str, ...] = ()
    cwd: str = "work"
    slow: bool = False


#: (pattern, how to run it), first match wins
RUN = [
    (r"^apt-get update .*paravt make-toy-task /tmp/paravt-demo", Run()),  # the README's main
    (r"^paravt infer video\.mp4 -q \"\.\.\.\" --model \./my-checkpoint", Run(("video", "ckpt"))),
    (r"^paravt infer toy\.mp4 .*--model toy-demo", Run(("toy",))),
    (r"^paravt train --config cpu-smoke$", Run()),
    (r"^paravt train --config paragrpo --set model=tests/train/data/", Run(cwd="repo")),
    (r"^paravt make-tiny-model toy-model --preset toy", Run()),
    (r"^paravt make-toy-task toy --n 1000", Run()),
    (r"^paravt make-toy-task data/toy --n", Run()),
    (r"^paravt make-toy-task (still|glimpse|OUT) --n", Run()),
    (r"^paravt eval --benchmark jsonl --data OUT --videos OUT --model toy-demo",
     Run(("toy_eval_split",))),
    (r"^paravt serve-tools --video-root ~/\.cache/huggingface/videomme --write-entry",
     Run(("videomme_root",))),
]  # fmt: skip

#: the most videos a docs command's toy set has here (the module docstring says why)
TOY_SET_CAP = 4
_TOY_SET_SIZE = re.compile(r"(paravt make-toy-task \S+ --n\s+)(\d+)")

#: the parts of a chained command that install software: left out, with this reason
INSTALL = re.compile(r"^(apt-get|pip|sudo) ")


def _commands() -> list[tuple[str, str]]:
    out = []
    for doc in DOCS:
        for line, command in shell_commands((REPO / doc).read_text()):
            if "paravt" in command or command.startswith(("python ", "VENV/", "scripts/")):
                out.append((f"{doc}:{line}", command))
    return out


COMMANDS = _commands()


def _verdict(command: str) -> Run | str | None:
    for pattern, reason in SKIPPED:
        if re.search(pattern, command):
            return reason
    for pattern, run in RUN:
        if re.search(pattern, command):
            return run
    return None


def test_every_doc_command_is_run_or_given_a_reason():
    assert len(COMMANDS) > 30, COMMANDS
    unknown = [f"{where}: {cmd}" for where, cmd in COMMANDS if _verdict(cmd) is None]
    assert not unknown, "add these docs commands to RUN or SKIPPED:\n" + "\n".join(unknown)
    ran = [c for _, c in COMMANDS if isinstance(_verdict(c), Run)]
    assert len(ran) >= 10, ran


def _params():
    out = []
    for where, cmd in COMMANDS:
        verdict = _verdict(cmd)
        if isinstance(verdict, str):
            out.append(pytest.param(cmd, None, id=where, marks=pytest.mark.skip(reason=verdict)))
        elif isinstance(verdict, Run):
            marks = [pytest.mark.slow] if verdict.slow else []
            out.append(pytest.param(cmd, verdict, id=where, marks=marks))
    return out


def _as_written(command: str, work: Path) -> str:
    """The command with ``/tmp/`` in the test's folder, its install steps left out and a toy
    set of at most ``TOY_SET_CAP`` videos."""
    parts = [p for p in command.split(" && ") if not INSTALL.match(p.strip())]
    text = " && ".join(parts).replace("/tmp/", f"{work}/tmp/")
    return _TOY_SET_SIZE.sub(lambda m: m[1] + str(min(int(m[2]), TOY_SET_CAP)), text)


def test_a_toy_set_is_made_smaller_and_nothing_else_changes(tmp_path):
    assert _as_written("paravt make-toy-task data/toy --n 200  --seed 0", tmp_path) == (
        f"paravt make-toy-task data/toy --n {TOY_SET_CAP}  --seed 0"
    )
    assert _as_written("paravt make-toy-task /tmp/t --n 1 --seed 4", tmp_path).endswith(
        "--n 1 --seed 4"
    )


@pytest.fixture
def inputs(tmp_path, gop_video, tiny_qwen3_dir):
    """``make(name)`` puts the input ``name`` a command expects into the test's folder."""
    work = tmp_path / "work"
    (work / "tmp").mkdir(parents=True)
    home = tmp_path / "home"
    home.mkdir()

    def make(name: str) -> None:
        if name == "video":
            shutil.copy(gop_video, work / "video.mp4")
        elif name == "ckpt":
            shutil.copytree(tiny_qwen3_dir, work / "my-checkpoint")
        elif name == "toy":
            from paravt.toy.generate import make_toy_task
            from paravt.toy.task import ToyTaskConfig

            make_toy_task(ToyTaskConfig(out=str(tmp_path / "toy"), n=1, seed=4,
                                        visibility_videos=0))  # fmt: skip
            shutil.copy(tmp_path / "toy" / "videos" / "train-00000.mp4", work / "toy.mp4")
        elif name == "toy_eval_split":  # the make-toy-task command above it, 2 videos
            from paravt.toy.generate import make_toy_task
            from paravt.toy.task import ToyTaskConfig

            make_toy_task(ToyTaskConfig(out=str(work / "OUT"), n=2, seed=0, split="eval",
                                        question_types=["mcq"], visibility_videos=0))  # fmt: skip
        elif name == "videomme_root":
            (home / ".cache" / "huggingface" / "videomme").mkdir(parents=True)

    return work, home, make


def _shell(command: str, cwd: Path, home: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, HOME=str(home), OMP_NUM_THREADS="1")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(
        ["bash", "-o", "pipefail", "-c", command], cwd=cwd, env=env, capture_output=True,
        text=True, timeout=1800,
    )  # fmt: skip


#: what makes a command the shell's to run: chaining, pipes, redirection, expansion, quoting
#: of a kind ``shlex`` would read otherwise than bash
_SHELL_SYNTAX = re.compile(r"[|&;<>$`~\\*?(){}]")


def _needs_shell(command: str) -> bool:
    """Anything but ``paravt`` with words alone: the text outside single quotes, double quotes
    that expand nothing and a trailing comment must hold no shell syntax."""
    if not command.startswith("paravt "):
        return True
    bare = re.sub(r"'[^']*'", "", command)
    bare = re.sub(r'"[^"$`\\]*"', "", bare)
    bare = re.sub(r"(^|\s)#.*$", "", bare)
    return bool(_SHELL_SYNTAX.search(bare))


def _in_process(command: str, cwd: Path, home: Path, monkeypatch, capfd) -> tuple[int, str, str]:
    """``(exit code, stdout, stderr)`` of ``paravt ...`` run through ``main`` in this process."""
    from paravt.cli.main import main

    monkeypatch.chdir(cwd)
    monkeypatch.setenv("HOME", str(home))
    capfd.readouterr()
    code = main(shlex.split(command, comments=True)[1:])
    out = capfd.readouterr()
    return code, out.out, out.err


def test_only_a_single_plain_paravt_command_runs_in_process():
    assert not _needs_shell('paravt infer toy.mp4 -q "What colour?" --option red --model toy-demo')
    assert not _needs_shell("paravt make-toy-task still --n 4 --set 'durations=[10]'")
    assert not _needs_shell("paravt make-tiny-model m --preset toy  # a comment (with a ';')")
    for shell in (
        "apt-get update && paravt infer v.mp4",
        "paravt eval x | jq -c .",
        "paravt serve-tools --video-root ~/videos",
        "python benchmarks/b.py",
        'paravt infer "$HOME/v.mp4"',
        "paravt infer *.mp4",
    ):
        assert _needs_shell(shell), shell


def _run(command: str, run: Run, inputs, monkeypatch, capfd) -> tuple[int, str, str]:
    """``(exit code, stdout, stderr)`` of a docs command run as written (module docstring),
    its inputs made first; stdout with the test's folders written as the doc writes them."""
    work, home, make = inputs
    for name in run.setup:
        make(name)
    cwd = REPO if run.cwd == "repo" else work
    written = _as_written(command, work)
    if _needs_shell(written):
        r = _shell(written, cwd, home)
        code, stdout, stderr = r.returncode, r.stdout, r.stderr
    else:
        code, stdout, stderr = _in_process(written, cwd, home, monkeypatch, capfd)
    for folder, as_written in ((f"{work}/tmp/", "/tmp/"), (f"{work}/", ""), (str(home), "~"),
                               (f"{REPO}/", "")):  # fmt: skip
        stdout = stdout.replace(folder, as_written)
    return code, stdout, stderr


@pytest.mark.parametrize("command, run", _params())
def test_the_doc_command_runs_as_written(command, run, inputs, monkeypatch, capfd):
    code, _, stderr = _run(command, run, inputs, monkeypatch, capfd)
    assert code == 0, f"{command}\nexit {code}\n{stderr[-3000:]}"
    assert "Traceback" not in stderr, stderr[-3000:]
    assert "internal error" not in stderr, stderr[-3000:]


#: ``(doc:line, command, output shown)`` of every command whose output a doc shows in the
#: block right after it (docs/TESTING.md, "Output the docs show")
SHOWN = [
    (f"{doc}:{line}", command, shown)
    for doc in DOCS
    for line, command, shown in shown_outputs((REPO / doc).read_text())
]


def test_a_shown_output_is_of_a_command_that_runs_here():
    assert SHOWN, "the docs show no command's output: the comparison would check nothing"
    skipped = [f"{where}: {cmd}" for where, cmd, _ in SHOWN if not isinstance(_verdict(cmd), Run)]
    assert not skipped, "a doc shows the output of a command not run here:\n" + "\n".join(skipped)


@pytest.mark.parametrize("command, shown", [(c, o) for _, c, o in SHOWN],
                         ids=[where for where, _, _ in SHOWN])  # fmt: skip
def test_the_output_a_doc_shows_is_the_commands_own(command, shown, inputs, monkeypatch, capfd):
    run = _verdict(command)
    assert isinstance(run, Run), command
    code, stdout, stderr = _run(command, run, inputs, monkeypatch, capfd)
    assert code == 0, f"{command}\nexit {code}\n{stderr[-3000:]}"
    differences = output_differences(shown, stdout)
    assert not differences, (
        f"{command}: the output the doc shows is not what the command prints:\n"
        + "\n".join(differences[:10])
        + f"\n--- printed ---\n{stdout}"
    )


def test_the_comparison_masks_only_what_the_rule_says():
    printed = "model written to toy in 1.37 s\nsaved as runs/x/checkpoint-2 (step 2)\n"
    assert (
        output_differences("model written to toy in <<n>> s\nsaved as <<path>> (step 2)", printed)
        == []
    )
    assert output_differences(
        "model written to toy in <<n>> s\nsaved as <<path>> (step 3)", printed
    )
    assert output_differences("model written to toy in 1.0 s\n<<...>>", printed)  # not masked
    assert output_differences("model written to toy in <<n>> s", printed)  # a line missing
