#!/usr/bin/env bash
# test-models.sh (make setup): put the real Silero VAD model the tests use,
# ggml-silero-v6.2.0.bin (885,098 bytes, sha256 2aa269b7...6987), into the
# one folder the tests read (internal/testvad): $YAZ_TEST_MODELS, else
# $XDG_CACHE_HOME/yazses/test-models (default ~/.cache/yazses/test-models).
#
# From, in order: the folder already (checked, nothing to do);
# $YAZ_SHARED_MODELS (default ../shared/models beside the checkout, as CI
# has it); else the model hub through fetch-model.sh silero-v6.2.0. Every
# copy is checked against the size and SHA-256 before it is renamed into
# place. Never into the repository.
#
# Offline with no copy anywhere it says so in one line and exits 0: the
# build needs no model, and the tests that do fail with one line each
# package that names `make setup`.
set -euo pipefail

file=ggml-silero-v6.2.0.bin
bytes=885098
sum=2aa269b785eeb53a82983a20501ddf7c1d9c48e33ab63a41391ac6c9f7fb6987

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
cache=${XDG_CACHE_HOME:-}
case $cache in /*) ;; *) cache=$HOME/.cache ;; esac
dir=${YAZ_TEST_MODELS:-$cache/yazses/test-models}
shared=${YAZ_SHARED_MODELS:-$(dirname "$root")/shared/models}
dest=$dir/$file

log() { printf 'test-models: %s\n' "$*" >&2; }
good() { [ -f "$1" ] && [ "$(wc -c < "$1" | tr -d ' ')" = "$bytes" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$sum" ]; }

if good "$dest"; then
  exit 0
fi
if [ -e "$dest" ]; then
  log "$dest is not the pinned file (size or sha256): replacing it"
  rm -f "$dest"
fi
mkdir -p "$dir"

if [ -f "$shared/$file" ]; then
  if ! good "$shared/$file"; then
    log "$shared/$file is not the pinned file (want $bytes bytes, sha256 $sum): not used"
  else
    tmp=$(mktemp "$dest.XXXXXX")
    cp "$shared/$file" "$tmp"
    chmod 0644 "$tmp"
    mv -f "$tmp" "$dest"
    log "copied $file from $shared to $dir"
    exit 0
  fi
fi

# The hub: fetch-model.sh checks the same size and sha256 (see its table).
if err=$(YAZ_MODEL_DIR=$dir "$here/fetch-model.sh" silero-v6.2.0 2>&1 >/dev/null); then
  log "downloaded $file into $dir"
  exit 0
fi
err=$(printf '%s\n' "$err" | tail -n1)
err=${err#yaz-fetch-model: }
log "no $file: none in $shared, and ${err%%;*}; the tests that need it will fail: run make setup again online, or copy the file into $dir"
exit 0
