"""``crop.device: cuda``: the settings' check, the NVDEC pool's size, the CPU-fallback report, and
the host-side code of the on-device path never reading a device value (no hidden stream sync).

On a CPU host the sync check uses a fake device tensor: a tensor that says it is on ``cuda:0``
and raises on every read that would wait for a GPU stream (``.item()``, ``int()``,
``__index__``, ``.tolist()``, ``bool()``, ``.cpu()``). The real kernels run underneath it on the
CPU. The ``gpu``-marked tests run the same path on a real device under
``torch.cuda.set_sync_debug_mode("error")`` and decode the test videos with NVDEC.
"""

from __future__ import annotations

import pytest
import torch

from paravt.agent import engine as engine_mod
from paravt.agent import vision
from paravt.agent.chat import ChatCodec
from paravt.agent.config import CropSettings, EngineConfig
from paravt.errors import ConfigError
from paravt.schema.episodes import ImageItem
from paravt.video import VideoSource
from paravt.video.nvdec import NVDEC_POOL_SIZE, check_crop_device, cpu_fallback_line, decode_workers
from paravt.video.parallel import resolve_workers

no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal without CUDA")
needs_cuda = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA device with NVDEC (torchcodec's CUDA build)"
)


# -- the setting ------------------------------------------------------------------------------


@no_cuda
def test_crop_device_cuda_without_a_gpu_is_one_line_naming_the_setting():
    with pytest.raises(ConfigError) as err:
        EngineConfig(crop=CropSettings(device="cuda"))
    text = str(err.value)
    assert "\n" not in text and text.startswith("crop.device='cuda'") and "crop.device: cpu" in text


@no_cuda
def test_serve_tools_refuses_it_the_same_way():
    from paravt.serve.config import ServeToolsConfig as ServeConfig

    with pytest.raises(ConfigError, match=r"^crop.device='cuda:0': no CUDA device"):
        ServeConfig(crop=CropSettings(device="cuda:0"))


def test_an_unknown_device_is_refused_and_cpu_accepted():
    with pytest.raises(ConfigError, match=r"crop.device='tpu': choose cpu, cuda or cuda:N"):
        EngineConfig(crop=CropSettings(device="tpu"))
    check_crop_device("cpu")
    assert EngineConfig().crop.device == "cpu"


def test_the_nvdec_pool_bounds_the_lanes_on_cuda_only():
    assert decode_workers("cpu", 0) == resolve_workers(0)  # one per core, as before
    assert decode_workers("cpu", 5) == 5
    assert NVDEC_POOL_SIZE == 2
    assert decode_workers("cuda", 0) == NVDEC_POOL_SIZE
    assert decode_workers("cuda:0", 16) == NVDEC_POOL_SIZE
    assert decode_workers("cuda", 1) == 1


# -- the CPU fallback, read from torchcodec's public status -------------------------------------


def test_a_cpu_decoder_reports_no_fallback(pancake):
    from torchcodec.decoders import VideoDecoder

    assert cpu_fallback_line(VideoDecoder(pancake), pancake) is None


def test_a_fallback_status_becomes_a_warning_line(pancake):
    from torchcodec.decoders import CpuFallbackStatus

    class Decoder:  # what VideoDecoder(device="cuda") shows for a stream NVDEC cannot take
        cpu_fallback = CpuFallbackStatus(status_known=True)

    Decoder.cpu_fallback._is_fallback = True
    Decoder.cpu_fallback._video_not_supported = True
    Decoder.cpu_fallback._backend = "CUDA"
    line = cpu_fallback_line(Decoder(), pancake)
    assert line is not None and line.startswith(f"{pancake}: decoded on the CPU, not NVDEC")
    assert "Video not supported" in line


# -- no hidden sync: a fake device tensor that raises on host reads -----------------------------


class HostSync(AssertionError):
    pass


_READS = {
    torch.Tensor.item,
    torch.Tensor.__int__,
    torch.Tensor.__index__,
    torch.Tensor.__bool__,
    torch.Tensor.__float__,
    torch.Tensor.tolist,
    torch.Tensor.cpu,
    torch.Tensor.numpy,
}


class OnDevice(torch.Tensor):
    """Says ``cuda:0``; any read that would sync a real GPU stream raises ``HostSync``."""

    @property
    def device(self):  # torch's own ops still run on the CPU storage underneath
        return torch.device("cuda", 0)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in _READS:
            raise HostSync(f"{func.__name__} on a device tensor: the host would wait for the GPU")
        with torch._C.DisableTorchFunctionSubclass():
            out = func(*args, **(kwargs or {}))
        return _wrap(out)


def _wrap(x):
    if isinstance(x, torch.Tensor) and not isinstance(x, OnDevice):
        return x.as_subclass(OnDevice)
    if isinstance(x, (tuple, list)):
        return type(x)(_wrap(v) for v in x)
    return x


def _plain(x):
    return x.as_subclass(torch.Tensor) if isinstance(x, torch.Tensor) else x


def _kernel_on_the_fake_device(frames, **kw):
    """The real kernels, on the CPU, their results handed back as device tensors."""
    from paravt.kernels import pixel_values

    return _wrap(pixel_values(_plain(frames), **kw))


def _items(codec, pancake, wrap):
    with VideoSource(pancake) as src:
        frames = src.overview(3)
    items = []
    for f, t in zip(frames.data, frames.times, strict=True):
        it = ImageItem(_wrap(f) if wrap else f, t, "overview", 784, 4096)
        _, h, w = f.shape
        it.grid_thw = codec.grid_for(h, w, it.min_pixels, it.max_pixels)
        items.append(it)
    return items


def test_the_fake_device_tensor_catches_a_sync():
    x = _wrap(torch.tensor([3]))
    assert x.device.type == "cuda"
    for read in (lambda: int(x[0]), lambda: x.item(), lambda: x.tolist(), lambda: [0, 1][x[0]]):
        with pytest.raises(HostSync):
            read()


def test_preprocess_and_the_context_never_read_a_device_value(q3_processor, pancake, monkeypatch):
    codec = ChatCodec(q3_processor)
    expected_pv, expected_grid = vision.preprocess(_items(codec, pancake, wrap=False), codec)

    monkeypatch.setattr(vision, "_kernels_pixel_values", lambda: _kernel_on_the_fake_device)
    # the host->device copy of the grid: pinned and non-blocking on a GPU; here, a fake one
    monkeypatch.setattr(engine_mod, "to_device", lambda t, device: _wrap(t), raising=False)
    ctx = engine_mod._Context(codec)
    items = _items(codec, pancake, wrap=True)
    ctx.add_images(items)
    pv, grid, _ = ctx.vision_inputs()
    assert isinstance(pv, OnDevice) and isinstance(grid, OnDevice)
    # the same rows as the CPU path (compared outside the fake device)
    assert torch.equal(_plain(pv), expected_pv)
    assert torch.equal(_plain(grid), expected_grid)


# -- on a real GPU ----------------------------------------------------------------------------


@pytest.mark.gpu
@needs_cuda
def test_no_sync_on_a_gpu(q3_processor, pancake):
    """Steady state: a first call compiles the kernel for these sizes (not measured); a
    second episode's images then go through with no stream synchronisation at all."""
    codec = ChatCodec(q3_processor)

    def context():
        items = _items(codec, pancake, wrap=False)
        for it in items:
            it.data = it.data.cuda()
        ctx = engine_mod._Context(codec, pixel_device="cuda")
        ctx.add_images(items)
        return ctx

    context().vision_inputs()  # warm-up: Triton compiles, tap tables cached
    ctx = context()
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        pv, grid, _ = ctx.vision_inputs()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert pv.device.type == "cuda" and grid.device.type == "cuda"


@pytest.mark.gpu
@needs_cuda
def test_nvdec_frames_equal_cpu_frames(pancake, bunny):
    from torchcodec.decoders import VideoDecoder

    from paravt.video.nvdec import NvdecPool

    pool = NvdecPool("cuda")
    for path in (pancake, bunny):
        got = pool.decode(path, [0, 3, 7])
        want = VideoDecoder(path, device="cpu").get_frames_at([0, 3, 7]).data
        assert got.data.device.type == "cuda" and got.data.shape == want.shape
        # NVDEC's colour conversion differs from FFmpeg's swscale by a few steps at most
        diff = (got.data.cpu().int() - want.int()).abs()
        assert int(diff.max()) <= 8, path
    assert pool.files == 2


def test_a_fallback_reaches_every_call_on_that_video_and_is_counted(pancake, bunny, monkeypatch):
    """The batch's report step over real decoders (CPU ones here): no line, no count; with a
    decoder whose status says it fell back, every call on that file carries the line (the
    episode record's call warnings) and the batch counts the file once."""
    from paravt.tools import batch as batch_mod
    from paravt.tools.results import ToolResult, WindowRequest

    requests = [WindowRequest(pancake, {}), WindowRequest(bunny, {}), WindowRequest(pancake, {})]
    sources = {p: VideoSource(p) for p in (pancake, bunny)}
    for src in sources.values():
        src.decoders.own()  # built, as a decoded batch leaves it

    def results():
        return [ToolResult(True, None, [], 0.0, 1.0, video=r.video) for r in requests]

    plain = results()
    assert batch_mod._report_cpu_fallback(requests, sources, plain) == 0
    assert all(not r.warnings for r in plain)

    real = batch_mod.cpu_fallback_line
    monkeypatch.setattr(
        batch_mod,
        "cpu_fallback_line",
        lambda dec, path: f"{path}: decoded on the CPU" if path == bunny else real(dec, path),
    )
    fell = results()
    assert batch_mod._report_cpu_fallback(requests, sources, fell) == 1
    assert [r.warnings for r in fell] == [[], [f"{bunny}: decoded on the CPU"], []]
    for src in sources.values():
        src.close()
