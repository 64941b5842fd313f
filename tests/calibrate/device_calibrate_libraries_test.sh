#!/usr/bin/env bash
# scripts/device-calibrate.sh's library search path on made-up folders: the toolkit's folders
# first, in their order, and a Python wheel's only for a library the toolkit lacks. Until
# 2026-12-03 the folders came sorted by name, so a wheel's (/opt/torch/.venv/..., here
# a-wheels/) went ahead of the toolkit's and overrode the libraries the tool was built against.
set -euo pipefail
script=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/cuda/lib" "$tmp/a-wheels/torch/lib" "$tmp/a-wheels/nvidia/cudnn/lib" \
  "$tmp/a-wheels/nvidia/nccl/lib"
ln -s lib "$tmp/cuda/lib64"
touch "$tmp/cuda/lib/libcublasLt.so.13" "$tmp/cuda/lib/libnccl.so.2" \
  "$tmp/a-wheels/torch/lib/libcublasLt.so.13" "$tmp/a-wheels/torch/lib/libnccl.so.2" \
  "$tmp/a-wheels/nvidia/cudnn/lib/libcudnn.so.9.1.0" "$tmp/a-wheels/nvidia/nccl/lib/libnccl.so.2"
check() {  # $1: what, $2: got, $3: wanted
  [ "$2" = "$3" ] || { echo "$1: got '$2', wanted '$3'" >&2; exit 1; }
}
# The toolkit lacks cuDNN only: its folders (a missing one left out), then cuDNN's wheel.
got=$(CUDA_LIB_DIRS="$tmp/cuda/lib64:$tmp/none:$tmp/cuda/lib" WHEEL_DIRS="$tmp/a-wheels" \
  "$script" libraries)
check "cuDNN from a wheel" "$got" "$tmp/cuda/lib64:$tmp/cuda/lib:$tmp/a-wheels/nvidia/cudnn/lib"
# The toolkit has all three: no wheel folder at all.
touch "$tmp/cuda/lib/libcudnn.so.9"
got=$(CUDA_LIB_DIRS="$tmp/cuda/lib" WHEEL_DIRS="$tmp/a-wheels" "$script" libraries)
check "all in the toolkit" "$got" "$tmp/cuda/lib"
# No toolkit: a wheel folder per library, the first by path (cuBLASLt 13 from torch/lib).
got=$(CUDA_LIB_DIRS="$tmp/none" WHEEL_DIRS="$tmp/a-wheels" "$script" libraries)
check "no toolkit" "$got" \
  "$tmp/a-wheels/torch/lib:$tmp/a-wheels/nvidia/cudnn/lib:$tmp/a-wheels/nvidia/nccl/lib"
# One folder holding two of them is named once.
rm -r "$tmp/a-wheels/nvidia/nccl"
got=$(CUDA_LIB_DIRS="" WHEEL_DIRS="$tmp/a-wheels" "$script" libraries)
check "one folder, two libraries" "$got" "$tmp/a-wheels/torch/lib:$tmp/a-wheels/nvidia/cudnn/lib"
# A library in a subfolder of the toolkit's: that subfolder, not a wheel's copy (it was found,
# so the wheel's was skipped, and its folder never added).
rm "$tmp/cuda/lib/libnccl.so.2"
mkdir -p "$tmp/cuda/lib/nccl"
touch "$tmp/cuda/lib/nccl/libnccl.so.2"
got=$(CUDA_LIB_DIRS="$tmp/cuda/lib" WHEEL_DIRS="$tmp/a-wheels" "$script" libraries)
check "a toolkit subfolder" "$got" "$tmp/cuda/lib:$tmp/cuda/lib/nccl"
echo "library search path: ok"
