#!/usr/bin/env bash
# One lent-GPU job of the paper-scale campaign (issue 29): TACO's step clock alone on the GPU for the data sets in
# CLOCK (none if empty), then the listed runs of NOTEBOOKS (priority order; MATCH: only the runs whose
# '<paper>/<notebook>/<label>' matches) into the run cache with --precompute until MINUTES, each finished config
# archived under OUT/figures (merge it here: `fedkit cache merge --from OUT/figures`), then the cache packed for
# the next machine, then the paper-scale plan with GPU-measured probes. Needs FEDKIT_DATA; writes into OUT. Cache
# entries carried as .gpu/cache (an earlier job's cache_ckpt unpacked) resume where that job stopped.
#   OUT=/tmp/out GRAPHS=1 CLOCK=fmnist MINUTES=6.5 WORKERS=6 benchmarks/gpu_campaign.sh \
#     notebooks/taco/table5_fig2_fig4_fig5_label_groups.ipynb ...
set -uo pipefail
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
export FEDKIT_CACHE="${FEDKIT_CACHE:-/tmp/fedkit-cache}"
mkdir -p "$OUT" "$FEDKIT_CACHE"
# an earlier machine's cache entries (checkpoints of runs cut off at its deadline), carried as .gpu/cache, resume here
[ -d .gpu/cache ] && cp -rn .gpu/cache/. "$FEDKIT_CACHE"/
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; python3 -c "import torch; print(torch.__version__)"; nproc; } 2>&1
DEVICE="${DEVICE:-cuda}"
# GRAPHS=1: first issue 43's measurement, the vectorized step eager and captured as a CUDA graph, in the same job
if [ -n "${GRAPHS:-}" ]; then
  python3 -m pytest -q tests/test_engine_static.py tests/test_engine_conv.py 2>&1 | tail -3
  # and, where Flower is installed, a CUDA run through Flower's simulation engine (its clients' GPU share)
  python3 -c "import flwr" 2>/dev/null && python3 -m pytest -q tests/test_flower.py -k cuda 2>&1 | tail -3
  python3 benchmarks/cuda_graphs.py --device "$DEVICE" --passes 5 --out "$OUT/cuda_graphs.json"
fi
if [ -n "${CLOCK:-}" ]; then
  python3 -c "from fedkit.papers import taco; clock = taco.step_clock('$CLOCK'.split(), '$DEVICE')
print(clock.to_string()); clock.to_csv('$OUT/step_clock_${CLOCK// /_}.csv', index=False)"
fi
FEDKIT_FIGURES="$OUT/figures" python3 -m fedkit.cli figures "$@" --scale paper --device "$DEVICE" --precompute \
  --archive --workers "${WORKERS:-6}" --minutes "${MINUTES:-6.5}" --log "$OUT/precompute.csv" ${MATCH:+--match "$MATCH"}
# finished runs in one archive; unfinished ones' last checkpoints (to resume on the next GPU) in parts under 15 MiB
cd "$FEDKIT_CACHE" && ls | while read -r k; do [ -f "$k/meta.json" ] && echo "$k"; done > /tmp/done.txt
tar czf "$OUT/cache_done.tar.gz" -T /tmp/done.txt
ls -d */checkpoint.pt */config.json > /tmp/ckpt.txt 2>/dev/null  # finished runs keep neither
tar czf - -T /tmp/ckpt.txt | split -b 15m -a 1 - "$OUT/cache_ckpt.tar.gz."
cd - > /dev/null
timeout "${PLAN_SECONDS:-60}" python3 -m fedkit.cli figures notebooks/taco notebooks/feddual notebooks/drag \
  notebooks/fadamgc notebooks/peers --scale paper --device "$DEVICE" --plan > "$OUT/plan_cuda.txt" 2>&1
ls -la "$OUT"
