#!/bin/sh
# version.sh: the version of this checkout, printed once; the Makefile passes
# it to every binary (lib/version) and into yaz-fetch-model.
#   `git describe --tags --dirty` when the history has a tag (v1.2.0,
#   v1.2.0-3-g02d05dd, v1.2.0-dirty); else 0.0.0-dev+<short commit>[-dirty];
#   0.0.0-dev outside a git checkout (a tarball).
cd "$(dirname "$0")/.." || exit 1
git describe --tags --dirty 2>/dev/null && exit 0
c=$(git describe --always --dirty 2>/dev/null) && { echo "0.0.0-dev+$c"; exit 0; }
echo 0.0.0-dev
