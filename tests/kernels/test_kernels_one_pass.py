"""The Triton path is one kernel, one launch per window, with the tap counts compile-time constants.

Read from the compiled-function objects (no GPU, no interpreter needed); the interpreter parity of
that kernel is tests/kernels/test_kernels_triton_interpreter.py.
"""

from __future__ import annotations

import pytest

triton = pytest.importorskip("triton")

from paravt.kernels import triton_resize  # noqa: E402


def _jit_functions():
    return {
        name: obj
        for name, obj in vars(triton_resize).items()
        if isinstance(obj, triton.runtime.jit.JITFunction)
    }


def test_one_kernel_fuses_both_passes():
    # the two-pass design had _horizontal_pass and _vertical_pass_pack, with a float32 tensor between
    assert list(_jit_functions()) == ["_fused_resize_pack"]


def test_tap_counts_and_tile_are_compile_time_constants():
    kernel = triton_resize._fused_resize_pack
    constexprs = {kernel.arg_names[i] for i in kernel.constexprs}
    assert {"HT", "HT_P2", "VT", "BLOCK_R", "BLOCK_C", "P", "M", "TP", "IMAGE"} <= constexprs
    # no runtime tap bound left
    assert "taps" not in kernel.arg_names
