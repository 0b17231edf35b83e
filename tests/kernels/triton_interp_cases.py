"""Run the Triton kernels (under TRITON_INTERPRET=1, set by the caller) against the torch oracle.

Executed in a subprocess by ``test_kernels_triton_interpreter.py`` because the interpreter flag must
be in the environment before triton is first imported. Prints one JSON line per case.
Usage: python triton_interp_cases.py VIDEO_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch


def cases(video_dir: Path):
    g = torch.Generator().manual_seed(0)

    def rnd(n, h, w):
        return torch.randint(0, 256, (n, 3, h, w), dtype=torch.uint8, generator=g)

    # sizes not multiples of the factor; 1-frame and odd-frame windows; up- and down-scaling
    yield "random qwen2.5 image", "qwen2.5-vl", "image", [rnd(3, 50, 70), rnd(1, 33, 90)], 4096
    yield (
        "random qwen3 video",
        "qwen3-vl",
        "video",
        [rnd(3, 50, 70), rnd(1, 33, 90), rnd(2, 64, 64)],
        4096,
    )
    yield "random qwen2.5 video 1 frame", "qwen2.5-vl", "video", [rnd(1, 45, 45)], 3136
    yield "random qwen3 image upscale", "qwen3-vl", "image", [rnd(2, 20, 30)], 4096
    # a heavy downscale: 360x640 -> 28x56, 46 horizontal taps (padded to 64, 18 masked) and 52
    # vertical ones, channels-last as torchcodec decodes
    from paravt.kernels.bench import generated_frames

    big = generated_frames(1, 360, 640).contiguous(memory_format=torch.channels_last)
    yield "generated 360p qwen2.5 image, 46 taps", "qwen2.5-vl", "image", [big], 3136

    from torchcodec.decoders import VideoDecoder

    h265 = VideoDecoder(str(video_dir / "torchcodec__h265_video.mp4")).get_frames_at([0, 4, 9]).data
    yield "real h265 128x128 qwen3 video (odd)", "qwen3-vl", "video", [h265], 4096
    # a sharp-edged crop of a real 720p frame (testsrc2: text, colour bars), downscaled 2.4x
    src = VideoDecoder(str(video_dir / "torchcodec__testsrc2.mp4")).get_frames_at([10]).data
    crop = src[:, :, 300:420, 500:660]  # a strided, channels-last view: read in place
    yield "real 720p crop qwen2.5 image", "qwen2.5-vl", "image", [crop], 3136
    yield "real mixed windows qwen2.5 video", "qwen2.5-vl", "video", [h265[:1], crop], 3136


def main() -> None:
    import triton  # noqa: F401 - imported here so the interpreter flag is already set

    from paravt.kernels import reference_pixel_values
    from paravt.kernels.pack import rows_for
    from paravt.kernels.parity import step_diff
    from paravt.kernels.spec import arch_spec, smart_resize
    from paravt.kernels.triton_resize import pack_windows

    video_dir = Path(sys.argv[1])
    for name, arch, layout, windows, max_pixels in cases(video_dir):
        spec = arch_spec(arch)
        sizes = [
            smart_resize(w.shape[2], w.shape[3], spec.factor, 784, max_pixels) for w in windows
        ]
        rows = sum(
            rows_for(w.shape[0], h, ww, spec, layout)
            for w, (h, ww) in zip(windows, sizes, strict=True)
        )
        ref, _ = reference_pixel_values(windows, arch=arch, max_pixels=max_pixels, layout=layout)
        result = {"name": name, "rows": rows, "ref_rows": ref.shape[0]}
        for dtype in (torch.float32, torch.bfloat16) if "mixed" in name else (torch.float32,):
            out = torch.full((rows, spec.patch_dim), float("nan"), dtype=dtype)
            pack_windows(windows, sizes, spec, layout, out)
            key = str(dtype).replace("torch.", "")
            result[key] = {
                "unwritten": int(torch.isnan(out).sum()),
                **step_diff(out.float(), ref, arch).as_dict(),
                "bit_exact": bool(torch.equal(out, ref.to(dtype))),
            }
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
