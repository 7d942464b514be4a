#!/bin/sh
# Removes from a virtualenv (container/Dockerfile, python-pypi stage) what no paper's test
# loads, and prints what it saved:
#   - every package's own test suite (site-packages/**/tests/: pandas, scipy, jax, tensorflow
#     ... ship theirs; nothing imports them at run time);
#   - C/C++ headers (torch/include, nvidia/*/include, tensorflow/include): the tests compile
#     nothing, and mmcv's ops are built before the image (wheelhouse/built/);
#   - static archives (*.a) no dynamic loader reads;
#   - the CUDA libraries a CPU-only torch never loads (below);
#   - pip's and the installer's leftovers.
# npm run image:check -- --python-layer pypi then runs every paper's oracle in the result, so
# a removal that broke a paper would show there.
set -eu
venv=${1:?usage: slim-venv.sh VENV}
sp=$(echo "$venv"/lib/python3*/site-packages)
before=$(du -sk "$venv" | cut -f1)
find "$sp" -type d -name tests -prune -exec rm -rf {} +
rm -rf "$sp"/torch/include "$sp"/tensorflow/include
find "$sp"/nvidia -maxdepth 2 -type d -name include -prune -exec rm -rf {} + 2>/dev/null || true
find "$sp" -type f -name '*.a' -delete
# PyPI's torch for linux x86_64 is the CUDA build. What its libraries name as DT_NEEDED (cudart,
# cuBLAS, cuFFT, cuRAND, cuSPARSE, NCCL, cuDNN's front library libcudnn.so.9, CUPTI) stays:
# `import torch` loads it. What follows is named by no library that stays, and is dlopen'ed
# only for work on a GPU; a shard task has none (about 1.4 GB, 0.7 GB zstd-compressed):
#   - cuDNN's engines and sublibraries, loaded by libcudnn.so.9 when a cuDNN handle is made
#     (libcudnn_graph stays: torch.backends.cudnn.version() loads it, on a CPU too);
#   - torch's lazily loaded CUDA linear algebra (libtorch_cuda_linalg.so) and cuSOLVER, which
#     only it loads;
#   - NVRTC (CUDA kernels compiled at run time) and torch's loader of it;
#   - CUPTI's profiling back ends (nvperf, PC sampling, checkpoints), cuFFTW, NVBLAS.
# torch is imported after it (a removed library it needs fails the build); image:check runs
# every paper's oracle in the result.
if [ -d "$sp"/nvidia ]; then
  find "$sp"/nvidia/cudnn/lib -name 'libcudnn_*.so.*' ! -name 'libcudnn_graph.so.*' -delete
  rm -f "$sp"/torch/lib/libtorch_cuda_linalg.so "$sp"/nvidia/cusolver/lib/libcusolver*.so.* \
        "$sp"/nvidia/cuda_nvrtc/lib/libnvrtc*.so* "$sp"/torch/lib/libcaffe2_nvrtc.so \
        "$sp"/nvidia/cuda_cupti/lib/libnvperf_*.so "$sp"/nvidia/cuda_cupti/lib/libpcsamplingutil.so \
        "$sp"/nvidia/cuda_cupti/lib/libcheckpoint.so "$sp"/nvidia/cufft/lib/libcufftw.so.* "$sp"/nvidia/cublas/lib/libnvblas.so.*
  "$venv"/bin/python -c 'import torch; torch.backends.cudnn.version()' ||
    { echo "slim-venv: torch fails without the GPU-only libraries" >&2; exit 1; }
fi
rm -rf "$venv"/share/doc /root/.cache/pip "$venv".install.log
after=$(du -sk "$venv" | cut -f1)
echo "slim-venv: $venv $((before / 1024)) MB -> $((after / 1024)) MB"
