#!/bin/sh
# Rewrites tests/golden/ (text and --json output of `megasim simulate` for every shipped scenario,
# plus events.txt, the event-count fingerprint) from a built binary. Run it only when an output
# change is intended, and say in the commit why each figure moved.
#   scripts/update-goldens.sh [path/to/megasim]     (default: build/release/sim/cli/megasim)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
binary=${1:-$root/build/release/sim/cli/megasim}
[ -x "$binary" ] || { echo "no megasim binary at $binary: build it first" >&2; exit 2; }
exec python3 "$root/tests/golden/golden.py" --binary "$binary" update
