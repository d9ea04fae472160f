#!/usr/bin/env bash
# demo.sh: a real run of the pipeline (make demo runs it after setup and build).
#   1. yaz-decode transcribes jfk.wav (11 s of real speech, shipped with the
#      whisper.cpp Go bindings) as text, then as subtitles;
#   2. yaz-speak says a sentence into a pipe, yaz-decode transcribes it;
#   3. stream mode: one JSON object per utterance.
# The model: $YAZ_MODEL if set, else base.en or tiny.en from the models
# folder ($XDG_DATA_HOME/yazses/models) when one is there, else it fetches
# tiny.en (75 MiB, the smallest; checked against its published SHA-1 like
# every model) with scripts/fetch-model.sh. Offline, it falls back to a
# generated random-weight model, which runs the very same code but prints
# gibberish. BIN=dir picks the binaries (default bin/).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-bin}
models=${YAZ_MODEL_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/yazses/models}
jfk=$(go env GOMODCACHE)/github.com/ggerganov/whisper.cpp/bindings/go@v0.0.0-20260227185758-9453b4b9be9b/samples/jfk.wav
[ -f "$jfk" ] || go mod download github.com/ggerganov/whisper.cpp/bindings/go

say() { printf '\n\033[1m== %s\033[0m\n' "$*" >&2; }

model=${YAZ_MODEL:-}
if [ -z "$model" ]; then
  for name in base.en tiny.en; do
    if [ -f "$models/ggml-$name.bin" ]; then
      model=$models/ggml-$name.bin
      break
    fi
  done
fi
if [ -z "$model" ]; then
  say "No model yet: fetching tiny.en (75 MiB, the smallest; verified by its SHA-1) into $models"
  if fetched=$(scripts/fetch-model.sh tiny.en); then
    model=$fetched
  fi
fi
if [ -z "$model" ]; then
  model=.cache/demo/ggml-tiny.en-random.bin
  if [ ! -f "$model" ]; then
    go run ./scripts/testmodel -size tiny.en -o "$model"
  fi
  say "No real model found: using a generated random-weight model (the words will be gibberish)."
  echo "   For real transcripts: scripts/fetch-model.sh base.en (or tiny.en) where you have a network" >&2
else
  say "Model: $model"
fi

say "yaz-decode jfk.wav"
time "$bin/yaz-decode" -m "$model" "$jfk"

say "yaz-decode -f srt jfk.wav"
"$bin/yaz-decode" -m "$model" -f srt "$jfk"

say "yaz-speak -o - 'Ask not what your country can do for you' | yaz-decode"
time "$bin/yaz-speak" -o - "Ask not what your country can do for you." | "$bin/yaz-decode" -m "$model"

say "yaz-decode -f json < jfk.wav (stream mode: one JSON object per utterance)"
"$bin/yaz-decode" -m "$model" -f json < "$jfk"
