"""Frames for the kernel tests: real decoded frames (torchcodec) and generated 720p frames."""

from __future__ import annotations

import warnings

import pytest
import torch


def _decode(path, indices) -> torch.Tensor:
    from torchcodec.decoders import VideoDecoder

    return VideoDecoder(str(path)).get_frames_at(list(indices)).data


@pytest.fixture(scope="session")
def real_720p(video_path) -> torch.Tensor:
    """6 real 1280x720 frames as torchcodec decodes them (channels-last uint8)."""
    a = _decode(video_path("torchcodec__testsrc2.mp4"), [0, 17, 41, 59])
    b = _decode(video_path("torchcodec__bt709_full_range.mp4"), [3, 20])
    return torch.cat([a, b]).contiguous(memory_format=torch.channels_last)


@pytest.fixture(scope="session")
def real_pancake(video_path) -> torch.Tensor:
    """5 real 426x240 frames: neither side a multiple of 28 or 32, odd frame count."""
    return _decode(video_path("decord__flipping_a_pancake.mkv"), [0, 60, 120, 180, 240])


@pytest.fixture(scope="session")
def real_bunny(video_path) -> torch.Tensor:
    """3 real 320x180 VP9 frames."""
    return _decode(video_path("mediabunny__trim-buck-bunny.webm"), [5, 50, 100])


@pytest.fixture(scope="session")
def generated_720p() -> torch.Tensor:
    from paravt.kernels.bench import generated_frames

    return generated_frames(3, 720, 1280, seed=1)


@pytest.fixture(scope="session")
def hf():
    """transformers' processors, configured like ``pixel_values`` (see kernels/bench.py)."""
    warnings.filterwarnings("ignore", category=FutureWarning)
    import transformers

    from paravt.kernels.bench import BenchKernelsConfig, _hf_processors, run_hf

    transformers.logging.set_verbosity_error()
    cfg = BenchKernelsConfig()

    class HF:
        def run(self, arch, backend, windows, layout):
            fast, pil, video = _hf_processors(arch, cfg, windows[0].shape[0])
            proc = {"torchvision": fast if layout == "image" else video, "pil": pil}[backend]
            return run_hf(proc, windows, layout, torch.device("cpu"))

    return HF()
