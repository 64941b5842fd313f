#!/usr/bin/env bash
# The measured-profile run for a session lent a GPU machine (the `device` tool: one H100 or H200, no
# network, a CUDA 13 image with nvcc, CMake and PyTorch's NVIDIA wheels, none of megasim's
# Debian dependencies). Two steps, so the short lease goes to measuring, not to building:
#
#   here:   scripts/device-calibrate.sh bundle
#           builds megasim (without MPI) and the CUDA tool megasim-calibrate-gpu against this
#           machine's CUDA 13 toolkit into build/device-bundle/, with the one shared library
#           of ours the device image lacks (libfmt); ~7 MB.
#   there:  run(command="scripts/device-calibrate.sh measure", carry=["build/device-bundle"],
#               timeout_s=420)
#           finds cuBLASLt, cuDNN 9 and NCCL where the image keeps them, records the machine,
#           takes the datasheet profile by the GPU's name (an H100's or an H200's; DEVICE_BASE
#           overrides), measures into $OUT/<profile>-measured.json in three processes, each
#           resuming the file (GEMMs, then memory-bound kernels, collectives and power, both in
#           $OUT/calibrate.log; then fused attention alone, $OUT/attention.log; the tool saves
#           after every measurement, so a step cut short or crashed keeps what it had and the
#           steps after it still run), fits the models to the tables and simulates one Hopper
#           scenario with the result.
#
# Then commit $OUT's profile under calibrate/profiles/ as a measured profile, with the date,
# the driver and library versions from $OUT/machine.txt. After the three steps the board's
# power-limited GEMM rate is measured and merged into the profile (scripts/device-sustained.py,
# about 30 s, its result written after each phase; its output in $OUT/sustained.json, its log
# appended to calibrate.log, since $OUT returns 8 files at most). GEMM_S (default 120),
# OTHERS_S (60) and ATTENTION_S (60) bound the three steps, each killed 10 s after its limit
# if it ignores it, and SUSTAINED_S (whole seconds a phase, default 4: at most 72 s) the
# fourth; the rest of the 420 s is the fit, the check and the copy back, and a hang leaves
# half the 15-minute lease for a rerun. The tool exits 3 and writes no profile when nothing
# was measured. On 2026-12-04 the calibration (then two steps) took 42 s on one H200
# (calibrate/README.md); the sustained step ran there as its own script, not yet inside
# `measure`. Here `measure` stops at megasim's "no NVIDIA driver" error;
# tests/calibrate/device_calibrate_measure_test.sh runs it end to end with stand-ins for the
# GPU's steps (DEVICE_BUNDLE).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# DEVICE_BUNDLE replaces the bundle folder (the test of `measure`, with stand-ins for the GPU).
bundle=${DEVICE_BUNDLE:-$root/build/device-bundle}

bundle() {
  local build=$root/build/device-build
  # Configure compiles the HTML report's charting library in (reports/html/node_modules,
  # ignored by git, so absent from a fresh checkout or worktree): installed first if missing.
  "$root/scripts/install-deps.sh" --html-only || {
    echo "bundle: reports/html/node_modules lacks the echarts that reports/html/package.json" \
      "pins and npm could not install it; run scripts/install-deps.sh, or copy" \
      "reports/html/node_modules from a checkout that has it" >&2
    exit 2
  }
  # Configure's output is kept, and shown when it fails (it used to go to /dev/null).
  mkdir -p "$build"
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DMEGASIM_MPI=OFF \
    -DMEGASIM_CUDA=ON -DMEGASIM_BUILD_BENCH=OFF -DCMAKE_CUDA_ARCHITECTURES="80;90" \
    >"$build/configure.log" 2>&1 || {
    cat "$build/configure.log" >&2
    echo "bundle: configure failed (above; also in $build/configure.log)" >&2
    exit 2
  }
  cmake --build "$build" -j"$(nproc)" --target megasim megasim-calibrate-gpu
  [ -x "$build/calibrate/megasim-calibrate-gpu" ] || {
    echo "megasim-calibrate-gpu was not built: this machine's CUDA toolkit lacks cuBLASLt, cuDNN or NCCL" >&2
    exit 2
  }
  rm -rf "$bundle" && mkdir -p "$bundle"
  cp "$build/sim/cli/megasim" "$build/calibrate/megasim-calibrate-gpu" "$bundle/"
  # libfmt is the only shared library of ours outside glibc and libstdc++ (ldd says which).
  local lib
  for lib in $(ldd "$bundle/megasim" "$bundle/megasim-calibrate-gpu" | awk '/libfmt/ {print $3}' | sort -u); do
    cp -L "$lib" "$bundle/"
  done
  du -sh "$bundle"
  echo "carry build/device-bundle; run: scripts/device-calibrate.sh measure"
}

# Directories holding the NVIDIA libraries the tool links (cuBLASLt 13, cuDNN 9, NCCL 2): the
# CUDA toolkit's first, each that exists, then, for a library the toolkit lacks, the first
# Python wheel directory holding it (nvidia-*-cu13, PyTorch's own lib). Until 2026-12-03 the
# directories came sorted by name, so a wheel's /opt/torch/.venv/... went ahead of
# /usr/local/cuda/lib and overrode the toolkit the tool was built against (its RUNPATH).
# CUDA_LIB_DIRS and WHEEL_DIRS (colon-separated) replace the two lists (the script's test).
library_path() {
  local toolkit=() wheels=() roots=() r py
  IFS=: read -r -a roots <<<"${CUDA_LIB_DIRS-/usr/local/cuda/lib64:/usr/local/cuda/lib:/usr/local/cuda/targets/x86_64-linux/lib}"
  for r in "${roots[@]}"; do [ -d "$r" ] && toolkit+=("$r"); done
  if [ -n "${WHEEL_DIRS+set}" ]; then
    IFS=: read -r -a roots <<<"$WHEEL_DIRS"
  else
    roots=()
    for py in python3 /opt/torch/.venv/bin/python3; do
      command -v "$py" >/dev/null 2>&1 || continue
      roots+=($("$py" -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null || true))
    done
  fi
  for r in "${roots[@]}"; do [ -d "$r" ] && wheels+=("$r"); done
  # The directory of the first match (by path) of pattern $1 under the roots after it ("" if
  # none); -H follows a root that is a link (lib64 -> lib). find exits 1 on a root it cannot
  # read, which set -e would make fatal.
  first_dir() {
    local pattern=$1
    shift
    [ $# -gt 0 ] || return 0
    { find -H "$@" -name "$pattern" 2>/dev/null || true; } | LC_ALL=C sort | head -1 | xargs -r dirname
  }
  local dirs=("${toolkit[@]}") pattern dir
  for pattern in 'libcublasLt.so.13*' 'libcudnn.so.9*' 'libnccl.so.2*'; do
    # The toolkit's copy where it has one (its folder added when a subfolder holds it), else a
    # wheel's.
    dir=$(first_dir "$pattern" "${toolkit[@]}")
    [ -n "$dir" ] || dir=$(first_dir "$pattern" "${wheels[@]}")
    [ -n "$dir" ] || continue
    case ":$(IFS=:; echo "${dirs[*]}"):" in *":$dir:"*) ;; *) dirs+=("$dir") ;; esac
  done
  [ ${#dirs[@]} -gt 0 ] || return 0
  (IFS=:; echo "${dirs[*]}")
}

# One `megasim calibrate --quick` of the sections $4 names into profile $1 within $2 seconds
# (killed 10 s later if it ignores the signal), its output appended to $OUT/$3 and its exit
# status after it; the other arguments are calibrate's. The tool saves after every
# measurement, so a step cut short keeps what it had.
calibrate_step() {
  local profile=$1 limit=$2 name=$3 sections=$4 rc=0
  shift 4
  timeout -k 10 "$limit" "$bundle/megasim" calibrate -o "$profile" --device "$base" \
    --quick "$@" >>"$OUT/$name" 2>&1 || rc=$?
  echo "$name ($sections): exit $rc" | tee -a "$OUT/$name"
}

# The datasheet profile the GPU's measurements start from, by the name nvidia-smi gives it
# (DEVICE_BASE overrides): the lent machine may be an H100 or an H200, and an H100 measured
# from the H200's datasheet (4.8 TB/s of HBM for 3.35) would fit its memory model against the
# wrong peak and be written under the H200's name (until 2026-12-05 every run was taken as an
# H200's).
device_base() {
  if [ -n "${DEVICE_BASE:-}" ]; then
    [ -s "$root/calibrate/profiles/$DEVICE_BASE.json" ] || {
      echo "measure: DEVICE_BASE=$DEVICE_BASE names no profile under calibrate/profiles/" >&2
      return 1
    }
    echo "$DEVICE_BASE"
    return
  fi
  local name
  name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 || true)
  # The SXM boards the profiles hold: "NVIDIA H200" and "NVIDIA H100 80GB HBM3"; a GH200, an
  # NVL or a PCIe board is another memory and power.
  case "$name" in
    *GH200* | *NVL* | *PCIe*) ;;
    *H200*) echo h200-sxm-141gb && return ;;
    *H100*) echo h100-sxm5-80gb && return ;;
  esac
  echo "measure: GPU '${name:-none found}' is neither an H100 SXM nor an H200 SXM; set" \
    "DEVICE_BASE to the profile under calibrate/profiles/ to measure it from" >&2
  return 1
}

measure() {
  : "${OUT:?set OUT to the folder whose files come back}"
  [ -x "$bundle/megasim" ] || { echo "no bundle: run 'scripts/device-calibrate.sh bundle' here and carry build/device-bundle" >&2; exit 2; }
  date -u >"$OUT/machine.txt"  # first: whatever fails below, something comes back
  local libs outer_libs=${LD_LIBRARY_PATH:-} import_error
  libs=$(library_path || true)
  export LD_LIBRARY_PATH="$bundle${libs:+:$libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # The binaries look for models, systems and profiles under the tree they were built from;
  # this copy of the tree may be elsewhere.
  export MEGASIM_DATA_DIR=$root
  {
    date -u
    nvidia-smi 2>&1 || true
    nvcc --version 2>&1 | tail -1 || true
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    ldd "$bundle/megasim-calibrate-gpu" 2>&1 || true  # set -e: a failing ldd ended `measure`
    git -C "$root" log -1 --format='megasim %H %cd' 2>/dev/null || true
  } >>"$OUT/machine.txt" 2>&1
  base=$(device_base) || { echo "measure: no device profile to start from" >>"$OUT/machine.txt"; exit 2; }
  echo "device profile: $base" >>"$OUT/machine.txt"
  local profile=$OUT/$base-measured.json
  # Three processes, each resuming the file the one before saved, so that a crash or a hang in
  # one section loses none of the others (GEMMs and the rest shared one process until
  # 2026-12-05, so a crash in the GEMMs lost the memory-bound kernels and the power too).
  # GEMMs first (the scenario's shapes, then the grid), both steps' output in calibrate.log.
  calibrate_step "$profile" "${GEMM_S:-120}" calibrate.log GEMMs \
    --scenario "$root/scenarios/validation/mcore-h100-177b-2304.json" \
    --skip attention --skip memory --skip nccl --skip interference --skip power
  # Then memory-bound kernels, collectives and interference (with two GPUs or more) and board
  # power.
  calibrate_step "$profile" "${OTHERS_S:-60}" calibrate.log "memory, collectives, power" --resume --skip gemm --skip attention
  # Then fused attention alone: its cuDNN graphs are built by hand and never ran on hardware
  # (a crash or hang there, in one process with the rest until 2026-12-03, would have lost
  # the sections after it).
  calibrate_step "$profile" "${ATTENTION_S:-60}" attention.log attention --resume \
    --skip gemm --skip memory --skip nccl --skip interference --skip power
  [ -s "$profile" ] || { tail -n 5 "$OUT/calibrate.log" "$OUT/attention.log" >&2; exit 1; }
  # The GEMM table is a burst; how much slower GEMMs run once the board holds its power limit,
  # by their share of the time (scripts/device-sustained.py, PyTorch and NVML through the
  # image's python3), merged into the profile as its "sustained_gemm" curve. SUSTAINED_S
  # (default 4, whole) seconds a phase, five phases; skipped where the image lacks torch or
  # pynvml. Its log goes to the end of calibrate.log ($OUT returns 8 files at most).
  local phase=${SUSTAINED_S:-4}
  if ! [[ $phase =~ ^[1-9][0-9]?$ ]]; then
    echo "sustained: SUSTAINED_S=$phase is not a whole number of seconds (1-99); skipped" >>"$OUT/calibrate.log"
  elif ! import_error=$(LD_LIBRARY_PATH=$outer_libs python3 -c 'import torch, pynvml' 2>&1); then
    # Said, where it once left no line at all.
    echo "sustained: skipped, python3 cannot import torch and pynvml: $(echo "$import_error" | tail -n 1)" >>"$OUT/calibrate.log"
  else
    # Unbuffered, so a timeout keeps its lines; with the image's own library path, so torch
    # loads its wheels' CUDA libraries, not those the tool's path puts first.
    { LD_LIBRARY_PATH=$outer_libs timeout -k 10 "$((phase * 8 + 40))" python3 -u \
        "$root/scripts/device-sustained.py" "$OUT/sustained.json" --seconds "$phase" \
        --duty 0.75 0.5 0.3 &&
        LD_LIBRARY_PATH=$outer_libs python3 "$root/scripts/device-sustained.py" --merge \
          "$OUT/sustained.json" "$profile"; } \
      >>"$OUT/calibrate.log" 2>&1 || echo "sustained: failed, no curve merged" >>"$OUT/calibrate.log"
  fi
  # calibrate --scenario's shape list, and the temporary files of a step killed mid-write
  # (the tool's, the sustained step's); $OUT returns 8 files at most.
  rm -f "$profile.shapes.json" "$OUT/sustained.json.tmp" "$profile".tmp.*
  local fitted=$OUT/$base-fitted.json fit_rc=0 check_rc=0
  "$bundle/megasim" calibrate fit "$profile" -o "$fitted" >"$OUT/fit.log" 2>&1 || fit_rc=$?
  # The check runs the refitted profile (a timeout may have cut the tool before its own refit).
  [ -s "$fitted" ] || fitted=$profile
  "$bundle/megasim" simulate "$root/scenarios/validation/mcore-h100-177b-2304.json" \
    --set device="$fitted" >"$OUT/check.txt" 2>&1 || check_rc=$?
  ls -l "$OUT"
  # The run's status says whether the profile fitted and loaded (it said success whatever
  # happened until 2026-12-05); the measurements come back either way.
  if [ "$fit_rc" -ne 0 ] || [ "$check_rc" -ne 0 ]; then
    echo "measure: fit exit $fit_rc, check exit $check_rc (fit.log, check.txt):" >&2
    tail -n 3 "$OUT/fit.log" "$OUT/check.txt" >&2
    exit 1
  fi
}

case "${1:-}" in
  bundle) bundle ;;
  measure) measure ;;
  libraries) library_path ;;  # the search path `measure` puts ahead of LD_LIBRARY_PATH
  *) echo "usage: scripts/device-calibrate.sh bundle|measure|libraries" >&2; exit 2 ;;
esac
