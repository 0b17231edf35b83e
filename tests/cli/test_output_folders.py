"""``make-tiny-model`` and ``view -o`` write only into a folder that is new, empty or their own
earlier output; a folder holding anything else (a trained checkpoint, a user's own page) is
refused with one line that names what is there, unless ``--force``."""

from __future__ import annotations

import json
from pathlib import Path


def _one_line(r) -> str:
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr
    return lines[0]


def test_make_tiny_model_refuses_a_checkpoint_folder(tmp_path, paravt_cli):
    ckpt = tmp_path / "trained"
    ckpt.mkdir()
    (ckpt / "model.safetensors").write_bytes(b"trained weights")
    (ckpt / "trainer_state.json").write_text("{}")
    r = paravt_cli("make-tiny-model", ckpt)
    assert r.returncode == 2
    line = _one_line(r)
    assert str(ckpt) in line and "trainer_state.json" in line and "--force" in line
    assert (ckpt / "model.safetensors").read_bytes() == b"trained weights"  # untouched
    assert not (ckpt / "config.json").exists()

    r = paravt_cli("make-tiny-model", ckpt, "--force")
    assert r.returncode == 0, r.stderr
    assert (ckpt / "model.safetensors").read_bytes() != b"trained weights"


def test_make_tiny_model_rewrites_its_own_earlier_output(tmp_path, paravt_cli):
    out = tmp_path / "m"
    assert paravt_cli("make-tiny-model", out).returncode == 0
    r = paravt_cli("make-tiny-model", out, "--seed", "1", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads((out / "paravt_tiny.json").read_text())["seed"] == 1


def test_make_tiny_model_refuses_its_earlier_output_beside_a_users_file(tmp_path, paravt_cli):
    """An earlier tiny model with a file of the user's beside it was rewritten without a word;
    the folder's record lists the files the command wrote, and anything else is refused."""
    out = tmp_path / "m"
    assert paravt_cli("make-tiny-model", out).returncode == 0
    listed = json.loads((out / "paravt_tiny.json").read_text())["files"]
    assert set(listed) == {p.name for p in out.iterdir()}, listed
    (out / "notes.txt").write_text("my own notes")
    r = paravt_cli("make-tiny-model", out, "--seed", "1")
    assert r.returncode == 2
    line = _one_line(r)
    assert "notes.txt" in line and "--force" in line
    assert json.loads((out / "paravt_tiny.json").read_text())["seed"] == 0  # untouched
    r = paravt_cli("make-tiny-model", out, "--seed", "1", "--force")
    assert r.returncode == 0, r.stderr
    assert (out / "notes.txt").read_text() == "my own notes"
    assert "notes.txt" not in json.loads((out / "paravt_tiny.json").read_text())["files"]


def test_make_tiny_model_refuses_a_file(tmp_path, paravt_cli):
    f = tmp_path / "model"
    f.write_text("x")
    r = paravt_cli("make-tiny-model", f, "--force")
    assert r.returncode == 2 and "is a file" in r.stderr and "Traceback" not in r.stderr


def _train_run(folder: Path) -> Path:
    """A training output folder with one dumped episode (no stored frames: placeholders)."""
    (folder / "episodes").mkdir(parents=True)
    record = {"id": "e0", "video": "v.mp4", "question": "Which?", "question_type": "mcq",
              "options": ["a", "b"], "gold": "A", "prediction": "A", "turns": [], "calls": [],
              "overview_times": [], "video_meta": {"duration": 4.0}}  # fmt: skip
    row = {"step": 1, "rank": 0, "k": 2, "record": record, "frames": [],
           "reward": {"acc": 1.0, "total": 1.0}}  # fmt: skip
    (folder / "episodes" / "dump-rank0.jsonl").write_text(json.dumps(row) + "\n")
    return folder


def test_view_refuses_a_folder_with_the_users_own_index(tmp_path, paravt_cli):
    run = _train_run(tmp_path / "run")
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<h1>my page</h1>")
    r = paravt_cli("view", run, "-o", site)
    assert r.returncode == 2
    line = _one_line(r)
    assert "index.html" in line and "--force" in line
    assert (site / "index.html").read_text() == "<h1>my page</h1>"

    r = paravt_cli("view", run, "-o", site, "--force")
    assert r.returncode == 0, r.stderr
    assert "my page" not in (site / "index.html").read_text()


def test_view_rewrites_its_own_site(tmp_path, paravt_cli):
    run = _train_run(tmp_path / "run")
    site = tmp_path / "site"
    assert paravt_cli("view", run, "-o", site).returncode == 0
    r = paravt_cli("view", run, "-o", site)
    assert r.returncode == 0, r.stderr
