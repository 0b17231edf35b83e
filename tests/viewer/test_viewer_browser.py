"""``paravt view`` in a real headless Chromium, from ``file://``: the index lists every episode
with no console error, a filter hides the right rows, a click opens the episode, every image
loads (a missing frame is a placeholder, not a broken image), a corrupt line is skipped and
named, two runs compare side by side, and model or dataset text with ``<script>``, ``onerror=``
and ``javascript:`` in it is shown, never run.

The runs are small and written here in the formats ``paravt eval`` and the trainer's episode
dump write (one real generated video; frames decoded from it or copied from the dump)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paravt.viewer.config import ViewConfig
from paravt.viewer.site import write_site

XSS = (
    '<script>window.__pwned = "script"</script>'
    '<img src="x" onerror="window.__pwned = \'onerror\'">'
    "<a href=\"javascript:window.__pwned = 'link'\">click</a>"
    "\x1b[31m"
)


def _episode(i: int, video: str, qtype: str, calls: list[tuple[float, float, str]], text: str):
    times = [float(s + 0.5) for s, _, _ in calls]
    return {
        "id": f"q{i}",
        "video": video,
        "question": f"Question {i}?" + (XSS if i == 1 else ""),
        "question_type": qtype,
        "options": ["red", "blue" + (XSS if i == 1 else "")] if qtype == "mcq" else None,
        "gold": "A",
        "prediction": "A",
        "answer_source": "answer_tag",
        "frames_k": 2,
        "overview_times": [2.0, 8.0],
        "video_meta": {"duration": 12.0},
        "prefix": "<think>\n",
        "turns": [
            {"index": 0, "text": f"Let me look.</think>{text}<tool_call>...</tool_call>"},
            {"index": 1, "text": "<think>ok</think><answer>A</answer>"},
        ],
        "calls": [
            {
                "turn": 0,
                "index": j,
                "name": "crop_video",
                "status": status,
                "start": s if status == "ok" else None,
                "end": e if status == "ok" else None,
                "times": [s + 0.5, e - 0.5] if status == "ok" else [],
                "error": None
                if status == "ok"
                else "crop_video: start_time=9 is not before end_time=3" + XSS,
                "error_kind": None if status == "ok" else "invalid_window",
                "arguments": {"start_time": s, "end_time": e},
                "warnings": [],
            }
            for j, (s, e, status) in enumerate(calls)
        ],  # fmt: skip
        "subagents": [],
    }, times


def _eval_run(folder: Path, video: str, answers: dict[str, str], corrupt: bool) -> Path:
    folder.mkdir(parents=True)
    results, episodes = [], []
    specs = [
        ("mcq", [(0, 3, "ok"), (6, 9, "ok")], "fine"),
        ("mcq", [(1, 4, "ok"), (9, 3, "error")], XSS),
        ("tvg", [(2, 5, "ok")], "grounding"),
        ("mcq", [(3, 6, "ok")], "missing video"),
    ]
    for i, (qtype, calls, text) in enumerate(specs):
        vid = video if i != 3 else str(folder / "gone.mp4")
        rec, _ = _episode(i, vid, qtype, calls, text)
        answer = answers.get(f"q{i}", "A" + (XSS if i == 1 else ""))
        correct = 1.0 if answer.startswith("A") else 0.0
        results.append({
            "id": f"q{i}", "index": i, "status": "ok", "prediction": rec["turns"][-1]["text"],
            "answer_text": answer, "error": None,
            "tools": {"attempted": len(calls), "turns": 2}, "overview_times": [2.0, 8.0],
            "score": {"iou": 0.4} if qtype == "tvg" else {"correct": correct},
            "sample": {"question": rec["question"], "options": rec["options"], "answer": "A",
                       "question_type": qtype, "video": vid},
        })  # fmt: skip
        episodes.append({"id": f"q{i}", "record": rec})
    lines = [json.dumps(r) for r in results]
    if corrupt:
        lines.insert(2, '{"id": "torn", "index": 9, "sample": {"quest')
    (folder / "results.jsonl").write_text("\n".join(lines) + "\n")
    (folder / "episodes.jsonl").write_text("\n".join(json.dumps(e) for e in episodes) + "\n")
    return folder


def _train_run(folder: Path, video: str) -> Path:
    """A training output folder with one dumped episode whose frames are stored beside it."""
    from PIL import Image

    frames = folder / "episodes" / "frames"
    frames.mkdir(parents=True)
    rec, _ = _episode(7, video, "mcq", [(0, 3, "ok")], "train")
    stored = []
    for n, (src, t) in enumerate([("overview", 2.0), ("overview", 8.0), ("tool", 0.5),
                                  ("tool", 2.5)]):  # fmt: skip
        name = f"s1-r0-e0-{n}.jpg"
        Image.new("RGB", (32, 32), (40 * n, 90, 160)).save(frames / name)
        stored.append({"source": src, "time": t, "file": name})
    row = {"step": 1, "rank": 0, "k": 2, "advantage": 0.5, "record": rec, "frames": stored,
           "reward": {"acc": 1.0, "fmt": 0.8, "anchor": 0.35, "tool": 0.8, "total": 2.6}}  # fmt: skip
    (folder / "episodes" / "dump-rank0.jsonl").write_text(json.dumps(row) + "\n")
    return folder


@pytest.fixture(scope="module")
def site(tmp_path_factory, gop_video):
    base = tmp_path_factory.mktemp("view")
    a = _eval_run(base / "run-a", str(gop_video), {}, corrupt=True)
    b = _eval_run(base / "run-b", str(gop_video), {"q0": "B"}, corrupt=False)
    t = _train_run(base / "train-run", str(gop_video))
    out = base / "site"
    result = write_site(ViewConfig(runs=[str(a), str(b), str(t)], out=str(out)))
    return out, result


def _errors(browser) -> list[dict]:
    return [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]


def _images_ok(browser) -> tuple[int, int]:
    """(images on the page, images that loaded)."""
    return tuple(browser.execute_script(
        "const im = Array.from(document.images);"
        "return [im.length, im.filter(i => i.complete && i.naturalWidth > 0).length];"
    ))  # fmt: skip


def _visible_ids(browser) -> list[str]:
    return browser.execute_script(
        "return Array.from(document.querySelectorAll('#episodes tbody tr'))"
        ".filter(r => r.style.display !== 'none').map(r => r.cells[0].textContent + '/' +"
        " r.cells[1].textContent);"
    )


def _no_script_ran(browser) -> None:
    assert browser.execute_script("return window.__pwned === undefined")
    assert (
        browser.execute_script("return document.querySelectorAll('script').length") == 1
    )  # ours: assets/viewer.js
    assert browser.execute_script("return document.querySelectorAll('[onerror]').length") == 0
    assert (
        browser.execute_script("return document.querySelectorAll('a[href^=\"javascript\"]').length")
        == 0
    )


def test_the_index_lists_every_episode_and_filters_and_opens_them(site, browser):
    out, result = site
    browser.get((out / "index.html").as_uri())
    assert _errors(browser) == []
    rows = _visible_ids(browser)
    assert len(rows) == 4 + 4 + 1 == sum(r["episodes"] for r in result["runs"])
    assert "train-run/q7" in rows
    notes = browser.find_element("id", "notes").text
    assert "run-a: results.jsonl: skipped line 3: not JSON" in notes
    _no_script_ran(browser)
    assert "<script>window.__pwned" in browser.find_element("tag name", "body").text

    from selenium.webdriver.support.ui import Select

    Select(browser.find_element("id", "f-type")).select_by_value("tvg")
    assert _visible_ids(browser) == ["run-a/q2", "run-b/q2"]
    Select(browser.find_element("id", "f-type")).select_by_value("")
    Select(browser.find_element("id", "f-correct")).select_by_value("no")
    assert _visible_ids(browser) == ["run-b/q0"]
    Select(browser.find_element("id", "f-correct")).select_by_value("")
    box = browser.find_element("id", "f-text")
    box.send_keys("Q3")  # case-insensitive, any cell
    assert _visible_ids(browser) == ["run-a/q3", "run-b/q3"]
    box.clear()
    box.send_keys("x")  # `clear` fires no input event: one more keystroke, then erase it
    box.send_keys("\b")
    assert len(_visible_ids(browser)) == 9

    row = browser.find_elements("css selector", "#episodes tbody tr")[1]
    row.find_elements("tag name", "td")[2].click()  # a cell, not the link
    assert browser.current_url.endswith("/episodes/r0-00001.html")
    assert browser.find_element("tag name", "h1").text == "q1"


def test_episode_pages_load_every_image_and_show_text_never_run_it(site, browser):
    out, _ = site
    pages = sorted((out / "episodes").glob("*.html"))
    assert len(pages) == 9
    for p in pages:
        browser.get(p.as_uri())
        assert _errors(browser) == [], p.name
        n, loaded = _images_ok(browser)
        assert n == loaded, p.name
        _no_script_ran(browser)
    browser.get((out / "episodes" / "r0-00001.html").as_uri())
    text = browser.find_element("tag name", "body").text
    assert 'onerror="window.__pwned' in text and "javascript:window.__pwned" in text
    assert "\\x1b[31m" in text  # the escape shown as text
    assert "call 1" in text and "invalid_window: crop_video: start_time=9" in text
    n, _ = _images_ok(browser)
    assert n == 2 + 2 + 2  # the overview on the timeline and in its row, call 0's two frames
    # the episode whose video is gone: placeholders, no broken image
    browser.get((out / "episodes" / "r0-00003.html").as_uri())
    assert _images_ok(browser) == (0, 0)
    assert len(browser.find_elements("css selector", ".frame .missing")) == 2 + 2 + 2
    # the training episode: frames copied from the dump, reward terms and the K gating chose
    browser.get((out / "episodes" / "r2-00000.html").as_uri())
    n, loaded = _images_ok(browser)
    assert n == loaded == 2 + 2 + 2
    reward = browser.find_element("css selector", ".reward").text
    assert "anchor 0.350" in reward and "total 2.600" in reward
    assert "K chosen by gating: 2" in reward


def test_two_runs_side_by_side(site, browser):
    out, _ = site
    browser.get((out / "compare.html").as_uri())
    assert _errors(browser) == []
    rows = browser.find_elements("css selector", "#compare tbody tr")
    assert len(rows) == 4  # q0..q3 are in both eval runs; the training episode in one run only
    first = [td.text for td in rows[0].find_elements("tag name", "td")]
    assert first[0] == "q0" and first[3] == "A yes" and first[4] == "B no"
    _no_script_ran(browser)
