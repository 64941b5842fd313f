#!/usr/bin/env bash
# Whole-command timings with hyperfine: the default scenario (step + run-level simulation),
# the same with every rank simulated, and the validation suite.
set -euo pipefail
cd "$(dirname "$0")/.."
m=build/release/sim/cli/megasim
hyperfine --warmup 1 --runs 5 \
  "$m simulate scenarios/megascale-175b-12288.json" \
  "$m simulate --full scenarios/megascale-175b-12288.json" \
  "$m validate"
