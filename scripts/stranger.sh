#!/usr/bin/env bash
# stranger.sh (make test-stranger): the whole suite as a stranger runs it,
# on a stranger's machine, LOAD_RUNS times in a row (default 3):
#
#   - from a fresh clone of REV (default HEAD) in a new folder with nothing
#     beside it (the tests' Silero model is put in the cache first, from
#     this checkout: make test-models);
#   - from a desktop terminal: DISPLAY names an Xvfb standing for the
#     user's own session and WAYLAND_DISPLAY a socket name of the user's,
#     both set in the shell that runs make test (no test may type into them
#     or read them);
#   - beside the user's own yazsesd, built from the same clone, started as
#     systemd would (env -i, no LANG), its socket in the same
#     XDG_RUNTIME_DIR the tests' shell has;
#   - with every core kept busy by other work (scripts/load.sh).
#
# At the end it checks that the user's daemon still runs, is ready, and
# took no dictation: nothing the tests did reached the user's session.
#
#   scripts/stranger.sh            # HEAD, three loaded runs in a row
#   LOAD_RUNS=1 scripts/stranger.sh v0.1.0
#
# Needs what make test needs (make setup, and root for the desks); the
# whisper.cpp build and the desk roots are reused from the cache.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
rev=${1:-HEAD}
dir=$(mktemp -d "${TMPDIR:-/tmp}/yazses-stranger.XXXXXX")
export PATH=/usr/local/go/bin:$HOME/go/bin:$PATH
export GOFLAGS=${GOFLAGS:--buildvcs=false}

pids=()
cleanup() {
  [ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { echo "stranger: $*" >&2; }

make -s -C "$here" test-models
git clone -q "$here" "$dir/yazses"
git -C "$dir/yazses" checkout -q "$(git -C "$here" rev-parse "$rev")"
log "clone of $(git -C "$dir/yazses" rev-parse --short HEAD) in $dir"

# The user's programs and model, built as a user would have them.
cd "$dir/yazses"
make -s setup >/dev/null
eval "$(make -s env)"
mkdir -p "$dir/user/bin" "$dir/user/xdg" "$dir/user/home"
chmod 0700 "$dir/user/xdg"
go build -o "$dir/user/bin/" ./cmd/...
go run ./scripts/testmodel -size tiny.en -o "$dir/user/model.bin" >/dev/null
cat >"$dir/user/config.toml" <<EOF
[decode]
model = "$dir/user/model.bin"

[vad]
engine = "energy"
EOF

# The user's session: an X server of their own.
exec 9<> <(:)
Xvfb -displayfd 9 -nolisten tcp >"$dir/user/xvfb.log" 2>&1 &
pids+=($!)
read -r -t 30 display <&9 || { log "Xvfb did not start: $(cat "$dir/user/xvfb.log")"; exit 1; }
exec 9<&-
log "the user's session: DISPLAY=:$display"

user_env=(env -i HOME="$dir/user/home" PATH="$dir/user/bin:/usr/local/bin:/usr/bin:/bin"
  XDG_RUNTIME_DIR="$dir/user/xdg" DISPLAY=":$display")
# systemd's side of the unit's Type=notify: a NOTIFY_SOCKET of its own,
# and the daemon counts as started at its READY=1 (sent once its children
# are up or have failed; status then says which).
go build -o "$dir/sdlisten" ./scripts/sdlisten
coproc notify { "$dir/sdlisten" -timeout 90s "$dir/user/notify"; }
pids+=("$notify_PID")
exec {notify_out}<&"${notify[0]}" # bash closes the coproc's own once it exits
read -r -t 30 line <&"$notify_out" && [ "$line" = listening ] ||
  { log "sdlisten did not listen: ${line:-nothing}"; exit 1; }
"${user_env[@]}" NOTIFY_SOCKET="$dir/user/notify" "$dir/user/bin/yazsesd" run -c "$dir/user/config.toml" >"$dir/user/daemon.log" 2>&1 &
pids+=($!)
ready=
while read -r line <&"$notify_out"; do
  [ "$line" != READY=1 ] || { ready=1; break; }
done
[ -n "$ready" ] || { log "the user's daemon sent no READY=1: $(tail -20 "$dir/user/daemon.log")"; exit 1; }
if ! "${user_env[@]}" "$dir/user/bin/yazsesd" status >"$dir/user/status.txt" 2>&1 ||
  ! grep -q '^health *ready' "$dir/user/status.txt"; then
  log "the user's daemon started but is not ready: $(cat "$dir/user/status.txt")"
  exit 1
fi
log "the user's daemon is ready (log $dir/user/daemon.log)"

# The desktop terminal the suite runs from. As root the real desks can be
# had, so their tests fail rather than skip (as in CI).
[ "$(id -u)" -ne 0 ] || export YAZ_TEST_DESK=${YAZ_TEST_DESK:-1}
rc=0
env DISPLAY=":$display" WAYLAND_DISPLAY="wayland-$display" XDG_RUNTIME_DIR="$dir/user/xdg" \
  XDG_SESSION_TYPE=x11 XDG_CURRENT_DESKTOP=GNOME \
  LOAD_RUNS="${LOAD_RUNS:-3}" scripts/load.sh make test || rc=$?

# Nothing reached the user's session.
if ! "${user_env[@]}" "$dir/user/bin/yazsesd" status >"$dir/user/status.txt" 2>&1 ||
  ! grep -q '^health *ready' "$dir/user/status.txt"; then
  log "the user's daemon is gone or not ready after the runs: $(cat "$dir/user/status.txt")"
  rc=1
fi
last=$("${user_env[@]}" "$dir/user/bin/yazsesd" ctl last 2>&1 || true)
if grep -q '"at_ms"' <<<"$last"; then
  log "the user's daemon took a dictation during the runs"
  rc=1
fi
if [ $rc -eq 0 ]; then
  log "passed; the user's daemon is still ready and took no dictation"
  cleanup
  rm -rf "$dir"
else
  log "FAILED (the user's daemon: $(grep -m1 '^health' "$dir/user/status.txt" || echo gone)); the clone and the user's logs stay in $dir"
fi
exit $rc
