#!/bin/sh
# Builds det's LibTorch trials against this node's LibTorch: libdet_torch_trials.so (builtin:mlp,
# cnn and gpt), libdet_nccl.so where CUDA and NCCL are found (NCCL from the CUDA toolkit or the
# nvidia-nccl Python wheel) and det-trial-bench, installed into lib/det of det's archive, where its
# det-worker finds them. It needs LibTorch, CMake and a C++17 compiler, nothing else of det's.
#
#   scripts/build-torch-trials.sh [--torch-from-python] [--torch DIR] [--prefix DIR] [--build-dir DIR] [-DVAR=VALUE...]
#
# --torch-from-python: the LibTorch of `python3`'s torch package (torch.utils.cmake_prefix_path),
#                      as PyTorch's pip wheels ship it; --torch DIR: a LibTorch unpacked in DIR;
#                      neither: what CMake finds (Debian's libtorch-dev, say).
# --prefix: where lib/det goes (default: the archive this script is in, or build-torch-trials/ of a
#           source checkout); --build-dir: default PREFIX/build-torch-trials. -D arguments go to
#           CMake (-DDET_GPU_FAST_PATHS=OFF: no CUDA graph step and no fused Adam).
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
if [ -f "$here/src/CMakeLists.txt" ]; then  # an unpacked archive: scripts/ beside src/
  source_dir="$here/src"
  prefix="$here"
else                                         # a checkout of det's sources
  source_dir="$here"
  prefix="$here/build-torch-trials/install"
fi
torch_prefix=""
build_dir=""
defines=""
while [ $# -gt 0 ]; do
  case "$1" in
    --torch-from-python)
      torch_prefix=$(python3 -c 'import torch.utils; print(torch.utils.cmake_prefix_path)') || {
        echo "build-torch-trials: python3 cannot import torch; install PyTorch or name a LibTorch with --torch DIR" >&2
        exit 1
      }
      shift;;
    --torch) torch_prefix="$2"; shift 2;;
    --prefix) prefix="$2"; shift 2;;
    --build-dir) build_dir="$2"; shift 2;;
    -D*) defines="$defines $1"; shift;;
    *) echo "build-torch-trials: unknown argument $1 (see the comment at the top of $0)" >&2; exit 2;;
  esac
done
[ -n "$build_dir" ] || build_dir="$prefix/build-torch-trials"

generator=""
command -v ninja >/dev/null 2>&1 && generator="-G Ninja"
launcher=""
command -v ccache >/dev/null 2>&1 && launcher="-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
cuda=""
# PyTorch's CMake package looks for nvcc when its LibTorch is a CUDA build; point it at the usual place.
if [ -x /usr/local/cuda/bin/nvcc ] && [ -z "${CUDACXX:-}" ]; then
  cuda="-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DCUDAToolkit_ROOT=/usr/local/cuda"
fi
jobs=$(nproc 2>/dev/null || echo 2)

# shellcheck disable=SC2086 # the optional flags are words or nothing
cmake -S "$source_dir" -B "$build_dir" $generator $launcher $cuda $defines \
  -DDET_COMPONENTS=torch-trials -DCMAKE_BUILD_TYPE=Release \
  ${torch_prefix:+-DCMAKE_PREFIX_PATH="$torch_prefix"} \
  -DCMAKE_CUDA_ARCHITECTURES="${DET_CUDA_ARCHITECTURES:-80;90}" \
  -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib \
  -DCMAKE_INSTALL_RPATH_USE_LINK_PATH=ON
cmake --build "$build_dir" -j"$jobs"
cmake --install "$build_dir" >/dev/null
echo "build-torch-trials: installed into $prefix/lib/det:" $(ls "$prefix/lib/det")
