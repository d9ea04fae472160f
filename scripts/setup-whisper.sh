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
# Result: $WHISPER_CACHE/$build/{src/libwhisper.a,src/libparakeet.a,ggml/src/libggml*.a,
# bin/whisper-cli,bin/parakeet-cli} and $WHISPER_CACHE/src (headers), where
# $build is the configuration's own folder:
#   build               the CPU backend alone
#   build-vulkan        the CPU and Vulkan backends
# and, where CUDA is built, the module $WHISPER_CACHE/$cuda/yaz-ggml-cuda.so
# (ggml's CUDA backend, which the binaries open at run time), in a folder of
# its own that names the GPU architectures it was built for:
#   build-cuda-native   the GPUs of this machine (nvidia-smi lists them)
#   build-cuda-sm90     YAZ_CUDA_ARCH=90 (H100, H200): one architecture
#   build-cuda          every architecture ggml-cuda supports (many times
#                       longer: a machine with nvcc and no GPU, asked by name)
# YAZ_GPU chooses: auto (the default) builds Vulkan where glslc, the Vulkan
# loader and headers (pkg-config vulkan) and SPIRV-Headers are installed
# (Debian: glslc libvulkan-dev spirv-headers; scripts/install-deps.sh), and
# the CUDA module where nvcc is found (on PATH or in /usr/local/cuda/bin) and
# nvidia-smi lists a GPU; none builds the CPU alone; vulkan, cuda or
# cuda,vulkan ask for those and fail when their tools are missing. Every
# configuration has the CPU backend. Vulkan is linked into the static
# libraries, and the binaries open the Vulkan loader at run time; CUDA is
# the module (internal/ggmlgpu: yaz_vulkan.c, yaz_cuda.c), so one set of
# binaries starts on any machine. `setup-whisper.sh --build-dir` prints the
# chosen folder and builds nothing; `--features` prints the backends ("cpu
# vulkan"); `--cuda-module` the module's path, or nothing. A cache
# that has some of these (an older setup built whisper only) gets the missing
# ones: cmake's own dependency check leaves what is built alone. Prints nothing
# on stdout but the cache path.
#
# One build at a time per cache: the script holds an flock on $cache.lock
# while it checks and builds, so a second run (another checkout's make demo
# while this one's make setup builds) says whom it waits for, waits, and
# then reuses what the first built. On stderr it prints a line per stage and
# the build's progress in percent; the compiler's output goes to
# $cache/build.log (build-vulkan.log ... for the others), which a failure names (with its last lines).
set -euo pipefail

WHISPER_VERSION=1.9.1
NPM_PKG=nodejs-whisper@0.3.1
NPM_TGZ=nodejs-whisper-0.3.1.tgz
NPM_SHA256=92041caf2b26c74b7f489fedf37bd093f216eebd61df512045ec2d19d0531d37

cache=${WHISPER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/yazses/whisper.cpp-$WHISPER_VERSION}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}

log() { printf 'setup-whisper: %s\n' "$*" >&2; }

# The configuration: which GPU backends, from YAZ_GPU and what is installed.
# The source's own ggml-vulkan is needed too (a WHISPER_CPP_DIR without it
# builds the CPU alone under auto).
srcdir=${WHISPER_CPP_DIR:-$cache/src}
vulkan_tools() {
  command -v glslc >/dev/null && pkg-config --exists vulkan SPIRV-Headers 2>/dev/null &&
    { [ ! -d "$srcdir" ] || [ -f "$srcdir/ggml/src/ggml-vulkan/CMakeLists.txt" ]; }
}
# nvcc: on PATH, or where NVIDIA's installer puts it.
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then PATH=/usr/local/cuda/bin:$PATH; fi
cuda_tools() { command -v nvcc >/dev/null && { [ ! -d "$srcdir" ] || [ -f "$srcdir/ggml/src/ggml-cuda/CMakeLists.txt" ]; }; }
# The NVIDIA GPUs of this machine, as the driver sees them.
# Asked once (the Makefile runs this script three times per make).
nvidia_gpu_seen=
nvidia_gpus() {
  if [ -z "$nvidia_gpu_seen" ]; then
    nvidia_gpu_seen=no
    if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then nvidia_gpu_seen=yes; fi
  fi
  [ "$nvidia_gpu_seen" = yes ]
}
gpu_vulkan=0 gpu_cuda=0 cuda_skipped=
case "${YAZ_GPU:-auto}" in
  auto)
    if vulkan_tools; then gpu_vulkan=1; fi
    # CUDA where it can be used: nvcc with no NVIDIA GPU would build every
    # architecture (an hour or more) for a module this machine cannot use.
    if cuda_tools; then
      if nvidia_gpus; then gpu_cuda=1; else cuda_skipped=1; fi
    fi ;;
  none|cpu) ;;
  *)
    IFS=', ' read -r -a want <<<"$YAZ_GPU"
    for w in "${want[@]}"; do
      case "$w" in
        vulkan) vulkan_tools || { log "YAZ_GPU=$YAZ_GPU: the Vulkan build needs glslc, libvulkan-dev and spirv-headers (scripts/install-deps.sh)"; exit 1; }; gpu_vulkan=1 ;;
        cuda) cuda_tools || { log "YAZ_GPU=$YAZ_GPU: the CUDA build needs nvcc (the CUDA toolkit) on PATH or in /usr/local/cuda/bin"; exit 1; }; gpu_cuda=1 ;;
        *) log "YAZ_GPU=$YAZ_GPU: want auto, none, vulkan, cuda or cuda,vulkan"; exit 1 ;;
      esac
    done ;;
esac
# YAZ_CUDA_ARCH (a number: 90 for an H100 or H200) builds ggml-cuda for
# that one GPU architecture; without it, for the GPUs nvidia-smi lists, or
# every architecture ggml-cuda supports where it lists none. A folder keeps
# the architectures it was configured with, so its name says which.
cuda_arch=${YAZ_CUDA_ARCH:-}
case "$cuda_arch" in
  ''|[0-9]|[0-9][0-9]|[0-9][0-9][0-9]) ;;
  *) log "YAZ_CUDA_ARCH=$cuda_arch: want the architecture's number (90 for sm_90), or nothing for this machine's GPUs"; exit 1 ;;
esac
features=cpu gpu_flags=()
bdir=build
if [ $gpu_vulkan = 1 ]; then
  features+=" vulkan"
  gpu_flags+=(-DGGML_VULKAN=ON)
  bdir+=-vulkan
fi
cuda_dir= cuda_flags=()
if [ $gpu_cuda = 1 ]; then
  features+=" cuda"
  # CUDA before 12 (Debian 12's nvcc is 11.8) cannot build whisper.cpp
  # 1.9.1's ggml-cuda for sm_90 and later: it calls Hopper's programmatic
  # launch functions, which 11.8's headers lack.
  nvcc_major=$(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9]*\)\..*/\1/p')
  old_nvcc=0
  if [ -n "$nvcc_major" ] && [ "$nvcc_major" -lt 12 ]; then old_nvcc=1; fi
  if [ -n "$cuda_arch" ]; then
    if [ $old_nvcc = 1 ] && [ "$cuda_arch" -ge 90 ]; then
      log "YAZ_CUDA_ARCH=$cuda_arch: nvcc $nvcc_major cannot build ggml-cuda for sm_$cuda_arch (whisper.cpp $WHISPER_VERSION needs CUDA 12 or later there)"
      exit 1
    fi
    cuda_dir=build-cuda-sm$cuda_arch cuda_flags=(-DCMAKE_CUDA_ARCHITECTURES="$cuda_arch")
  elif nvidia_gpus; then
    cuda_dir=build-cuda-native cuda_flags=(-DCMAKE_CUDA_ARCHITECTURES=native)
  elif [ $old_nvcc = 1 ]; then
    # ggml's own list, less 90-virtual.
    cuda_dir=build-cuda cuda_flags=(-DGGML_NATIVE=OFF "-DCMAKE_CUDA_ARCHITECTURES=50-virtual;61-virtual;70-virtual;75-virtual;80-virtual;86-real;89-real")
  else
    cuda_dir=build-cuda cuda_flags=(-DGGML_NATIVE=OFF)
  fi
fi
cuda_module=${cuda_dir:+$cache/$cuda_dir/yaz-ggml-cuda.so}
case "${1:-}" in
  --build-dir) echo "$cache/$bdir"; exit 0 ;;
  --features) echo "$features"; exit 0 ;;
  --cuda-module) echo "$cuda_module"; exit 0 ;;
  "") ;;
  *) log "unknown argument $1 (want --build-dir, --features, --cuda-module or none)"; exit 2 ;;
esac
if [ -n "$cuda_skipped" ]; then
  log "nvcc is here but nvidia-smi lists no NVIDIA GPU: the CUDA module is not built (YAZ_GPU=cuda,vulkan YAZ_CUDA_ARCH=<N> builds it for GPU architecture N)"
fi
build=$cache/$bdir

mkdir -p "$(dirname "$cache")"
exec 9<>"$cache.lock"
if ! flock -n 9; then
  log "waiting for another build of $cache to finish ($(tr -d '\n' < "$cache.lock" 2>/dev/null || echo 'holder unknown'))"
  flock 9
  log "the other build is done; checking what it built"
fi
# Who holds the lock, for a run that has to wait.
printf 'pid %s, %s, since %s' "$$" "$(pwd)" "$(date +%H:%M:%S)" > "$cache.lock"

gpu_libs_built() {
  { [ $gpu_vulkan = 0 ] || [ -f "$build/ggml/src/ggml-vulkan/libggml-vulkan.a" ]; } &&
    { [ -z "$cuda_module" ] || [ -f "$cuda_module" ]; }
}
if [ -f "$build/src/libwhisper.a" ] && [ -x "$build/bin/whisper-cli" ] && [ -f "$cache/src/include/whisper.h" ] &&
  [ -f "$build/src/libparakeet.a" ] && [ -x "$build/bin/parakeet-cli" ] && [ -f "$cache/src/include/parakeet.h" ] && gpu_libs_built; then
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
buildlog=$build.log
: > "$buildlog"
failed() {
  log "$1 failed; the compiler's output is in $buildlog, which ends:"
  tail -n 20 "$buildlog" >&2
  exit 1
}
# progress turns cmake's "[ 42%] ..." lines into a line per 10 percent of
# the library (the bulk of the work), then one line for the tools. Lines of
# the Vulkan shader generator's own small build (an ExternalProject with
# percentages of its own) and of the later targets (which count from 0
# again) are left out.
# mawk (Debian's awk) reads its input in large blocks unless -W interactive,
# which held the lines back until the build had ended; other awks take
# lines as they come.
awk_lines=()
if awk -W interactive 'BEGIN { exit 0 }' </dev/null >/dev/null 2>&1; then awk_lines=(-W interactive); fi
progress() {
  awk ${awk_lines[@]+"${awk_lines[@]}"} -v last=-1 -v lib=1 '
    /vulkan-shaders-gen/ { next }
    lib && /Built target whisper$/ {
      print "setup-whisper: compiling the tools (whisper-cli, parakeet, parakeet-cli)"; fflush(); lib = 0; next
    }
    lib && match($0, /^\[ *[0-9]+%\]/) {
      p = substr($0, RSTART + 1, RLENGTH - 3) + 0
      step = int(p / 10) * 10
      if (step > last) { printf "setup-whisper: compiling: %d%%\n", step; fflush(); last = step }
    }' >&2
}
start=$(date +%s)

# Debian 12's Vulkan headers (1.3.239) lack types ggml-vulkan uses (1.3.261
# on): vk-compat.hpp adds them, in front of the real vulkan.hpp, for this
# build alone (an include path in the environment: no cmake setting changes).
if [ $gpu_vulkan = 1 ]; then
  hv=$(sed -n 's/^#define VK_HEADER_VERSION \([0-9]*\)$/\1/p' "$(pkg-config --variable=includedir vulkan 2>/dev/null || echo /usr/include)/vulkan/vulkan_core.h" 2>/dev/null || true)
  if [ -n "$hv" ] && [ "$hv" -lt 261 ]; then
    here=$(cd "$(dirname "$0")" && pwd)
    mkdir -p "$build.compat/vulkan"
    cmp -s "$here/vk-compat.hpp" "$build.compat/vulkan/vulkan.hpp" || cp "$here/vk-compat.hpp" "$build.compat/vulkan/vulkan.hpp"
    export CPLUS_INCLUDE_PATH=$build.compat${CPLUS_INCLUDE_PATH:+:$CPLUS_INCLUDE_PATH}
  fi
fi

# Configure once: a build folder already configured from this source is used
# as it is, so adding the Parakeet targets to an older cache recompiles
# nothing of whisper's.
if grep -qxF "CMAKE_HOME_DIRECTORY:INTERNAL=$src" "$build/CMakeCache.txt" 2>/dev/null; then
  log "building the missing whisper.cpp $WHISPER_VERSION targets in $build with $jobs jobs ($features; log: $buildlog)"
else
  log "configuring whisper.cpp $WHISPER_VERSION in $build (log: $buildlog)"
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DWHISPER_BUILD_TESTS=OFF -DWHISPER_BUILD_EXAMPLES=ON -DWHISPER_SDL2=OFF ${gpu_flags[@]+"${gpu_flags[@]}"} >>"$buildlog" 2>&1 || failed "configuring whisper.cpp"
  case "$features" in
    *vulkan*) log "compiling whisper.cpp $WHISPER_VERSION ($features) with $jobs jobs (the Vulkan shaders and backend: about 10 minutes on a 2-core machine shared with other builds, and up to 6 GB of memory)" ;;
    *) log "compiling whisper.cpp $WHISPER_VERSION with $jobs jobs (3 minutes on an idle 2-core machine, 8 on a busy one)" ;;
  esac
fi
cmake --build "$build" -j"$jobs" --target whisper whisper-cli parakeet parakeet-cli 2>&1 |
  tee -a "$buildlog" | progress || failed "building whisper.cpp"

# The CUDA module: ggml-cuda alone, in a folder of its own (position-
# independent, for a shared object), linked into yaz-ggml-cuda.so against
# the CUDA runtime, cuBLAS and the driver's libcuda.so.1 (through the
# toolkit's stub at link time). Everything it needs of ggml itself is left
# to the program that opens it, which exports it; two symbols are exported:
# ggml_backend_cuda_reg and yaz_ggml_cuda_source, the ggml version the
# program checks before it trusts the module with its structures.
if [ -n "$cuda_module" ] && [ ! -f "$cuda_module" ]; then
  cbuild=$cache/$cuda_dir
  cudalog=$cbuild.log
  : > "$cudalog"
  buildlog=$cudalog
  if ! grep -qxF "CMAKE_HOME_DIRECTORY:INTERNAL=$src" "$cbuild/CMakeCache.txt" 2>/dev/null; then
    log "configuring ggml's CUDA backend in $cbuild (log: $cudalog)"
    cmake -S "$src" -B "$cbuild" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
      -DWHISPER_BUILD_TESTS=OFF -DWHISPER_BUILD_EXAMPLES=ON -DWHISPER_SDL2=OFF -DGGML_CUDA=ON "${cuda_flags[@]}" >>"$cudalog" 2>&1 ||
      failed "configuring ggml's CUDA backend"
  fi
  log "compiling ggml's CUDA backend ($cuda_dir) with $jobs jobs: each GPU architecture takes about 40 minutes on a 2-core machine"
  cstart=$(date +%s)
  cmake --build "$cbuild" -j"$jobs" --target ggml-cuda 2>&1 | tee -a "$cudalog" | progress || failed "building ggml's CUDA backend"
  # The CUDA libraries CMake found for ggml-cuda (Debian puts them in the
  # system's folder, NVIDIA's installer in /usr/local/cuda/lib64, which the
  # module then names as its run path); the driver's is the toolkit's stub.
  culibs=()
  for v in cudart cublas cublasLt cuda_driver; do
    f=$(sed -n "s/^CUDA_${v}_LIBRARY:FILEPATH=//p" "$cbuild/CMakeCache.txt")
    [ -n "$f" ] && [ -f "$f" ] || { log "CMake found no CUDA library $v (CUDA_${v}_LIBRARY in $cbuild/CMakeCache.txt)"; exit 1; }
    culibs+=("$f")
  done
  rpath=()
  culib=$(dirname "${culibs[0]}")
  case "$culib" in /usr/lib|/usr/lib64|/usr/lib/*-linux-gnu) ;; *) rpath=(-Wl,-rpath,"$culib") ;; esac
  ggml_version=$(sed -n 's/^set(GGML_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\))$/\2/p' "$src/ggml/CMakeLists.txt" | paste -sd.)
  printf '%s\n' "const char *yaz_ggml_cuda_source(void) { return \"ggml $ggml_version\"; }" > "$cbuild/yaz-ggml-cuda-source.c"
  printf '%s\n' '{ global: ggml_backend_cuda_reg; yaz_ggml_cuda_source; local: *; };' > "$cbuild/yaz-ggml-cuda.map"
  g++ -shared -fPIC -o "$cuda_module.tmp" -x c "$cbuild/yaz-ggml-cuda-source.c" -x none \
    -Wl,--whole-archive "$cbuild/ggml/src/ggml-cuda/libggml-cuda.a" -Wl,--no-whole-archive \
    -Wl,--version-script="$cbuild/yaz-ggml-cuda.map" -Wl,-Bsymbolic ${rpath[@]+"${rpath[@]}"} \
    "${culibs[@]}" -lpthread -ldl >>"$cudalog" 2>&1 || failed "linking $cuda_module"
  mv "$cuda_module.tmp" "$cuda_module"
  log "ggml's CUDA backend built in $(( $(date +%s) - cstart )) s: $cuda_module"
fi
log "whisper.cpp $WHISPER_VERSION built in $(( $(date +%s) - start )) s: $build ($features)"
echo "$cache"
