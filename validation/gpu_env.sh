# Sourced on the GPU machine, from the repository root, by validation/campaign.sh and validation/retime.sh (or by
# hand: `. validation/gpu_env.sh`): the Python wheels carried in .whl/ installed into /tmp/site, and perfmodel's
# NVRTC - the library the analysis compiles with - unpacked from .whl/nvrtc.tar.xz when it is there, so that the
# runner's default compile (perfmodel.gpu.runner.compile_launch) makes the cubin the analysis reads, not one of the
# machine's own NVRTC (docs/validation.md, "Compiler"). Make the archive on the analysing machine:
#     tar -cJf .whl/nvrtc.tar.xz -C "$(python -c 'import nvidia, os; print(os.path.dirname(nvidia.__path__[0]))')" \
#         nvidia/cu13/lib/libnvrtc.so.13 nvidia/cu13/lib/libnvrtc-builtins.so.13.5
# (the whole nvidia-cuda-nvrtc wheel is over what a device call carries), with nvidia-cuda-cccl's wheel in .whl/.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    >/dev/null 2>&1 || { echo "gpu_env.sh: installing .whl/*.whl failed"; return 4 2>/dev/null || exit 4; }
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
if [ -f .whl/nvrtc.tar.xz ]; then
    mkdir -p /tmp/nvrtc && tar -xJf .whl/nvrtc.tar.xz -C /tmp/nvrtc
    PERFMODEL_NVRTC=$(ls /tmp/nvrtc/nvidia/cu*/lib/libnvrtc.so.* | head -n 1)
    export PERFMODEL_NVRTC
fi
if command -v nvdisasm >/dev/null; then
    PERFMODEL_NVDISASM=$(command -v nvdisasm)
    export PERFMODEL_NVDISASM
fi
python3 -c "from perfmodel.compile import nvrtc; print('perfmodel NVRTC', '.'.join(map(str, nvrtc.version())))"
