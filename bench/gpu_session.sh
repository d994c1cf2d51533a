#!/usr/bin/env bash
# One lent GPU session (issue 24), as one command: what the card is doing, the `gpu` tests, the host cost
# of a CG step in both placements (bench/device_calls.py, CALLS_SECONDS, 0 skips it), then bench/gpu.py
# within what is left of BUDGET seconds.  The machine has no network: array-api-compat
# and array-api-strict (pure Python) and the data travel in the ignored bench/out/ (bench/gpu.py's
# docstring says how to fill it).  If the gpu tests fail (not merely run out of time), the bench runs with --no-fused, so that the
# array-API products are still measured.  Logs go to $OUT (the device tool's folder) or bench/out/session.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-bench/out/session}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD:$PWD/bench/out/vendor" GPMODELS_DATA="$PWD/bench/out/data"
start=$(date +%s)
nvidia-smi --query-gpu=name,memory.total,memory.used,utilization.gpu,clocks.sm --format=csv | tee "$OUT/gpu.txt"
nvidia-smi --query-compute-apps=pid,used_memory --format=csv | tee -a "$OUT/gpu.txt"
python3 -c "import torch, triton, numpy; print('torch', torch.__version__, 'triton', triton.__version__, 'numpy', numpy.__version__)"
timeout "${TEST_SECONDS:-150}" python3 -m pytest -q -x -m gpu -p no:cacheprovider tests/kernels tests/operators tests/engine \
    tests/inference/map/test_device_cg.py 2>&1 | tee "$OUT/tests.log"
tests=${PIPESTATUS[0]}
fused=""
if [ "$tests" -eq 124 ]; then
    echo "gpu tests: stopped after ${TEST_SECONDS:-150} s (incomplete); the bench keeps the fused products"
elif [ "$tests" -ne 0 ]; then
    echo "gpu tests: exit $tests; the bench runs with --no-fused"
    fused="--no-fused"
fi
if [ "${CALLS_SECONDS:-75}" -gt 0 ]; then
    timeout "${CALLS_SECONDS:-75}" python3 bench/device_calls.py --repeat 2 2>&1 | tee "$OUT/calls.log"
fi
left=$(( ${BUDGET:-560} - ($(date +%s) - start) ))
python3 bench/gpu.py $fused --deadline "$left" "$@" 2>&1 | tee "$OUT/bench.log"
