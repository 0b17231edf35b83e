"""The training run's episode dump (``episode_dump_every``), from the real cpu-smoke run: every
Nth step's whole episodes with reward terms, K and shrunk frames, bounded in size, and what
``paravt view`` makes of it."""

from __future__ import annotations

import json

from paravt.train.episode_dump import dump_episodes


def _rows(path):
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_every_nth_step_is_dumped_with_rewards_k_and_frames(smoke_run):
    run_dir, _, probe = smoke_run
    folder = run_dir / "episodes"
    rows = _rows(folder / "dump-rank0.jsonl")
    assert {r["step"] for r in rows} == {1, 3}  # episode_dump_every=2 over 3 steps
    per_step = len(probe.rollouts[0]["records"])
    assert len(rows) == 2 * per_step
    assert [r["k"] for r in rows[:per_step]] == probe.rollouts[0]["k"]  # the K gating chose
    for row, rec in zip(rows[:per_step], probe.rollouts[0]["records"], strict=True):
        assert row["record"]["id"] == rec.id and len(row["record"]["turns"]) == len(rec.turns)
        assert "messages" not in row["record"]
        if rec.status == "ok":
            assert set(row["reward"]) == {"acc", "fmt", "anchor", "tool", "total"}
        assert len(row["frames"]) == len(rec.stream.images) and row["frames_dropped"] == 0
        for f in row["frames"]:
            from PIL import Image

            with Image.open(folder / "frames" / f["file"]) as im:
                assert im.width <= 160
    from paravt.viewer.config import ViewConfig
    from paravt.viewer.site import write_site

    out = run_dir.parent / "site"
    result = write_site(ViewConfig(runs=[str(run_dir)], out=str(out)))
    assert result["runs"] == [{"name": "run", "kind": "train", "episodes": len(rows)}]
    assert result["missing_frames"] == 0
    page = (out / "episodes" / "r0-00000.html").read_text()
    assert "K chosen by gating" in page and "Reward" in page


def test_the_dump_stops_at_its_size_bound(smoke_run, tmp_path):
    ro = smoke_run[2].rollouts[0]
    rows = [(r, b, e.frames_k, 0.0) for r, b, e in
            zip(ro["records"], ro["breakdowns"], ro["episode_inputs"], strict=True)]  # fmt: skip
    assert sum(len(r.stream.images) for r, *_ in rows) > 4
    assert not dump_episodes(tmp_path, 1, 0, rows, 160, max_bytes=3000)
    written = _rows(tmp_path / "dump-rank0.jsonl")
    assert sum(r["frames_dropped"] for r in written) > 0
    assert not dump_episodes(tmp_path, 2, 0, rows, 160, max_bytes=3000)  # stays stopped
    assert len(_rows(tmp_path / "dump-rank0.jsonl")) == len(written)
