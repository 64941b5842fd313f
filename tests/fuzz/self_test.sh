#!/usr/bin/env bash
# The fuzz tests can fail: run_fuzzer.sh on a target with a planted heap overflow (fuzz_planted)
# must exit 1 (not 0, and not 77, CTest's skip) and show AddressSanitizer's report of it.
#
#   self_test.sh RUN_FUZZER FUZZ_PLANTED SEED_DIR
set -uo pipefail
out=$(FUZZ_DIR= FUZZ_SECONDS=${FUZZ_SECONDS:-3} "$1" "$2" "$3" 2>&1)
status=$?
if [ "$status" -ne 1 ]; then
  echo "$out" | tail -20
  echo "self_test: run_fuzzer.sh exited $status on the planted bug; expected 1"
  exit 1
fi
if ! grep -q "AddressSanitizer: heap-buffer-overflow" <<<"$out"; then
  echo "$out" | tail -20
  echo "self_test: no AddressSanitizer report of the planted heap overflow"
  exit 1
fi
echo "self_test: the planted heap overflow was found and reported (exit 1)"
