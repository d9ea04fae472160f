#!/usr/bin/env bash
# setup-whisper.sh: build whisper.cpp 1.9.1 (static libraries, whisper-cli, and
# the Parakeet TDT library and parakeet-cli from the same source) once into a
# cache folder that later runs reuse.
#
# Source, in order of preference:
#   1. $WHISPER_CPP_DIR, an existing whisper.cpp source tree (e.g. a checkout of
#      the upstream v1.9.1 tag), used as it is;
#   2. the copy of whisper.cpp 1.9.1 inside the npm package nodejs-whisper@0.3.1,
#      fetched with `npm pack` and checked against a pinned SHA-256 before use.
#
# Result: $WHISPER_CACHE/build/{src/libwhisper.a,src/libparakeet.a,ggml/src/libggml*.a,
# bin/whisper-cli,bin/parakeet-cli} and $WHISPER_CACHE/src (headers). A cache
# that has some of these (an older setup built whisper only) gets the missing
# ones: cmake's own dependency check leaves what is built alone. Prints nothing
# on stdout but the cache path.
#
# One build at a time per cache: the script holds an flock on $cache.lock
# while it checks and builds, so a second run (another checkout's make demo
# while this one's make setup builds) says whom it waits for, waits, and
# then reuses what the first built. On stderr it prints a line per stage and
# the build's progress in percent; the compiler's output goes to
# $cache/build.log, which a failure names (with its last lines).
set -euo pipefail

WHISPER_VERSION=1.9.1
NPM_PKG=nodejs-whisper@0.3.1
NPM_TGZ=nodejs-whisper-0.3.1.tgz
NPM_SHA256=92041caf2b26c74b7f489fedf37bd093f216eebd61df512045ec2d19d0531d37

cache=${WHISPER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/yazses/whisper.cpp-$WHISPER_VERSION}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}

log() { printf 'setup-whisper: %s\n' "$*" >&2; }

mkdir -p "$(dirname "$cache")"
exec 9<>"$cache.lock"
if ! flock -n 9; then
  log "waiting for another build of $cache to finish ($(tr -d '\n' < "$cache.lock" 2>/dev/null || echo 'holder unknown'))"
  flock 9
  log "the other build is done; checking what it built"
fi
# Who holds the lock, for a run that has to wait.
printf 'pid %s, %s, since %s' "$$" "$(pwd)" "$(date +%H:%M:%S)" > "$cache.lock"

if [ -f "$cache/build/src/libwhisper.a" ] && [ -x "$cache/build/bin/whisper-cli" ] && [ -f "$cache/src/include/whisper.h" ] &&
  [ -f "$cache/build/src/libparakeet.a" ] && [ -x "$cache/build/bin/parakeet-cli" ] && [ -f "$cache/src/include/parakeet.h" ]; then
  echo "$cache"
  exit 0
fi

command -v cmake >/dev/null || { log "cmake is missing: run 'make setup' or 'apt-get install cmake'"; exit 1; }
mkdir -p "$cache"

if [ -n "${WHISPER_CPP_DIR:-}" ]; then
  [ -f "$WHISPER_CPP_DIR/include/whisper.h" ] || { log "WHISPER_CPP_DIR=$WHISPER_CPP_DIR has no include/whisper.h"; exit 1; }
  src=$(cd "$WHISPER_CPP_DIR" && pwd)
  log "using whisper.cpp source at $src"
else
  if [ ! -f "$cache/src/include/whisper.h" ]; then
    command -v npm >/dev/null || { log "npm is missing: set WHISPER_CPP_DIR to a whisper.cpp $WHISPER_VERSION checkout, or install npm"; exit 1; }
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    log "fetching $NPM_PKG (whisper.cpp $WHISPER_VERSION source)"
    (cd "$tmp" && npm pack --silent "$NPM_PKG" >/dev/null) || { log "npm pack $NPM_PKG failed (offline?); set WHISPER_CPP_DIR instead"; exit 1; }
    got=$(sha256sum "$tmp/$NPM_TGZ" | cut -d' ' -f1)
    if [ "$got" != "$NPM_SHA256" ]; then
      log "checksum mismatch for $NPM_TGZ: got $got, want $NPM_SHA256"
      exit 1
    fi
    tar -xzf "$tmp/$NPM_TGZ" -C "$tmp" package/cpp/whisper.cpp
    rm -rf "$cache/src.tmp"
    mv "$tmp/package/cpp/whisper.cpp" "$cache/src.tmp"
    grep -q "VERSION $WHISPER_VERSION" "$cache/src.tmp/CMakeLists.txt" || { log "unexpected whisper.cpp version in $NPM_PKG"; exit 1; }
    rm -rf "$cache/src"
    mv "$cache/src.tmp" "$cache/src"
  fi
  src=$cache/src
fi

if [ "$src" != "$cache/src" ]; then
  # Keep headers where the Makefile looks for them.
  rm -rf "$cache/src"
  ln -s "$src" "$cache/src"
fi

[ -f "$src/include/parakeet.h" ] || { log "$src has no include/parakeet.h: not whisper.cpp $WHISPER_VERSION"; exit 1; }

# The compiler's output, for when it fails.
buildlog=$cache/build.log
: > "$buildlog"
failed() {
  log "$1 failed; the compiler's output is in $buildlog, which ends:"
  tail -n 20 "$buildlog" >&2
  exit 1
}
# progress turns cmake's "[ 42%] ..." lines into a line per 10 percent.
progress() {
  awk -v last=-1 '
    match($0, /^\[ *[0-9]+%\]/) {
      p = substr($0, RSTART + 1, RLENGTH - 3) + 0
      step = int(p / 10) * 10
      if (step > last) { printf "setup-whisper: compiling: %d%%\n", step; fflush(); last = step }
    }' >&2
}
start=$(date +%s)

# Configure once: a build folder already configured from this source is used
# as it is, so adding the Parakeet targets to an older cache recompiles
# nothing of whisper's.
if grep -qxF "CMAKE_HOME_DIRECTORY:INTERNAL=$src" "$cache/build/CMakeCache.txt" 2>/dev/null; then
  log "building the missing whisper.cpp $WHISPER_VERSION targets in $cache/build with $jobs jobs (log: $buildlog)"
else
  log "configuring whisper.cpp $WHISPER_VERSION in $cache/build (log: $buildlog)"
  cmake -S "$src" -B "$cache/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DWHISPER_BUILD_TESTS=OFF -DWHISPER_BUILD_EXAMPLES=ON -DWHISPER_SDL2=OFF >>"$buildlog" 2>&1 || failed "configuring whisper.cpp"
  log "compiling whisper.cpp $WHISPER_VERSION with $jobs jobs (3 minutes on an idle 2-core machine, 8 on a busy one)"
fi
cmake --build "$cache/build" -j"$jobs" --target whisper whisper-cli parakeet parakeet-cli 2>&1 |
  tee -a "$buildlog" | progress || failed "building whisper.cpp"
log "whisper.cpp $WHISPER_VERSION built in $(( $(date +%s) - start )) s: $cache/build"
echo "$cache"
