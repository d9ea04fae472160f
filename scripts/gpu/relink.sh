#!/bin/sh
# relink.sh BUNDLE OUTPUT: the final link that scripts/gpu/extld.sh kept,
# done here: cc with the kept arguments, the libraries found through
# LIBRARY_PATH (the whisper.cpp build of this machine, the CUDA libraries),
# and whisper.cpp's static libraries once more in a group at the end, so
# the order in which Go listed each package's flags does not matter (ggml's
# backend registry refers to the GPU backend's library, which a package
# listed earlier may have named).
set -eu
bundle=$(cd "$1" && pwd)
out=$2
set --
while IFS= read -r a; do
  case "$a" in
    @OUTPUT@) a=$out ;;
    @BUNDLE@/*) a=$bundle/${a#@BUNDLE@/} ;;
  esac
  set -- "$@" "$a"
done < "$bundle/args"
extra=${YAZ_RELINK_LIBS:-}
# shellcheck disable=SC2086 # YAZ_RELINK_LIBS is a list of flags
exec "${CC:-gcc}" "$@" -Wl,--start-group -lwhisper -lparakeet -lggml -lggml-cpu -lggml-base $extra -Wl,--end-group -lstdc++ -lm -ldl -lpthread
