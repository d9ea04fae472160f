#!/usr/bin/env bash
# package-test.sh PKG [SUITE...] (make test-package): the package as a
# stranger's machine gets it. For each suite (default: bookworm trixie, Debian
# 12 and 13), a fresh Debian root made with mmdebstrap, with nothing of this
# project in it, where apt installs PKG and every dependency it names; then,
# inside the root, as a user would:
#
#   - every program answers --version with the package's version;
#   - yaz-decode transcribes a WAV with a generated model (random weights:
#     the words are gibberish, the code path is the real one);
#   - the Silero detector is found with no download (the packaged model):
#     yaz-decode --vad auto says silero;
#   - yazsesd run starts (the null capture backend, no audio server) and
#     yazsesd status says ready;
#   - yaz-mcp answers an MCP client's initialize and tools/list with its
#     two tools;
#   - man yaz-decode shows the page;
#   - apt remove leaves no file of the package, and apt purge nothing of it.
#
# Needs root (mmdebstrap's root mode, chroot) and the network to a Debian
# mirror (PKG_MIRROR, default http://deb.debian.org/debian). About a minute
# or two a suite. Prints one line per check; exits non-zero at the first
# that fails, with what the root printed.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

pkg=${1:?usage: package-test.sh PKG [SUITE...]}
shift
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(bookworm trixie)
mirror=${PKG_MIRROR:-http://deb.debian.org/debian}
pkg=$(readlink -f "$pkg")
[ -f "$pkg" ] || { echo "package-test: no package $pkg" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "package-test: needs root (mmdebstrap's root mode, chroot)" >&2; exit 1; }
command -v mmdebstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends mmdebstrap >&2
version=$(dpkg-deb -f "$pkg" Version)
upstream=${YAZ_VERSION:-}

log() { printf 'package-test: %s\n' "$*" >&2; }

work=$(mktemp -d)
cleanup() { rm -rf --one-file-system "$work"; }
trap cleanup EXIT

# What the checks feed the programs: a generated model and a spoken WAV.
go run ./scripts/testmodel -size tiny.en -o "$work/model.bin" >/dev/null
jfk=$(go env GOMODCACHE)/github.com/ggerganov/whisper.cpp/bindings/go@v0.0.0-20260227185758-9453b4b9be9b/samples/jfk.wav
cp "$jfk" "$work/jfk.wav"

# The checks, run inside the root as a user (uid 1000) with a minimal
# environment, as a login gives it.
cat > "$work/checks.sh" <<'CHECKS'
set -eu
want_version=$1
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; }
for p in yaz-capture yaz-decode yaz-speak yaz-gate yazsesd yaz-mcp yaz-type yaz-fetch-model; do
  v=$($p --version 2>&1) || fail "$p --version: $v"
  case "$v" in *"$want_version"*) ;; *) fail "$p --version says '$v', want $want_version" ;; esac
done
ok "every program answers --version ($want_version)"
out=$(yaz-decode --model /tmp/yt/model.bin /tmp/yt/jfk.wav 2>/tmp/yt/decode.err) || { cat /tmp/yt/decode.err; fail "yaz-decode transcribes"; }
[ -n "$(printf '%s' "$out" | tr -d '[:space:]')" ] || { cat /tmp/yt/decode.err; fail "yaz-decode printed no text"; }
ok "yaz-decode transcribes jfk.wav with a generated model"
grep -qi "silero" /tmp/yt/decode.err || { cat /tmp/yt/decode.err; fail "yaz-decode did not find the packaged Silero model"; }
ok "the Silero detector is found with no download"
export XDG_RUNTIME_DIR=/tmp/yt/run
mkdir -p -m 0700 "$XDG_RUNTIME_DIR"
mkdir -p "$HOME/.config/yazses"
cat > "$HOME/.config/yazses/config.toml" <<EOF
[decode]
model = "/tmp/yt/model.bin"
[capture]
backend = "null"
EOF
yazsesd run >/tmp/yt/daemon.log 2>&1 &
daemon=$!
ready=
for _ in $(seq 1 600); do
  if st=$(yazsesd status 2>&1) && printf '%s' "$st" | grep -q "ready"; then ready=1; break; fi
  kill -0 $daemon 2>/dev/null || break
  sleep 0.1
done
[ -n "$ready" ] || { tail -30 /tmp/yt/daemon.log; yazsesd status || true; fail "yazsesd status never said ready"; }
ok "yazsesd run starts and status says ready"
kill -TERM $daemon; wait $daemon || true
mcp=$(printf '%s\n' \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"package-test","version":"1"}}}' \
  '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
  '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' | timeout 30 yaz-mcp 2>/tmp/yt/mcp.err) || true
printf '%s' "$mcp" | grep -q '"id":2' && printf '%s' "$mcp" | grep -q '"transcribe"' || { cat /tmp/yt/mcp.err; echo "$mcp"; fail "yaz-mcp answers tools/list"; }
ok "yaz-mcp answers initialize and tools/list"
CHECKS

for suite in "${suites[@]}"; do
  root=$work/$suite
  start=$(date +%s)
  log "$suite: a fresh root with $(basename "$pkg") installed by apt (mmdebstrap from $mirror)"
  mkdir -p "$work/in"
  cp "$pkg" "$work/in/"
  if ! unshare --mount --propagation private mmdebstrap --mode=root --variant=apt --include=man-db,passwd \
      --customize-hook="copy-in $work/in/$(basename "$pkg") /tmp" \
      --customize-hook="chroot \"\$1\" env DEBIAN_FRONTEND=noninteractive apt-get install -y /tmp/$(basename "$pkg")" \
      "$suite" "$root" "$mirror" > "$work/$suite.log" 2>&1; then
    tail -30 "$work/$suite.log" >&2
    log "$suite: FAIL: apt could not install the package"
    exit 1
  fi
  log "$suite: installed in $(( $(date +%s) - start )) s: $(grep -o 'Setting up yazses[^.]*' "$work/$suite.log" | head -1)"
  mkdir -p "$root/tmp/yt"
  cp "$work/model.bin" "$work/jfk.wav" "$work/checks.sh" "$root/tmp/yt/"
  chroot "$root" useradd -m -u 1000 -s /bin/sh stranger
  chroot "$root" chown -R stranger /tmp/yt
  run_in() {
    unshare --mount --propagation private sh -c 'mount -t proc proc "$1/proc" && mount -t tmpfs tmpfs "$1/dev/shm" 2>/dev/null; shift; exec chroot "$@"' \
      sh "$root" "$root" "$@"
  }
  want=${upstream:-$(chroot "$root" dpkg-query -W -f '${Version}' yazses)}
  if ! run_in su -s /bin/sh stranger -c "env -i HOME=/home/stranger PATH=/usr/bin:/bin sh /tmp/yt/checks.sh '$want'"; then
    log "$suite: FAIL"
    exit 1
  fi
  page=$(chroot "$root" env MANPAGER=cat PAGER=cat COLUMNS=80 man yaz-decode 2>&1) || true
  case "$page" in *"yaz-decode"*"SYNOPSIS"*|*"yaz-decode"*"Usage"*) echo "ok: man yaz-decode shows the page" ;;
    *) echo "$page" | head -20; log "$suite: FAIL: man yaz-decode"; exit 1 ;; esac
  chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get remove -y yazses >/dev/null 2>&1
  left=$(chroot "$root" sh -c 'dpkg -L yazses 2>/dev/null | while read -r f; do [ -f "$f" ] && echo "$f"; done' || true)
  [ -z "$left" ] || { echo "$left"; log "$suite: FAIL: apt remove left files"; exit 1; }
  echo "ok: apt remove leaves no file of the package"
  # (apt knows a package installed from a file only while it is
  # installed: dpkg purges what remove left, if anything.)
  chroot "$root" dpkg --purge yazses >/dev/null 2>&1
  state=$(chroot "$root" dpkg-query -W -f '${db:Status-Status}' yazses 2>/dev/null || true)
  [ -z "$state" ] || [ "$state" = "not-installed" ] || { log "$suite: FAIL: after purge dpkg says '$state'"; exit 1; }
  echo "ok: apt purge leaves nothing of it"
  log "$suite: passed in $(( $(date +%s) - start )) s"
  rm -rf --one-file-system "$root"
done
