#!/usr/bin/env bash
# load.sh (make test-load): run a command, `make test` unless one is given,
# LOAD_RUNS times in a row (default 1) while LOAD_PROCS busy loops
# (default: one per core) keep every core busy, as other work on a shared
# machine does. The tests must pass there too: nothing in them may depend
# on an idle machine. Stops at the first failed run; the busy loops end
# with the script, however it ends.
#
#   scripts/load.sh                          # make test once, loaded
#   LOAD_RUNS=3 scripts/load.sh make test    # three in a row (make test-load)
#   scripts/load.sh go test -race -run TestX ./cmd/yazsesd/internal/supervise
set -euo pipefail

procs=${LOAD_PROCS:-$(nproc 2>/dev/null || echo 2)}
runs=${LOAD_RUNS:-1}
[ $# -gt 0 ] || set -- make test

pids=()
stop() {
  [ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap stop EXIT
trap 'exit 130' INT TERM
for _ in $(seq "$procs"); do
  nice -n 0 sh -c 'while :; do :; done' &
  pids+=($!)
done
# For the command (and this script's test): the busy processes.
export LOAD_PIDS="${pids[*]}"

echo "load: $procs busy processes (pids $LOAD_PIDS) beside: $*" >&2
total=$(date +%s)
for run in $(seq "$runs"); do
  start=$(date +%s)
  if ! "$@"; then
    echo "load: run $run of $runs FAILED after $(( $(date +%s) - start )) s" >&2
    exit 1
  fi
  echo "load: run $run of $runs passed in $(( $(date +%s) - start )) s" >&2
done
echo "load: $runs of $runs passed in $(( $(date +%s) - total )) s with $procs busy processes" >&2
