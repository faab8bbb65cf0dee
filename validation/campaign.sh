#!/bin/bash
# One device call of the issue-13 measurement campaign (run from the repository root on the GPU machine):
#     bash validation/campaign.sh SETS [micro]
# SETS: validation/measure.py --set value (seed, fidelity, corpus, all, or a comma list); "micro" adds the
# microbenchmarks (roofs, latencies). Needs the pydantic wheels (and perfmodel's NVRTC, validation/gpu_env.sh) in
# .whl/ (docs/validation.md). Writes $OUT/.
set -u
test -f validation/kernels/histogram_global.cu || { echo "not the fidelity tree"; exit 3; }
. validation/gpu_env.sh || exit 4
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv | tee $OUT/nvidia_smi.txt
if [ "${2:-}" = micro ]; then
    python3 validation/microbench/run_microbench.py $OUT/microbench.json > $OUT/microbench.log 2>&1
    python3 validation/microbench/run_latency.py $OUT/latency.json > $OUT/latency.log 2>&1
    tail -n 5 $OUT/microbench.log $OUT/latency.log
fi
python3 validation/measure.py $OUT --set "$1" 2>&1 | tee $OUT/measure.log | grep -v "^ *[0-9.]*s .* ok=True" | tail -n 60
grep -c "ok=" $OUT/measure.log
