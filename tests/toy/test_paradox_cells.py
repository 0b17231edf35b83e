"""The toy runner's RL cells: the ablations, the think prefix x anchor 2 x 2, and runs off the grid.

Why: the paradox table's vanilla arm differs from PARA-GRPO in gating, the anchor term and the
think prefix at once, so the prepared 2 x 2 (LOG.md, "Prepared, not run") must change exactly
one switch between neighbouring cells; and its runs (seeds 0-4) must be startable by name
without editing the runner's grid.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from repo_files import REPO, load_repo_file

CELLS = {  # cell -> (think prefix on, anchor on)
    "gate_bare": (False, False),
    "gate_prefix": (True, False),
    "gate_anchor": (False, True),
    "paragrpo": (True, True),
}


@pytest.fixture(scope="module")
def run():
    return load_repo_file("experiments/toy_paradox/run", "toy_paradox_run_cells")


@pytest.fixture(scope="module")
def settings(run):
    s, _ = run.run_settings("full", 20, None, 0)
    return s


def config(run, settings, recipe: str, seed: int = 3, sampler=None) -> tuple[dict, dict]:
    extra = () if sampler is None else (sampler,)
    return run.rl_config(
        settings, Path("OUT/toy"), Path("M"), Path("OUT/runs/x"), recipe, seed, *extra
    )


@pytest.mark.parametrize("cell", CELLS)
def test_each_cell_has_its_prefix_and_anchor_and_gates(run, settings, cell):
    cfg, record = config(run, settings, cell)
    prefix, anchor = CELLS[cell]
    assert cfg["engine"]["think_prefix"] == ("<think>\n" if prefix else "")
    assert cfg["rewards"]["anchor_lambda"] == (0.5 if anchor else 0.0)
    assert cfg["trainer"]["frames_gating"] is True and cfg["trainer"]["max_steps"] == 20
    assert record["recipe"] == "paragrpo-sync"  # PARA-GRPO's reward weights in every cell


def test_the_cells_differ_in_nothing_but_the_two_switches(run, settings):
    base, _ = config(run, settings, "paragrpo")
    for cell in ("gate_bare", "gate_prefix", "gate_anchor"):
        cfg, _ = config(run, settings, cell)
        cfg["engine"].pop("think_prefix"), cfg["rewards"].pop("anchor_lambda")
        other = json.loads(json.dumps(base))
        other["engine"].pop("think_prefix"), other["rewards"].pop("anchor_lambda")
        assert cfg == other, cell


def test_vanilla_is_ungated_without_prefix_or_anchor(run, settings):
    cfg, _ = config(run, settings, "vanilla_grpo")
    assert cfg["trainer"]["frames_gating"] is False and cfg["engine"]["think_prefix"] == ""
    assert cfg["rewards"]["anchor_lambda"] == 0.0


def test_the_paradox_tables_runs_get_the_configs_they_ran_with(run):
    """The config builder reproduces what the committed 12-step runs recorded."""
    s, _ = run.run_settings("full", 12, None, 0)
    ran = json.loads(
        (REPO / "experiments/toy_paradox/results/paradox-3seeds/results.json").read_text()
    )
    for recipe in ("paragrpo", "vanilla_grpo", "anchor_only", "gating_only"):
        _, record = config(run, s, recipe, seed=1)
        old = ran["rl_changes"][f"weak-{recipe}-s1"]
        # the file may be the recipe's synchronous twin once one is packaged (vanilla_grpo-sync)
        assert record["recipe"].removesuffix("-sync") == old["recipe"].removesuffix("-sync")
        assert record["changes"] == old["changes"], recipe


def test_a_server_run_keeps_its_staleness_and_port(run, settings):
    sampler = run.Sampler("server", 2, port=8123)
    cfg, _ = config(run, settings, "paragrpo", sampler=sampler)
    t = cfg["trainer"]
    assert t["max_staleness"] == 2 and t["vllm_server_base_url"].endswith(":8123")
    assert t["vllm_mode"] == "server" and t["use_vllm"] is True


def test_a_run_named_in_full_runs_off_the_grid(run, settings):
    assert run.grid_of(settings, "weak-gate_prefix", 4) == [("weak", "gate_prefix", 4)]
    assert run.grid_of(settings, "weak-paragrpo", 0) == [("weak", "paragrpo", 0)]
    assert run.grid_of(settings, "weak-gate_prefix", None) == []  # a seed is named, or nothing runs
    with pytest.raises(SystemExit, match="unknown recipe 'gate_nothing'.*gate_bare"):
        run.grid_of(settings, "weak-gate_nothing", 3)


def test_a_recipe_runs_its_synchronous_twin_where_one_is_packaged(run):
    assert run.synchronous("paragrpo") == "paragrpo-sync"
    twin = (run.RECIPES / "vanilla_grpo-sync.yaml").is_file()
    assert run.synchronous("vanilla_grpo") == ("vanilla_grpo-sync" if twin else "vanilla_grpo")


def _dry(*args: str) -> list[list[str]]:
    import shlex
    import subprocess

    out = subprocess.run([str(REPO / "experiments/toy_paradox/prepared"), *args, "--dry-run"],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    return [shlex.split(line) for line in out.splitlines() if line and not line.startswith("#")]


def _flag(command: list[str], flag: str) -> str | None:
    return command[command.index(flag) + 1] if flag in command else None


def _runs(commands: list[list[str]]) -> list[tuple[str | None, int, str | None, int]]:
    """(--only, --seed, --max-staleness, --rl-steps) of each runner command with a seed."""
    return [
        (_flag(c, "--only"), int(_flag(c, "--seed") or 0), _flag(c, "--max-staleness"),
         int(_flag(c, "--rl-steps") or 0))
        for c in commands
        if any(a.endswith("toy_paradox/run") for a in c) and "--seed" in c
    ]  # fmt: skip


def test_the_prepared_2x2_runs_every_cell_at_every_seed_and_the_runner_takes_each(run, settings):
    runs = _runs(_dry("prefix-anchor", "OUT"))
    cells = {"vanilla_grpo", *CELLS}
    assert sorted(set(runs)) == sorted((f"weak-{c}", s, None, 20) for c in cells for s in range(5))
    for only, seed, _, _ in runs:
        assert only is not None
        assert run.grid_of(settings, only, seed) == [("weak", only.removeprefix("weak-"), seed)]


def test_the_prepared_staleness_runs_k0_and_k2_at_five_seeds_through_a_server(run, settings):
    commands = _dry("staleness", "OUT", "--vllm-python", "V/bin/python", "--steps", "30")
    runs = _runs(commands)
    assert sorted(runs) == sorted(("weak-paragrpo", s, k, 30) for s in range(5) for k in ("0", "2"))
    assert all("--sampler" in c and c[c.index("--sampler") + 1] == "server" for c in commands
               if "--max-staleness" in c)  # fmt: skip
    assert any("staleness_compare.py" in " ".join(c) for c in commands)


def test_the_staleness_runs_need_the_vllm_environment():
    import subprocess

    done = subprocess.run([str(REPO / "experiments/toy_paradox/prepared"), "staleness", "OUT", "--dry-run"],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 2 and "--vllm-python" in done.stderr
