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
unset SUSTAINED_S MEASURE_S ATTENTION_S DEVICE_BUNDLE
python=$(command -v python3)  # the real one, for --merge, before PATH puts the stand-in first
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
records=$src/calibrate/measurements/h200-2026-12-04
fail() { echo "$*" >&2; exit 1; }

mkdir -p "$tmp/bundle" "$tmp/bin"
# megasim: `calibrate -o PROFILE ...` (a measurement) copies the day's profile, resuming keeps
# it; everything else (fit, simulate) is the real binary.
cat >"$tmp/bundle/megasim" <<STANDIN
#!/usr/bin/env bash
if [ "\$1" = calibrate ] && [ "\$2" = -o ]; then
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
if [ "\${2-}" = --merge ]; then exec "$python" "\$@"; fi
cat "$records/sustained-duty.json" >"\$2"
echo "stand-in sustained: \$*"
STANDIN
chmod +x "$tmp/bundle/megasim" "$tmp/bin/python3"

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
echo "measure: $files files, curve merged and fitted; SUSTAINED_S=2.5 skipped"
