#!/usr/bin/env bash
# demo.sh: a real run of the pipeline (make demo runs it after setup and build).
#   1. yaz-speak says a sentence into a pipe, yaz-decode transcribes it;
#   2. yaz-decode transcribes jfk.wav (shipped with the whisper.cpp Go
#      bindings) to subtitles.
# It uses the real model at $XDG_DATA_HOME/yazses/models/ggml-base.en.bin (or
# $YAZ_MODEL) when there is one; otherwise a generated random-weight model,
# which runs the very same code but prints gibberish: fetch a real one with
# scripts/fetch-model.sh base.en.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=bin
model=${YAZ_MODEL:-${XDG_DATA_HOME:-$HOME/.local/share}/yazses/models/ggml-base.en.bin}
jfk=$(go env GOMODCACHE)/github.com/ggerganov/whisper.cpp/bindings/go@v0.0.0-20260227185758-9453b4b9be9b/samples/jfk.wav
[ -f "$jfk" ] || go mod download github.com/ggerganov/whisper.cpp/bindings/go

say() { printf '\n\033[1m== %s\033[0m\n' "$*" >&2; }

if [ ! -f "$model" ]; then
  model=.cache/demo/ggml-tiny.en-random.bin
  if [ ! -f "$model" ]; then
    mkdir -p .cache/demo
    go run ./scripts/testmodel -size tiny.en -o "$model"
  fi
  say "No real model found: using a generated random-weight model (the words will be gibberish)."
  echo "   For real transcripts: scripts/fetch-model.sh base.en" >&2
fi

say "yaz-speak --out - 'Ask not what your country can do for you' | yaz-decode"
time "$bin/yaz-speak" --out - "Ask not what your country can do for you." | "$bin/yaz-decode" -m "$model"

say "yaz-decode -o srt jfk.wav"
time "$bin/yaz-decode" -m "$model" -o srt "$jfk"

say "yaz-decode --json < jfk.wav (stream mode: one JSON object per utterance)"
"$bin/yaz-decode" -m "$model" --json < "$jfk"
