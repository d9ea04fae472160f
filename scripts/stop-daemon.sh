#!/usr/bin/env bash
# stop-daemon.sh BINDIR: stop the running yazsesd of this user that runs
# the program in BINDIR (make uninstall calls it before it removes the
# programs: a daemon left on deleted binaries answers hold start with
# "holding" and has no microphone). Through systemd when its user unit
# runs it, else SIGTERM and a wait of up to 15 s. Says what it did.
set -euo pipefail
bindir=${1:?usage: stop-daemon.sh BINDIR}
exe="$bindir/yazsesd"
# The unit is app-io.github.yazses.YazSes.service (yazsesd.service is
# its alias once enabled, and the name of an older install).
for unit in app-io.github.yazses.YazSes.service yazsesd.service; do
  if command -v systemctl >/dev/null && systemctl --user is-active --quiet "$unit" 2>/dev/null; then
    unit_exe=$(systemctl --user show -p ExecStart --value "$unit" 2>/dev/null || true)
    if [[ "$unit_exe" == *"path=$exe "* || "$unit_exe" == *"$exe"* ]]; then
      echo "uninstall: stopping and disabling the yazsesd user service ($unit)"
      systemctl --user disable --now "$unit"
      exit 0
    fi
  fi
done
pids=()
for p in /proc/[0-9]*; do
  [ -O "$p" ] || continue
  target=$(readlink "$p/exe" 2>/dev/null) || continue
  # A program already replaced or removed reads "… (deleted)".
  [[ "${target% (deleted)}" == "$exe" ]] && pids+=("${p#/proc/}")
done
[ ${#pids[@]} -eq 0 ] && exit 0
for pid in "${pids[@]}"; do
  echo "uninstall: stopping yazsesd (pid $pid), which runs $exe"
  kill -TERM "$pid" 2>/dev/null || continue
  if ! timeout 15 tail --pid="$pid" -f /dev/null; then
    echo "uninstall: yazsesd (pid $pid) did not stop within 15 s: stop it yourself (kill $pid)" >&2
    exit 1
  fi
done
