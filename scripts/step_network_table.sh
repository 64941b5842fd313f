#!/usr/bin/env bash
# Step time and MFU of every shipped scenario, folded, with PP and DP traffic priced beforehand
# (`--network priced`), on the step's shared network as coflows (`--network shared`), and on
# the shared network with every flow apart (`--network apart`, the reference the coflows are
# checked against). Prints a Markdown table with the wall time of the shared and apart runs.
#   scripts/step_network_table.sh MEGASIM_BINARY [SCENARIO...]
set -euo pipefail
megasim=$1
shift
if [ $# -eq 0 ]; then set -- scenarios/*.json scenarios/validation/*.json; fi
field() { python3 -c "import json,sys; d=json.load(sys.stdin); print(f\"{d['step_time_s']:.3f} {100*d['mfu']:.1f}\")"; }
timed() {  # prints "step mfu wall"
  local start end
  start=$(date +%s.%N)
  read -r t m < <("$megasim" simulate "$1" --json --network "$2" | field)
  end=$(date +%s.%N)
  echo "$t $m $(echo "$end - $start" | bc)"
}
echo "| scenario | priced (s) | shared (s) | change | MFU priced | MFU shared | apart (s) | shared vs apart | shared run (s) | apart run (s) |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for f in "$@"; do
  case $f in *schema.json) continue ;; esac
  read -r t0 m0 _ < <(timed "$f" priced)
  read -r t1 m1 w1 < <(timed "$f" shared)
  read -r t2 _ w2 < <(timed "$f" apart)
  change=$(python3 -c "print(f'{100*($t1/$t0-1):+.1f} %')")
  versus=$(python3 -c "print(f'{100*($t1/$t2-1):+.2f} %')")
  printf '| %s | %s | %s | %s | %s %% | %s %% | %s | %s | %.2f | %.2f |\n' "$(basename "$f" .json)" \
    "$t0" "$t1" "$change" "$m0" "$m1" "$t2" "$versus" "$w1" "$w2"
done
