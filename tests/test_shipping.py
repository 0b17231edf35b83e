"""What ships reads as a product, not as a work log, and runs on a fresh clone.

- no tracker numbers ("issue 12", "#18", "(issue 14.3)") in any tracked text file: code, docs,
  recipes, experiment notes and tests say what a thing is for, not which ticket asked for it;
- no absolute path of the machine the work was done on in a tracked file (data files record
  paths relative to their run folder, commands use placeholders such as ``OUT``);
- every packaged recipe loads in a folder that has no ``../shared`` beside it, the smoke recipes'
  data included, and the documented quick starts name no folder a clone does not have.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
THIS = Path(__file__).resolve().relative_to(REPO).as_posix()

#: a tracker reference: "issue 12", "issues 14", "Issue #7", "(#18)", " #18"
TRACKER = re.compile(r"\bissues? #?\d+|\(#\d+\)|(?:^|\s)#\d+\b", re.IGNORECASE | re.MULTILINE)
#: a path of this machine's layout (a user's home, the work tree, root's home)
HOST_PATH = re.compile(r"(?<![\w.])/(?:work|root|home/\w+)/")
#: data files may not hold /tmp paths either: a recorded path must be relative to its run
TMP_PATH = re.compile(r"(?<![\w.])/tmp/")
DATA_SUFFIXES = {".json", ".jsonl", ".yaml", ".yml", ".log", ".sh", ".txt", ".csv"}
TEXT_SUFFIXES = DATA_SUFFIXES | {".py", ".md", ".toml", ".cfg", ".ini", ""}


def tracked_text_files() -> list[Path]:
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True, text=True
        ).stdout
        names = [n for n in out.split("\0") if n]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout (an sdist): walk it
        names = [
            p.relative_to(REPO).as_posix()
            for p in REPO.rglob("*")
            if p.is_file() and ".git" not in p.parts and ".venv" not in p.parts
        ]
    return [REPO / n for n in names if Path(n).suffix in TEXT_SUFFIXES and n != THIS]


def _hits(pattern: re.Pattern, files: list[Path]) -> list[str]:
    found = []
    for path in files:
        try:
            text = path.read_text()
        except (UnicodeDecodeError, FileNotFoundError):
            continue
        for m in pattern.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            found.append(f"{path.relative_to(REPO)}:{line}: {m.group(0).strip()!r}")
    return found


def test_no_tracker_numbers_in_what_ships():
    found = _hits(TRACKER, tracked_text_files())
    assert not found, "say what it is for, not which ticket asked:\n" + "\n".join(found[:40])


#: files that name host paths on purpose: the script that rewrites them
HOST_PATHS_NAMED = {"experiments/toy_paradox/slim.py"}


def test_no_host_paths_in_tracked_files():
    files = [
        p for p in tracked_text_files() if p.relative_to(REPO).as_posix() not in HOST_PATHS_NAMED
    ]
    found = _hits(HOST_PATH, files)
    found += _hits(TMP_PATH, [p for p in files if p.suffix in DATA_SUFFIXES])
    assert not found, "make these paths relative to their run folder:\n" + "\n".join(found[:40])


def test_the_patterns_see_what_they_must():
    assert TRACKER.search("rule for issue 14.3") and TRACKER.search("fixed in (#18)")
    assert TRACKER.search("see #7 for why") and not TRACKER.search('"CHA2#2"')
    assert HOST_PATH.search('"video": "/work/runs/tq/toy/a.mp4"')
    assert not HOST_PATH.search("runs/work/x") and TMP_PATH.search('"/tmp/q/toy"')


def test_quick_starts_name_no_folder_a_clone_lacks():
    docs = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    recipes = sorted((REPO / "src" / "paravt" / "train" / "recipes").glob("*.yaml"))
    found = _hits(re.compile(r"/path/to/shared\S*"), docs + recipes)
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    "name", ["cpu-smoke", "sft-smoke", "sft-toy", "paragrpo", "paragrpo-sync", "vanilla_grpo",
             "vanilla_grpo-sync"]
)  # fmt: skip
def test_no_packaged_recipe_points_at_shared(name, tmp_path, monkeypatch):
    """Every recipe's data names no ``../shared`` folder; the CPU ones also load, as typed
    configs, in a folder without one (the GPU recipes' trainer keys need a GPU to build)."""
    from paravt.config import read_yaml, to_dict
    from paravt.train.run import RECIPES, load_command_config, recipe_path
    from paravt.train.sft.run import load_sft_config

    assert set(RECIPES) == {
        "cpu-smoke", "sft-smoke", "sft-toy", "paragrpo", "paragrpo-sync", "vanilla_grpo",
        "vanilla_grpo-sync",
    }  # fmt: skip
    assert "shared" not in str(read_yaml(recipe_path(name)).get("data"))
    if name in ("paragrpo", "paragrpo-sync", "vanilla_grpo", "vanilla_grpo-sync"):
        return
    clone = tmp_path / "clone"  # no ../shared beside it
    clone.mkdir()
    monkeypatch.chdir(clone)
    load = load_sft_config if name.startswith("sft") else load_command_config
    assert "shared" not in str(to_dict(load(name, ()))["data"])


@pytest.mark.parametrize("name", ["cpu-smoke", "sft-smoke"])
def test_the_smoke_recipes_find_their_data_on_a_fresh_clone(name, tmp_path, monkeypatch):
    """The data step of a run, as ``paravt train`` / ``paravt sft`` take it: ``builtin:toy`` is
    generated into the run folder, and every row is usable."""
    from types import SimpleNamespace

    from paravt.train.run import load_command_config, make_builtin_data, training_rows
    from paravt.train.sft.run import load_sft_config

    monkeypatch.chdir(tmp_path)
    load = load_sft_config if name.startswith("sft") else load_command_config
    cfg = load(name, (f"output_dir={tmp_path / 'run'}",))
    run_dir = Path(cfg.output_dir)
    run_dir.mkdir(parents=True)
    one_process = SimpleNamespace(process_index=0, world_size=1)
    make_builtin_data(cfg.data, run_dir, one_process)
    rows, report = training_rows(cfg.data, run_dir, one_process)
    assert len(rows) == 8 and not report.skipped
    assert {r.question_type for r in rows} == {"mcq", "tvg"}
    assert all(Path(r.video).is_file() for r in rows)


def test_every_package_data_pattern_ships_a_file():
    """A package-data glob that matches nothing names a file that does not exist."""
    import tomllib

    data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    roots = {"paravt": REPO / "src" / "paravt", "paravt.kernels": REPO / "kernels",
             "paravt.cli": REPO / "cli"}  # fmt: skip
    empty = []
    for package, patterns in data["package-data"].items():
        top, _, rest = package.partition(".")
        base = roots.get(package) or roots[top] / rest.replace(".", "/")
        empty += [f"{package}: {p}" for p in patterns if not any(base.glob(p))]
    assert not empty, f"package-data patterns that match no file: {empty}"
