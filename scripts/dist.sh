#!/usr/bin/env bash
# dist.sh PKG (make dist): the files of the Debian package PKG as
# dist/yazses-<version>-linux-<arch>.tar.gz, for distributions without dpkg,
# with install.sh, and dist/SHA256SUMS over the tarball and the package.
#
#   tar xzf yazses-*.tar.gz && cd yazses-* && ./install.sh            # into ~/.local
#   sudo ./install.sh --prefix /usr/local                               # for everyone
#   ./install.sh --uninstall                                             # takes it out again
#
# The tarball's programs are the package's (the same build); what they need
# at run time is listed in its README (espeak-ng, glibc 2.34 or later,
# libstdc++, libgomp, PulseAudio or ALSA).
set -euo pipefail
cd "$(dirname "$0")/.."
pkg=$(readlink -f "${1:?usage: dist.sh PKG}")
out=$(dirname "$pkg")
version=$(dpkg-deb -f "$pkg" Version)
arch=$(dpkg-deb -f "$pkg" Architecture)
name=yazses-$version-linux-$arch
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dpkg-deb -x "$pkg" "$work/x"
top=$work/$name
mkdir -p "$top"
mv "$work/x/usr" "$top/files"
cat > "$top/README" <<EOF
YazSes $version for Linux ($arch): the programs of the Debian package, for
distributions without dpkg.

  ./install.sh                     into ~/.local (the user unit into ~/.config/systemd/user)
  sudo ./install.sh --prefix /usr/local
  ./install.sh --uninstall         (with the same --prefix) takes it out again

Needed at run time: glibc 2.34 or later, libstdc++ and libgomp (GCC's),
espeak-ng (speech), libpulse or ALSA (audio). Then:

  yaz-fetch-model base.en
  systemctl --user daemon-reload
  systemctl --user enable --now app-io.github.yazses.YazSes.service
EOF
cat > "$top/install.sh" <<'EOF'
#!/bin/sh
# install.sh [--prefix DIR] [--uninstall]: YazSes's files into DIR
# (default ~/.local), with the paths inside the desktop entry and the user
# unit set to DIR's programs.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
prefix=$HOME/.local
uninstall=
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix=$2; shift 2 ;;
    --prefix=*) prefix=${1#--prefix=}; shift ;;
    --uninstall) uninstall=1; shift ;;
    -h|--help) sed -n '2,4p' "$0"; exit 0 ;;
    *) echo "install.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
case "$prefix" in /*) ;; *) echo "install.sh: --prefix must be an absolute path" >&2; exit 2 ;; esac
if [ "$prefix" = "$HOME/.local" ]; then unitdir=${XDG_CONFIG_HOME:-$HOME/.config}/systemd/user; else unitdir=$prefix/lib/systemd/user; fi
files=$(cd "$here/files" && find . -type f | sed 's|^\./||')
for f in $files; do
  case "$f" in
    lib/systemd/user/*) dest=$unitdir/${f#lib/systemd/user/} ;;
    *) dest=$prefix/$f ;;
  esac
  if [ -n "$uninstall" ]; then
    rm -f "$dest"
    continue
  fi
  mkdir -p "$(dirname "$dest")"
  case "$f" in
    share/applications/*.desktop|lib/systemd/user/*)
      sed "s#/usr/bin/#$prefix/bin/#g" "$here/files/$f" > "$dest.tmp" && chmod 0644 "$dest.tmp" && mv "$dest.tmp" "$dest" ;;
    *)
      cp "$here/files/$f" "$dest.tmp" && chmod "$( [ -x "$here/files/$f" ] && echo 0755 || echo 0644 )" "$dest.tmp" && mv "$dest.tmp" "$dest" ;;
  esac
done
if [ -n "$uninstall" ]; then
  echo "install.sh: removed YazSes from $prefix (your ~/.config/yazses and models stay)"
else
  echo "install.sh: installed YazSes into $prefix; the programs are in $prefix/bin"
  case ":$PATH:" in *":$prefix/bin:"*) ;; *) echo "install.sh: $prefix/bin is not on your PATH" ;; esac
fi
EOF
chmod 0755 "$top/install.sh"
tar -C "$work" --owner=0 --group=0 --numeric-owner --sort=name -czf "$out/$name.tar.gz" "$name"
(cd "$out" && sha256sum "$(basename "$pkg")" "$name.tar.gz" > SHA256SUMS)
echo "$out/$name.tar.gz"
