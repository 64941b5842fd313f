#!/usr/bin/env bash
# Step time and MFU of every shipped scenario, folded, with PP and DP traffic priced beforehand
# (`--network priced`, the default) and on the step's shared network (`--network shared`).
# Prints a Markdown table and the wall time of each shared run.
#   scripts/step_network_table.sh MEGASIM_BINARY [SCENARIO...]
set -euo pipefail
megasim=$1
shift
if [ $# -eq 0 ]; then set -- scenarios/*.json scenarios/validation/*.json; fi
field() { python3 -c "import json,sys; d=json.load(sys.stdin); print(f\"{d['step_time_s']:.3f} {100*d['mfu']:.1f}\")"; }
echo "| scenario | step before (s) | step after (s) | change | MFU before | MFU after | after run (s) |"
echo "|---|---|---|---|---|---|---|"
for f in "$@"; do
  case $f in *schema.json) continue ;; esac
  read -r t0 m0 < <("$megasim" simulate "$f" --json --network priced | field)
  start=$(date +%s.%N)
  read -r t1 m1 < <("$megasim" simulate "$f" --json --network shared | field)
  wall=$(echo "$(date +%s.%N) - $start" | bc)
  change=$(python3 -c "print(f'{100*($t1/$t0-1):+.1f} %')")
  printf '| %s | %s | %s | %s | %s %% | %s %% | %.2f |\n' "$(basename "$f" .json)" "$t0" "$t1" \
    "$change" "$m0" "$m1" "$wall"
done
