#!/usr/bin/env bash
# Runs every benchmark of the release build and prints their figures. The README keeps the
# current figures with the machine they were taken on.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build/release/bench
for b in "$build"/*_bench "$build"/*/*_bench; do
  [ -x "$b" ] || continue
  echo "== $b"
  "$b" --benchmark_min_time=1 --benchmark_counters_tabular=true
done
if [ -x bench/commands.sh ]; then bench/commands.sh; fi
