#!/usr/bin/env bash
# Runs one libFuzzer target: replays every seed, then mutates for FUZZ_SECONDS (default 3).
#
#   run_fuzzer.sh FUZZER SEED_DIR...
#
# New inputs that reach new code go to FUZZ_DIR/<fuzzer>/corpus, a finding (crash, sanitizer
# report, uncaught exception other than InputError, hang past 10 s, over 2 GiB) to
# FUZZ_DIR/<fuzzer>/crashes/. Without FUZZ_DIR a temporary folder is used and removed, so the
# short run in `make test` starts from the committed seeds every time (and with -seed=1 makes
# the same mutations, as far as the time allows); `make fuzz` gives a FUZZ_DIR in build/ so
# that the corpus grows from one long run to the next.
set -euo pipefail

fuzzer=$1
shift
name=$(basename "$fuzzer")
seconds=${FUZZ_SECONDS:-3}

if [ -n "${FUZZ_DIR:-}" ]; then
  work="$FUZZ_DIR/$name"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work/corpus" "$work/crashes"

seeds=()
for d in "$@"; do
  if [ -d "$d" ]; then seeds+=("$d"); fi
done

# -error_exitcode and -timeout_exitcode: libFuzzer's defaults (77, 70) include CTest's skip code.
status=0
"$fuzzer" -seed=1 -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -error_exitcode=1 -timeout_exitcode=1 -print_final_stats=1 \
  -artifact_prefix="$work/crashes/" "$work/corpus" "${seeds[@]}" 2>&1 || status=$?
if [ "$status" -ne 0 ]; then
  for f in "$work"/crashes/*; do
    [ -e "$f" ] || continue
    echo "run_fuzzer: finding kept as $f (base64 below):"
    base64 "$f" | head -c 4096
    echo
  done
  echo "run_fuzzer: $name failed (exit $status). Fix the loader, then add the input to"
  echo "tests/fuzz/corpus/${name#fuzz_}/ (and tests/data/bad/cases.tsv where it fits)."
  exit 1
fi
