"""Fixtures for the evaluation tests: small annotation files in each benchmark's native format,
written here by hand, and a video folder whose files are the real shared test videos under the
names each benchmark uses (symlinks; nothing is copied)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

# benchmark video name -> real shared video (see ../shared/videos/README.md)
REAL = {
    "testsrc": "torchcodec__testsrc2.mp4",  # 2.0 s
    "pancake": "decord__flipping_a_pancake.mkv",  # 10.4 s
    "bunny": "mediabunny__trim-buck-bunny.webm",  # 5.0 s
}


def link(folder: Path, name: str, real: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).symlink_to(real)


@pytest.fixture
def real(shared_videos):
    return {k: shared_videos / v for k, v in REAL.items()}


# ----------------------------------------------------------------------------- Video-MME
def _vmme_rows():
    def opts(*texts):
        return [f"{'ABCD'[i]}. {t}" for i, t in enumerate(texts)]

    return [
        {
            "video_id": "001",
            "duration": "short",
            "domain": "Knowledge",
            "sub_category": "Tech",
            "url": "https://example.invalid/x",
            "videoID": "vmA",
            "question_id": "001-1",
            "task_type": "OCR Problems",
            "question": "Which number is shown on the counter?",
            "options": opts("0", "1", "5", "9"),
            "answer": "B",
        },
        {
            "video_id": "001",
            "duration": "short",
            "domain": "Knowledge",
            "sub_category": "Tech",
            "url": "https://example.invalid/x",
            "videoID": "vmA",
            "question_id": "001-2",
            "task_type": "Object Recognition",
            "question": "What is on screen?",
            "options": opts("A man reading", "Coloured test bars", "A dog", "Snow"),
            "answer": "B",
        },
        {
            "video_id": "002",
            "duration": "medium",
            "domain": "Life",
            "sub_category": "Cooking",
            "url": "https://example.invalid/y",
            "videoID": "vmB",
            "question_id": "002-1",
            "task_type": "Action Recognition",
            "question": "What does the person flip?",
            "options": opts("A coin", "A card", "A book", "A pancake"),
            "answer": "D",
        },
        {
            "video_id": "003",
            "duration": "long",
            "domain": "Life",
            "sub_category": "Travel",
            "url": "https://example.invalid/z",
            "videoID": "vmMissing",
            "question_id": "003-1",
            "task_type": "Counting Problem",
            "question": "How many cars pass?",
            "options": opts("1", "2", "3", "4"),
            "answer": "C",
        },
    ]


SRT = """1
00:00:00,000 --> 00:00:00,900
<i>Morning everyone.</i>

2
00:00:02,000 --> 00:00:02,050
A blink-and-miss line.

3
00:00:00,900 --> 00:00:10,400
Now we flip the pancake.
"""


@pytest.fixture
def videomme(tmp_path, real):
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = tmp_path / "videomme_data"
    (data / "videomme").mkdir(parents=True)
    pq.write_table(
        pa.Table.from_pylist(_vmme_rows()), data / "videomme" / "test-00000-of-00001.parquet"
    )
    (data / "subtitle").mkdir()
    (data / "subtitle" / "vmB.srt").write_text(SRT)
    videos = tmp_path / "videomme_videos"
    link(videos, "vmA.mp4", real["testsrc"])
    link(videos, "vmB.mkv", real["pancake"])
    return data, videos


# ----------------------------------------------------------------------------- LongVideoBench
@pytest.fixture
def longvideobench(tmp_path, real):
    rows = [
        {
            "video_id": "lvA",
            "question": "Which colour appears last?",
            "candidates": ["red", "green", "blue", "white", "black"],
            "correct_choice": 4,
            "position": [1],
            "topic_category": "NP-News-Programs",
            "question_category": "TOS",
            "level": "L2-Relation",
            "id": "lvA_0",
            "video_path": "lvA.mp4",
            "subtitle_path": "lvA_en.json",
            "duration_group": 15,
            "starting_timestamp_for_subtitles": 0,
            "duration": 2.0,
        },
        {
            "video_id": "lvB",
            "question": "What is cooked?",
            "candidates": ["soup", "rice", "a pancake", "pasta"],
            "correct_choice": 2,
            "position": [1],
            "topic_category": "LC-Life",
            "question_category": "S2E",
            "level": "L1-Perception",
            "id": "lvB_0",
            "video_path": "lvB.mp4",
            "subtitle_path": "lvB_en.json",
            "duration_group": 15,
            "starting_timestamp_for_subtitles": 0,
            "duration": 10.4,
        },
        {
            "video_id": "lvGone",
            "question": "What happens at the end?",
            "candidates": ["a", "b", "c", "d", "e"],
            "correct_choice": 0,
            "position": [1],
            "topic_category": "LC-Life",
            "question_category": "E2O",
            "level": "L2-Relation",
            "id": "lvGone_0",
            "video_path": "lvGone.mp4",
            "subtitle_path": "lvGone_en.json",
            "duration_group": 600,
            "starting_timestamp_for_subtitles": 0,
            "duration": 500.0,
        },
    ]
    data = tmp_path / "lvb"
    data.mkdir()
    (data / "lvb_val.json").write_text(json.dumps(rows))
    videos = tmp_path / "lvb_videos"
    link(videos, "lvA.mp4", real["testsrc"])
    link(videos, "lvB.mp4", real["pancake"])
    return data, videos


# ----------------------------------------------------------------------------- LVBench
@pytest.fixture
def lvbench(tmp_path, real):
    lines = [
        {
            "key": "lvbA",
            "type": "cartoon",
            "video_info": {"duration_minutes": 0.1},
            "qa": [
                {
                    "uid": "101",
                    "question": "What animal is the main character?\n(A) a bear\n(B) a rabbit\n(C) a fox\n(D) a bird",
                    "answer": "B",
                    "question_type": ["entity recognition"],
                    "time_reference": "00:01-00:04",
                },
                {
                    "uid": "102",
                    "question": "When does the character appear?\n(A) start\n(B) middle\n(C) end\n(D) never",
                    "answer": "(A)",
                    "question_type": ["temporal grounding", "event understanding"],
                    "time_reference": "00:00-00:01",
                },
            ],
        },
        {
            "key": "lvbB",
            "type": "selfmedia",
            "video_info": {"duration_minutes": 0.2},
            "qa": [
                {
                    "uid": "201",
                    "question": "What is flipped? (A) a coin (B) a pancake (C) a card (D) a hat",
                    "answer": "B",
                    "question_type": ["key information retrieval"],
                    "time_reference": "00:05-00:08",
                },
            ],
        },
    ]
    data = tmp_path / "lvbench"
    data.mkdir()
    (data / "video_info.meta.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    videos = tmp_path / "lvbench_videos"
    link(videos, "lvbA.webm", real["bunny"])
    link(videos, "lvbB.mkv", real["pancake"])
    return data, videos


@pytest.fixture
def lvbench_flat(tmp_path, real):
    """The flat layout: one question per line, keyed by ``video_key`` (no ``key``/``qa``)."""
    lines = [
        {
            "video_key": "lvbA",
            "uid": 301,
            "question": "What animal is the main character?\n(A) a bear\n(B) a rabbit\n(C) a fox\n(D) a bird",
            "answer": "B",
            "question_type": ["entity recognition"],
            "time_reference": "00:01-00:04",
        },
        {
            "video_key": "lvbB",
            "uid": 302,
            "question": "What is flipped?\n(A) a coin\n(B) a pancake\n(C) a card\n(D) a hat",
            "answer": "B",
            "question_type": ["key information retrieval", "reasoning"],
            "time_reference": "00:05-00:08",
        },
        {
            "uid": 303,
            "question": "No video here?\n(A) x\n(B) y",
            "answer": "A",
            "question_type": ["reasoning"],
            "time_reference": "",
        },
    ]
    data = tmp_path / "lvbench_flat"
    data.mkdir()
    (data / "lvbench.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    videos = tmp_path / "lvbench_flat_videos"
    link(videos, "lvbA.webm", real["bunny"])
    link(videos, "lvbB.mkv", real["pancake"])
    return data, videos


# ----------------------------------------------------------------------------- MLVU dev
@pytest.fixture
def mlvu(tmp_path, real):
    data = tmp_path / "MLVU"
    (data / "json").mkdir(parents=True)
    plot = [
        {
            "video": "m1.mp4",
            "duration": 2.0,
            "question": "What is displayed?",
            "candidates": ["A cat", "Test bars", "A road", "A book"],
            "answer": "test bars ",
            "question_type": "plotQA",
        },
        {
            "video": "m2.mkv",
            "duration": 10.4,
            "question": "What is cooked?",
            "candidates": ["Soup", "Rice", "Pancake", "Bread"],
            "answer": "Pancakes",
            "question_type": "plotQA",
        },
        {
            "video": "m2.mkv",
            "duration": 10.4,
            "question": "Who cooks?",
            "candidates": ["A chef", "A person", "A robot", "Nobody"],
            "answer": "A person",
            "question_type": "plotQA",
        },
    ]
    needle = [
        {
            "video": "m3.webm",
            "duration": 5.0,
            "question": "Which animal appears?",
            "candidates": ["A rabbit", "A whale", "A snake", "A horse"],
            "answer": "A rabbit",
            "question_type": "needle",
        },
    ]
    subscene = [
        {
            "video": "m3.webm",
            "duration": 5.0,
            "question": "Describe the scene.",
            "answer": "A rabbit in a meadow.",
            "question_type": "sub_scene",
        }
    ]
    (data / "json" / "1_plotQA.json").write_text(json.dumps(plot))
    (data / "json" / "2_needle.json").write_text(json.dumps(needle))
    (data / "json" / "8_sub_scene.json").write_text(json.dumps(subscene))
    videos = tmp_path / "MLVU_video"
    link(videos / "1_plotQA", "m1.mp4", real["testsrc"])
    link(videos / "1_plotQA", "m2.mkv", real["pancake"])
    link(videos / "2_needle", "m3.webm", real["bunny"])
    return data, videos


# ----------------------------------------------------------------------------- MMVU
# MMVU's validation.json gives an open-ended row the same choice keys as a multiple-choice one
OPEN_ENDED_CHOICES = {"A": "", "B": "", "C": "", "D": "", "E": ""}


@pytest.fixture
def mmvu(tmp_path, real):
    base = "https://huggingface.co/datasets/yale-nlp/MMVU/resolve/main/videos"
    rows = [
        {
            "id": "mc-5",
            "video": f"{base}/Art/0.mp4",
            "question": "Which pattern is shown?",
            "choices": {
                "A": "stripes",
                "B": "dots",
                "C": "a face",
                "D": "text only",
                "E": "colour bars",
            },
            "answer": "E",
            "question_type": "multiple-choice",
            "metadata": {"subject": "Art", "textbook": "x"},
        },
        {
            "id": "mc-text",
            "video": f"{base}/Cooking/1.mp4",
            "question": "What is prepared?",
            "choices": {"A": "a salad", "B": "a pancake", "C": "a soup", "D": "a cake"},
            "answer": "a pancake",
            "question_type": "multiple-choice",
            "metadata": {"subject": "Cooking"},
        },
        # open-ended rows as the release writes them: five keys with empty texts, not an empty map
        {
            "id": "oe-1",
            "video": f"{base}/Cooking/1.mp4",
            "question": "What food is flipped?",
            "choices": dict(OPEN_ENDED_CHOICES),
            "answer": "a pancake",
            "question_type": "open-ended",
            "metadata": {"subject": "Cooking", "textbook": "y"},
        },
        {
            "id": "oe-2",
            "video": f"{base}/Biology/2.mp4",
            "question": "Which animal is shown?",
            "choices": dict(OPEN_ENDED_CHOICES),
            "answer": "rabbit",
            "question_type": "open-ended",
            "metadata": {"subject": "Biology", "textbook": "z"},
        },
    ]
    data = tmp_path / "mmvu"
    data.mkdir()
    (data / "validation.json").write_text(json.dumps(rows))
    videos = tmp_path / "mmvu_videos"
    link(videos / "Art", "0.mp4", real["testsrc"])
    link(videos / "Cooking", "1.mp4", real["pancake"])
    link(videos / "Biology", "2.mp4", real["bunny"])
    return data, videos


# ----------------------------------------------------------------------------- Charades-STA
CHARADES = """CHA1 0.5 1.5##the test pattern counts frames.
CHA2 8.0 12.0##person flips a pancake in a pan.
CHAGONE 3.0 7.5##person opens a door.
this line is not an annotation
CHA3 1.0 2.0##a rabbit wakes up.
"""


@pytest.fixture
def charades(tmp_path, real):
    data = tmp_path / "charades"
    data.mkdir()
    (data / "charades_sta_test.txt").write_text(CHARADES)
    videos = tmp_path / "charades_videos"
    link(videos, "CHA1.mp4", real["testsrc"])
    link(videos, "CHA2.mp4", real["pancake"])
    link(videos, "CHA3.mp4", real["bunny"])
    return data, videos


# ----------------------------------------------------------------------------- judge server
class _JudgeHandler(BaseHTTPRequestHandler):
    """A real OpenAI-compatible chat endpoint on loopback. Verdict: CORRECT iff the candidate
    contains the reference's last word as a substring (so "rabbits" passes for "rabbit", unlike
    the rule-based matcher); a candidate containing 'crash' gets HTTP 500."""

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append(body)
        user = body["messages"][-1]["content"]
        ref = user.split("Reference answer: ")[1].split("\n")[0]
        cand = user.split("Candidate answer: ")[1].split("\n")[0]
        if "crash" in cand:
            self.send_response(500)
            self.end_headers()
            return
        verdict = "CORRECT" if ref.split()[-1].lower() in cand.lower() else "INCORRECT"
        data = json.dumps(
            {"choices": [{"message": {"role": "assistant", "content": verdict}}]}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def judge_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _JudgeHandler)
    server.requests = []
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    yield server
    server.shutdown()
    server.server_close()
