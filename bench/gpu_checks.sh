#!/usr/bin/env bash
# Issue 26's checks on a lent GPU machine, in one call (GPU time is short): the `cuda` tests, then
# bench/train_gpu.py. Shards travel with the call, built beforehand on a CPU machine (.gpu/build.sh-style:
# 12 MB of ../shared/corpus, Google's uncased vocab; nsp at 128 and 512, `none --pack` at 512) into
# $SHARDS (default .gpu). Logs and the bench table land in $OUT (default ./gpu-out).
#   bash bench/gpu_checks.sh            # on the GPU machine, from the repo root
set -uo pipefail
SHARDS=${SHARDS:-.gpu}
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
PY=${PYTHON:-python3}
{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv
  $PY -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
} 2>&1 | tee "$OUT/env.txt"
timeout "${TESTS_SECONDS:-200}" $PY -m pytest -m cuda tests/trainer/test_cuda.py -p no:cacheprovider -q -rA -s \
  --timeout 120 > "$OUT/cuda_tests.log" 2>&1
echo "cuda tests: exit $?"
timeout "${BENCH_SECONDS:-240}" $PY bench/train_gpu.py --shards512 "$SHARDS/nsp512" \
  --packed512 "$SHARDS/packed512" --trainer-shards "$SHARDS/nsp128" --out "$OUT/train_gpu.md" \
  > "$OUT/bench.log" 2>&1
echo "bench: exit $?"
echo "== cuda tests"; grep -E "^(PASSED|FAILED|ERROR|SKIPPED)|relative error|largest|passed|failed" "$OUT/cuda_tests.log" | tail -30
grep -E "^E  " "$OUT/cuda_tests.log" | head -20
echo "== bench"; cat "$OUT/train_gpu.md" 2>/dev/null || tail -40 "$OUT/bench.log"
grep -E "Error|error" "$OUT/bench.log" | grep -v "^ " | head -10
