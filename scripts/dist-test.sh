#!/usr/bin/env bash
# dist-test.sh TARBALL (part of make test-package): the tarball of make dist
# as a user of a distribution without dpkg uses it: unpacked, install.sh
# into a prefix, every program answers --version from there, the desktop
# entry and the user unit name the prefix's yazsesd, the man pages and the
# Silero model are there, and install.sh --uninstall leaves no file.
set -euo pipefail
tarball=$(readlink -f "${1:?usage: dist-test.sh TARBALL}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "dist-test: FAIL: $*" >&2; exit 1; }
tar -C "$work" -xzf "$tarball"
dir=$(echo "$work"/yazses-*)
prefix=$work/prefix
home=$work/home
mkdir -p "$home"
env -i HOME="$home" PATH=/usr/bin:/bin "$dir/install.sh" --prefix "$prefix" >/dev/null
for p in yaz-capture yaz-decode yaz-speak yaz-gate yazsesd yaz-mcp yaz-type yaz-fetch-model; do
  env -i HOME="$home" PATH=/usr/bin:/bin "$prefix/bin/$p" --version >/dev/null || fail "$p --version"
done
echo "ok: every program answers --version from the prefix"
grep -q "^ExecStart=$prefix/bin/yazsesd" "$prefix/lib/systemd/user/app-io.github.yazses.YazSes.service" || fail "the unit does not start $prefix/bin/yazsesd"
grep -q "^Exec=$prefix/bin/yazsesd" "$prefix/share/applications/io.github.yazses.YazSes.desktop" || fail "the desktop entry does not run $prefix/bin/yazsesd"
[ -f "$prefix/share/man/man1/yaz-decode.1.gz" ] && [ -f "$prefix/share/yazses/models/ggml-silero-v6.2.0.bin" ] || fail "the man pages or the Silero model are missing"
echo "ok: the unit and the desktop entry name the prefix's yazsesd; man pages and the Silero model are there"
env -i HOME="$home" PATH=/usr/bin:/bin "$dir/install.sh" --prefix "$prefix" --uninstall >/dev/null
left=$(find "$prefix" -type f)
[ -z "$left" ] || fail "install.sh --uninstall left: $left"
echo "ok: install.sh --uninstall leaves no file"
(cd "$(dirname "$tarball")" && sha256sum -c --quiet SHA256SUMS) || fail "SHA256SUMS does not match"
echo "ok: SHA256SUMS matches the tarball and the package"
