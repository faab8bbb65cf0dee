#!/bin/bash
# Repeat timing sessions (docs/validation.md, "Reproducibility"), run from the repository root on the GPU machine:
#     bash validation/retime.sh N [N ...]
# For each session number N: the latency and launch microbenchmarks (run_latency.py) and every case of the datasets
# of this GPU timed again without ncu (validation/measure.py --no-ncu): seed and fidelity,corpus on an H100
# (h100.json, h100_fidelity.json), all on an H200 (h200.json). Writes $OUT/<gpu>_latency_retimeN.json,
# $OUT/<gpu>_<set>_retimeN.json (measure.py's measure.json) and one log, $OUT/retime.log; validation/add_sessions.py
# attaches the timings to the datasets. Needs the pydantic wheels (and perfmodel's NVRTC, validation/gpu_env.sh) in .whl/.
set -u
. validation/gpu_env.sh || exit 4
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
echo "GPU: $name"
case "$name" in
    *H100*) gpu=h100; sets="seed fidelity,corpus" ;;
    *H200*) gpu=h200; sets="all" ;;
    *) echo "not an H100 or H200"; exit 3 ;;
esac
log="$OUT/retime.log"
for n in "$@"; do
    echo "== session $n: run_latency.py" >> "$log"
    python3 validation/microbench/run_latency.py "$OUT/${gpu}_latency_retime$n.json" >> "$log" 2>&1
    grep -i "empty launch" "$log" | tail -n 1
    for s in $sets; do
        dir=$(mktemp -d)
        echo "== session $n: measure.py --set $s --no-ncu" >> "$log"
        python3 validation/measure.py "$dir" --set "$s" --no-ncu >> "$log" 2>&1
        mv "$dir/measure.json" "$OUT/${gpu}_${s%%,*}_retime$n.json"
        echo "session $n, $s: $(tail -n 1 "$log")"
    done
done
