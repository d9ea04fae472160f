#!/bin/sh
# extld.sh: the C linker for `go build -ldflags=-linkmode=external
# -extld=scripts/gpu/extld.sh` when the program's final link must happen
# on another machine (scripts/gpu/prepare.sh: yaz-decode with the CUDA
# backend, whose libraries are built on the GPU machine). Every call is
# passed to cc (Go probes the linker's flags), except the final link of
# the Go program (the call with go.o): its objects are copied into
# $YAZ_LINK_BUNDLE and its arguments written to $YAZ_LINK_BUNDLE/args, one
# a line, each object as @BUNDLE@/NAME and the output as @OUTPUT@, for
# scripts/gpu/relink.sh; the program go build expects is left empty.
set -eu
final=
for a in "$@"; do
  case "$a" in
    */go.o) final=1 ;;
    @*) echo "extld.sh: a response file ($a): not handled" >&2; exit 1 ;;
  esac
done
[ -n "$final" ] || exec "${YAZ_LINK_CC:-gcc}" "$@"
bundle=${YAZ_LINK_BUNDLE:?set YAZ_LINK_BUNDLE}
mkdir -p "$bundle"
: > "$bundle/args"
out= next=
for a in "$@"; do
  if [ "$next" = o ]; then
    out=$a next=
    printf '%s\n' "@OUTPUT@" >> "$bundle/args"
    continue
  fi
  case "$a" in
    -o) next=o; printf '%s\n' "-o" >> "$bundle/args" ;;
    *.o)
      name=$(basename "$a")
      cp "$a" "$bundle/$name"
      printf '%s\n' "@BUNDLE@/$name" >> "$bundle/args" ;;
    *) printf '%s\n' "$a" >> "$bundle/args" ;;
  esac
done
[ -n "$out" ] && : > "$out"
