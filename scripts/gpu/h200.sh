#!/usr/bin/env bash
# h200.sh [all|build|measure]: docs/gpu.md's measurements on a borrowed NVIDIA
# H200 (the device tool's nvidia-h200: 16 cores, nvcc 13, CMake and ninja,
# no Go, no network), in one call, after scripts/gpu/prepare.sh made
# .cache/gpu-run here and the call carried it.
#
#   build    whisper.cpp for the CPU and the CUDA module for sm_90 alone,
#            through make setup's own script (YAZ_GPU=cuda YAZ_CUDA_ARCH=90,
#            into ~/.cache/yazses on that machine, outside the carried
#            folder, so a second call on a warm machine keeps it), and
#            whisper-cli with CUDA linked in (the reference); then
#            yaz-decode's final link against that machine's CPU build
#            (relink.sh: ggml-cpu compiled for its own processor), with
#            the module next to it, where yaz-decode looks
#   measure  yaz-decode devices, then scripts/bench -gpu: yaz-decode
#            next to whisper-cli of the same build on the same files and
#            generated large-v3-turbo-sized model, the GPU against the CPU of
#            the machine, the resident decoder's 3 s utterance
#   all      both (the default)
#
# Everything it finds goes to $OUT: machine.txt (nvidia-smi, cores, tool
# versions), log.txt (each stage and its time), build.txt (the end of the
# compiler's output), devices.txt, gpu-bench.md (the table), bench.log.
# Each stage has a time limit, so a call that runs out leaves what it
# measured; a second call on the same warm machine skips a finished build.
set -uo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
run=$repo/.cache/gpu-run
OUT=${OUT:-/tmp/yazses-gpu-out}
mkdir -p "$OUT"
what=${1:-all}
t0=$(date +%s)
log() { printf '%s +%ds h200: %s\n' "$(date +%T)" $(( $(date +%s) - t0 )) "$*" | tee -a "$OUT/log.txt" >&2; }
[ -f "$run/whisper.cpp.tar.gz" ] || { log "no $run: run scripts/gpu/prepare.sh on the build machine and carry .cache/gpu-run"; exit 1; }
log "commit $(cat "$run/version"), stage $what"

# nvcc and the CUDA libraries.
if ! command -v nvcc >/dev/null; then
  for d in /usr/local/cuda/bin /usr/local/cuda-*/bin /opt/cuda/bin; do
    if [ -x "$d/nvcc" ]; then PATH=$d:$PATH; break; fi
  done
fi
command -v nvcc >/dev/null || { log "no nvcc"; exit 1; }
cuda=$(cd "$(dirname "$(command -v nvcc)")/.." && pwd)
culib=$cuda/lib64
[ -d "$culib" ] || culib=$cuda/targets/x86_64-linux/lib
export LD_LIBRARY_PATH=$culib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
{
  nvidia-smi
  echo "cores: $(nproc)"
  free -g
  gcc --version | head -1
  nvcc --version | tail -2
  cmake --version | head -1
  echo "CUDA: $cuda"
} > "$OUT/machine.txt" 2>&1

# Set beforehand, the three below rehearse the run on a build machine
# with nvcc and no GPU (docs/gpu.md): its cache, its source, its nvcc's
# architecture.
export WHISPER_CACHE=${WHISPER_CACHE:-${HOME:-/root}/.cache/yazses/whisper.cpp-1.9.1}
export WHISPER_CPP_DIR=${WHISPER_CPP_DIR:-${HOME:-/root}/.cache/yazses/gpu-src}
export YAZ_CUDA_ARCH=${YAZ_CUDA_ARCH:-90} YAZ_GPU=cuda JOBS=$(nproc)
bin=$run/bin
build=$(scripts/setup-whisper.sh --build-dir) || { log "setup-whisper.sh --build-dir failed"; exit 1; }
module=$(scripts/setup-whisper.sh --cuda-module)
cbuild=$(dirname "$module")

build_stage() {
  if [ ! -f "$WHISPER_CPP_DIR/include/whisper.h" ]; then
    mkdir -p "$WHISPER_CPP_DIR"
    tar -C "$WHISPER_CPP_DIR" -xzf "$run/whisper.cpp.tar.gz" || { log "unpacking the source failed"; return 1; }
  fi
  log "building whisper.cpp (CPU in $build) and the CUDA module (sm_$YAZ_CUDA_ARCH, $cbuild) with $JOBS jobs"
  local s=$(date +%s)
  timeout 420 scripts/setup-whisper.sh > /dev/null 2>> "$OUT/log.txt"
  local rc=$?
  tail -n 40 "$cbuild.log" > "$OUT/build.txt" 2>/dev/null
  if [ $rc -ne 0 ]; then
    tail -n 20 "$build.log" >> "$OUT/build.txt" 2>/dev/null
    log "the whisper.cpp build failed or ran out of time (exit $rc) after $(( $(date +%s) - s )) s; build.txt has its end"
    return 1
  fi
  log "whisper.cpp and the CUDA module built in $(( $(date +%s) - s )) s (0 s: they were there)"
  # The reference: whisper-cli with CUDA linked in, from the module's folder.
  if ! timeout 240 cmake --build "$cbuild" -j"$JOBS" --target whisper-cli >> "$cbuild.log" 2>&1; then
    tail -n 40 "$cbuild.log" > "$OUT/build.txt"
    log "building whisper-cli with CUDA failed or ran out of time; build.txt has its end"
    return 1
  fi
  mkdir -p "$bin"
  export LIBRARY_PATH=$build/src:$build/ggml/src
  if ! YAZ_RELINK_LIBS="-fopenmp" scripts/gpu/relink.sh "$run/yaz-decode.link" "$bin/yaz-decode" 2> "$OUT/link.txt"; then
    log "linking yaz-decode failed: link.txt"
    return 1
  fi
  cp "$module" "$bin/"
  log "yaz-decode linked: $("$bin/yaz-decode" --version 2>&1)"
}

measure_stage() {
  [ -x "$bin/yaz-decode" ] && [ -f "$bin/yaz-ggml-cuda.so" ] && [ -x "$cbuild/bin/whisper-cli" ] || { log "nothing built yet: run the build stage"; return 1; }
  "$bin/yaz-decode" devices > "$OUT/devices.txt" 2>&1
  log "devices: $(tr '\n' ' ' < "$OUT/devices.txt")"
  local left=$(( 590 - ($(date +%s) - t0) ))
  if [ $left -lt 60 ]; then
    log "only $left s left in this call: run h200.sh measure in the next one"
    return 1
  fi
  log "benchmark (at most $left s): yaz-decode and whisper-cli on CUDA, large-v3-turbo-sized model"
  timeout "$left" "$run/bench" -gpu -bin "$bin" -whisper-cli "$cbuild/bin/whisper-cli" -jfk "$run/jfk.wav" \
    -work "${HOME:-/root}/.cache/yazses/gpu-bench" -threads 8 -runs 5 -cpu-runs 2 > "$OUT/gpu-bench.md" 2> "$OUT/bench.log"
  local rc=$?
  log "benchmark ended (exit $rc); gpu-bench.md holds what it measured"
  return $rc
}

case "$what" in
  build) build_stage ;;
  measure) measure_stage ;;
  all) build_stage && measure_stage ;;
  *) log "want all, build or measure"; exit 2 ;;
esac
rc=$?
log "done (exit $rc)"
exit $rc
