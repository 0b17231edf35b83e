"""``paravt bench-kernels``: JSON on stdout with timings and ratios vs both HF backends."""

from __future__ import annotations

import json

import pytest
import torch

from paravt.cli.main import main


def test_bench_kernels_cpu_json(capsys, video_path):
    video = video_path("decord__flipping_a_pancake.mkv")
    rc = main(
        [
            "bench-kernels",
            "--device",
            "cpu",
            "--json",
            "--set",
            "height=240",
            "--set",
            "width=426",
            "--set",
            "tool_windows=2",
            "--set",
            "tool_frames=3",
            "--set",
            "overview_frames=4",
            "--set",
            "repeats=1",
            "--set",
            "warmup=0",
            "--set",
            f"videos={video}",
        ]
    )
    out = capsys.readouterr()
    assert rc == 0, out.err
    report = json.loads(out.out)
    assert report["config"]["device"] == "cpu"
    assert report["frames_source"][0]["frames"] == 6  # max(2 x 3 tool, 4 overview)
    names = {(w["name"], w["layout"]) for w in report["workloads"]}
    assert names == {
        ("tool_batch", "image"),
        ("tool_batch", "video"),
        ("overview", "image"),
        ("overview", "video"),
    }
    for w in report["workloads"]:
        assert w["paravt_resize"] == "uint8"
        assert w["ms"]["paravt"] > 0 and "hf_torchvision_over_paravt" in w["speedup"]
        if w["layout"] == "image":
            assert "hf_pil_over_paravt" in w["speedup"]
    for arch in ("qwen2.5-vl", "qwen3-vl"):
        p = report["parity"][arch]
        assert p["grid_thw_equal_image"] and p["grid_thw_equal_video"]
        assert p["uint8_vs_hf_torchvision_image"]["max_steps"] == 0
        assert p["uint8_vs_hf_pil_image"]["max_steps"] <= 1
    assert "pixel_values on cpu" in out.err  # the rich table goes to stderr with --json


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU error")
def test_bench_kernels_cuda_without_gpu_is_a_user_error(capsys):
    rc = main(["bench-kernels", "--device", "cuda", "--json"])
    assert rc == 2
    assert "no CUDA device" in capsys.readouterr().err


def test_bench_kernels_rejects_unknown_config_key(capsys):
    assert main(["bench-kernels", "--set", "frames=3"]) == 2
    assert "unknown config key" in capsys.readouterr().err
