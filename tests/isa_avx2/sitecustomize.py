"""Makes this process see an AVX2-only x86-64 CPU, for the vLLM tests on an AVX-512 host.

Put this folder on ``PYTHONPATH`` (``.ci/run`` does, for its AVX2 pass): Python imports
``sitecustomize`` at start-up, in every process the tests spawn too (vLLM servers, engine cores).
torch's CPU-feature queries, which vLLM's CPU platform asks to pick its compiled ops
(``CpuPlatform.import_kernels``) and its kernels (attention, linear), then answer as on an AVX2-only
EPYC: AVX-512, AVX-512 bf16, VNNI and AMX off, AVX2 on. So vLLM loads its ``_C_AVX2`` build and
runs its AVX2 kernels; with ``ATEN_CPU_CAPABILITY=avx2`` torch's own kernels are the AVX2 ones too.
Test harness only: paravt never reads it.
"""

import torch.cpu

for _name in (
    "_is_avx512_supported",
    "_is_avx512_bf16_supported",
    "_is_vnni_supported",
    "_is_amx_tile_supported",
    "_is_amx_fp16_supported",
):
    if hasattr(torch.cpu, _name):
        setattr(torch.cpu, _name, lambda: False)
