#!/usr/bin/env bash
# Where the time of a GPU CV fit goes (issue 24): cProfile of bench/gpu.py's satimage and imclef07a jobs on
# the card, host functions by own time.  Same set-up as bench/gpu_session.sh (bench/out/ carried).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-bench/out/session}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD:$PWD/bench/out/vendor" GPMODELS_DATA="$PWD/bench/out/data"
for job in satimage imclef07a; do
    # satimage with its folds in this process, so that the profile sees the folds' host work
    python3 -m cProfile -o "$OUT/$job.prof" bench/gpu.py --job "$job" --fold-workers 1 | tail -1 | cut -c1-400
    python3 -c "import pstats, sys; s = pstats.Stats(sys.argv[1]); s.sort_stats('tottime').print_stats(22)" \
        "$OUT/$job.prof" | grep -v '^$' | tail -24 | tee "$OUT/$job.txt" | cut -c1-150
done
