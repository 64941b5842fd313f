#!/usr/bin/env bash
# scripts/device-calibrate.sh measure, on this machine without a GPU: stand-ins for the two
# things that need one (`megasim calibrate -o`, writing the profile of the 2026-12-04 run, and
# scripts/device-sustained.py's measurement, writing that day's result), the real megasim for
# the fit and the check, and the real --merge. The glue had never run end to end: a session
# with a GPU is rare, and $OUT brings back 8 files at most. The bundle here has no
# megasim-calibrate-gpu, so the machine record's ldd fails, which ended `measure` until now.
# Arguments: the script, the megasim binary, the source tree.
set -euo pipefail
script=$1 megasim=$2 src=$3
# The caller's own limits would change what is measured and skipped.
unset SUSTAINED_S GEMM_S OTHERS_S ATTENTION_S DEVICE_BUNDLE
python=$(command -v python3)  # the real one, for --merge, before PATH puts the stand-in first
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
records=$src/calibrate/measurements/h200-2026-12-04
fail() { echo "$*" >&2; exit 1; }

mkdir -p "$tmp/bundle" "$tmp/bin"
# megasim: `calibrate -o PROFILE ...` (a measurement) copies the day's profile, resuming keeps
# it; with CRASH_GEMMS set, the GEMMs' step (the one given --scenario) dies as a segfault
# would, writing nothing; everything else (fit, simulate) is the real binary.
cat >"$tmp/bundle/megasim" <<STANDIN
#!/usr/bin/env bash
if [ "\$1" = calibrate ] && [ "\$2" = -o ]; then
  case " \$* " in *" --scenario "*) [ -z "\${CRASH_GEMMS-}" ] || exit 139 ;; esac
  [ -s "\$3" ] || cat "$records/run2-profile.json" >"\$3"
  echo "stand-in calibrate: \$*"
  exit 0
fi
exec "$megasim" "\$@"
STANDIN
# python3: the import check passes; the measurement writes the day's result; --merge is real.
cat >"$tmp/bin/python3" <<STANDIN
#!/usr/bin/env bash
if [ "\$1" = -c ]; then exit 0; fi
if [ "\$1" = -u ]; then shift; fi  # the measurement runs unbuffered
if [ "\${2-}" = --merge ]; then exec "$python" "\$@"; fi
# Only a JSON path is written (a call that put the script there overwrote it once).
case "\${2-}" in *.json) ;; *) echo "stand-in sustained: no output path in: \$*" >&2; exit 1 ;; esac
cat "$records/sustained-duty.json" >"\$2"
echo "stand-in sustained: \$*"
STANDIN
# nvidia-smi: the GPU's name is GPU_NAME (the device may be an H100 or an H200); anything else
# prints nothing, as the machine record's call does without a GPU.
cat >"$tmp/bin/nvidia-smi" <<'STANDIN'
#!/usr/bin/env bash
if [ "${1-}" = --query-gpu=name ]; then echo "${GPU_NAME-NVIDIA H200}"; fi
STANDIN
chmod +x "$tmp/bundle/megasim" "$tmp/bin/python3" "$tmp/bin/nvidia-smi"

run() {  # $1: the folder for $OUT; the rest: environment for the script
  local out=$1
  shift
  mkdir -p "$out"
  env "$@" OUT="$out" DEVICE_BUNDLE="$tmp/bundle" PATH="$tmp/bin:$PATH" \
    "$script" measure >"$out.stdout" 2>&1 || fail "measure failed: $(cat "$out.stdout")"
}

run "$tmp/out"
files=$(find "$tmp/out" -type f | wc -l)
[ "$files" -le 8 ] || fail "\$OUT holds $files files; 8 come back: $(ls "$tmp/out")"
for f in machine.txt calibrate.log attention.log h200-sxm-141gb-measured.json sustained.json \
  h200-sxm-141gb-fitted.json fit.log check.txt; do
  [ -s "$tmp/out/$f" ] || fail "\$OUT lacks $f: $(ls "$tmp/out")"
done
# The curve reached the profile, the fit kept it, and the check ran with it.
grep -q '"sustained_gemm"' "$tmp/out/h200-sxm-141gb-measured.json" || fail "no curve merged"
grep -q '"sustained_gemm"' "$tmp/out/h200-sxm-141gb-fitted.json" || fail "the fit lost the curve"
grep -q "sustained_gemm \[" "$tmp/out/calibrate.log" || fail "merge not logged"
grep -Eq "power cap +0\.[0-9]*[1-9]" "$tmp/out/check.txt" ||
  fail "the check has no power cap: $(cat "$tmp/out/check.txt")"

# A SUSTAINED_S that is not whole seconds skips the curve, and the rest still comes back.
run "$tmp/bad" SUSTAINED_S=2.5
grep -q "SUSTAINED_S=2.5 is not a whole number" "$tmp/bad/calibrate.log" || fail "no skip line"
[ -s "$tmp/bad/h200-sxm-141gb-measured.json" ] || fail "no profile after a skipped curve"
! grep -q '"sustained_gemm"' "$tmp/bad/h200-sxm-141gb-measured.json" || fail "a curve anyway"
[ -s "$tmp/bad/check.txt" ] || fail "no check after a skipped curve"

# A crash in the GEMMs' step loses them alone: the next steps resume the (absent) file and
# measure the rest, and the fit and check still run (one process held GEMMs, memory-bound
# kernels, collectives and power until 2026-12-05).
run "$tmp/crash" CRASH_GEMMS=1
grep -q "calibrate.log (GEMMs): exit 139" "$tmp/crash/calibrate.log" ||
  fail "the crash not logged: $(cat "$tmp/crash/calibrate.log")"
grep -q "calibrate.log (memory, collectives, power): exit 0" "$tmp/crash/calibrate.log" ||
  fail "no step after the crash: $(cat "$tmp/crash/calibrate.log")"
grep -q -- "--resume --skip gemm --skip attention" "$tmp/crash/calibrate.log" ||
  fail "the second step does not resume without the GEMMs: $(cat "$tmp/crash/calibrate.log")"
[ -s "$tmp/crash/h200-sxm-141gb-fitted.json" ] || fail "no fit after the crash"

# An H100 is measured from the H100's datasheet profile and named for it (every run was taken
# as an H200's until 2026-12-05); a GPU that is neither is refused before anything runs.
run "$tmp/h100" GPU_NAME="NVIDIA H100 80GB HBM3"
[ -s "$tmp/h100/h100-sxm5-80gb-measured.json" ] || fail "no H100 profile: $(ls "$tmp/h100")"
[ -s "$tmp/h100/h100-sxm5-80gb-fitted.json" ] || fail "no fitted H100 profile"
! ls "$tmp/h100" | grep -q h200 || fail "an H200 file from an H100: $(ls "$tmp/h100")"
grep -q "device profile: h100-sxm5-80gb" "$tmp/h100/machine.txt" || fail "base not recorded"
# `measure` with the environment given ($3...) is refused before anything runs, saying $2.
refused() {
  local name=$1 reason=$2
  shift 2
  mkdir -p "$tmp/$name"
  if env "$@" OUT="$tmp/$name" DEVICE_BUNDLE="$tmp/bundle" PATH="$tmp/bin:$PATH" \
    "$script" measure >"$tmp/$name.stdout" 2>&1; then
    fail "$name: measured anyway"
  fi
  grep -q "$reason" "$tmp/$name.stdout" || fail "$name: no reason given: $(cat "$tmp/$name.stdout")"
}
refused a100 "neither an H100 SXM nor an H200 SXM; set DEVICE_BASE" GPU_NAME="NVIDIA A100-SXM4-80GB"
# A GH200's name holds "H200"; its memory and power are another board's.
refused gh200 "GPU 'NVIDIA GH200 480GB' is neither" GPU_NAME="NVIDIA GH200 480GB"
refused base "DEVICE_BASE=nope names no profile" DEVICE_BASE=nope
echo "measure: $files files, curve merged and fitted; SUSTAINED_S=2.5 skipped; a crash in the GEMMs kept the rest; H100 named; A100, GH200 and a bad DEVICE_BASE refused"
