# shellcheck shell=bash
# Source this file to build and test YazSes with plain `go` commands:
#   . scripts/env.sh && go test ./...
# It points cgo at the cached whisper.cpp build that `make setup` made.
WHISPER_CACHE=${WHISPER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/yazses/whisper.cpp-1.9.1}
export WHISPER_CACHE
export C_INCLUDE_PATH="$WHISPER_CACHE/src/include:$WHISPER_CACHE/src/ggml/include${C_INCLUDE_PATH:+:$C_INCLUDE_PATH}"
export LIBRARY_PATH="$WHISPER_CACHE/build/src:$WHISPER_CACHE/build/ggml/src${LIBRARY_PATH:+:$LIBRARY_PATH}"
export YAZ_WHISPER_CLI="$WHISPER_CACHE/build/bin/whisper-cli"
export YAZ_PARAKEET_CLI="$WHISPER_CACHE/build/bin/parakeet-cli"
