#!/usr/bin/env bash
# Issue 39's GPU measurements as one command, for a machine with a CUDA device (the device
# tool: `run` it from the repository root with carry [".whl"], after downloading the
# wheels that machine lacks as benchmarks/README.md says). Writes under $OUT: the GPU and
# versions, the array API tests on CUDA and CuPy, and the linear probe at the size.
set -uo pipefail
out=${OUT:-/tmp/skdp-gpu}
mkdir -p "$out"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" SCIPY_ARRAY_API=1 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total --format=csv 2>&1 | tee "$out/gpu.txt"
python3 -c "import torch, sklearn, scipy, numpy, dp_accounting; print('torch', torch.__version__,
'cuda', torch.cuda.is_available(), 'sklearn', sklearn.__version__, 'scipy', scipy.__version__,
'numpy', numpy.__version__)" 2>&1 | tee -a "$out/gpu.txt"
timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_array_api.py -k "cuda or cupy" \
    2>&1 | tail -40 | tee "$out/tests.txt"
timeout 300 python3 -m benchmarks.probe --backends torch-cuda --rows 1000000 --features 1024 \
    --classes 100 --runs 3 --out "$out/probe_gpu.json" 2>&1 | tee "$out/probe.txt"
