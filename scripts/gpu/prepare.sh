#!/usr/bin/env bash
# prepare.sh: what the H200 run (scripts/gpu/h200.sh) needs and the GPU
# machine cannot make itself (it has no Go and no network), made here into
# .cache/gpu-run, which the device tool carries (carry: [".cache/gpu-run"];
# under its 64 MiB limit: about 15 MiB):
#
#   whisper.cpp.tar.gz  the pinned whisper.cpp 1.9.1 source, from make
#                       setup's cache (checked against its SHA-256 there)
#   yaz-decode.link/    yaz-decode's objects and final link arguments,
#                       compiled here: h200.sh links them against the CPU
#                       build it makes for that machine's processor
#                       (scripts/gpu/extld.sh, relink.sh), and yaz-decode
#                       opens the CUDA module built there
#   bench               scripts/bench, pure Go (CGO_ENABLED=0)
#   jfk.wav             the 11 s sample of whisper.cpp's Go bindings
#   version             the commit these were made from
#
# Then, in one call of the device tool (a sketch; see docs/gpu.md):
#   run(command="scripts/gpu/h200.sh", carry=[".cache/gpu-run"], kind="nvidia-h200", timeout_s=600)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=.cache/gpu-run
rm -rf "$out"
mkdir -p "$out"
say() { printf 'prepare: %s\n' "$*" >&2; }

# The headers of the pinned source (any configuration: the CPU one).
eval "$(make -s env YAZ_GPU=none)"
cache=${WHISPER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/yazses/whisper.cpp-1.9.1}
src=$cache/src
[ -f "$src/include/whisper.h" ] || { say "no whisper.cpp source in $cache: run make setup first"; exit 1; }
say "packing the whisper.cpp source"
tar -C "$src/" -czhf "$out/whisper.cpp.tar.gz" --exclude=./models --exclude=./samples --exclude=./media --exclude=./tests .

say "compiling yaz-decode (its final link is left for the GPU machine)"
version=$(scripts/version.sh)
YAZ_LINK_BUNDLE="$PWD/$out/yaz-decode.link" \
  go build -trimpath -ldflags "-s -w -X github.com/yazses/yazses/lib/version.Version=$version -linkmode=external -extld=$PWD/scripts/gpu/extld.sh" \
  -o "$out/yaz-decode.unlinked" ./cmd/yaz-decode
rm -f "$out/yaz-decode.unlinked"
grep -qx -- '-Wl,--export-dynamic' "$out/yaz-decode.link/args" || { say "the link arguments lack -Wl,--export-dynamic: this yaz-decode could not open the CUDA module"; exit 1; }

say "building the benchmark (pure Go)"
CGO_ENABLED=0 GOFLAGS= go build -trimpath -o "$out/bench" ./scripts/bench
cp "$(go env GOMODCACHE)/github.com/ggerganov/whisper.cpp/bindings/go@v0.0.0-20260227185758-9453b4b9be9b/samples/jfk.wav" "$out/jfk.wav"
git rev-parse HEAD > "$out/version"
say "ready: $out ($(du -sh "$out" | cut -f1))"
