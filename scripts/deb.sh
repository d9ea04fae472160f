#!/usr/bin/env bash
# deb.sh (make deb): build dist/yazses_<version>_<arch>.deb from the programs
# `make build` put in $BIN, with Debian's own tools (dpkg-deb,
# dpkg-shlibdeps): a staged `make install` with PREFIX=/usr (programs, man
# pages, bash completion, the desktop entry, the systemd user unit under
# /usr/lib/systemd/user), the reference configuration in /usr/share/yazses,
# the Silero VAD model in /usr/share/yazses/models (so the trained detector
# works with no download; the speech models stay a download:
# yaz-fetch-model), the copyright of everything linked in, and the
# changelogs.
#
# Dependencies are computed where they can be (dpkg-shlibdeps on the cgo
# programs); what the programs open at run time (espeak-ng, the audio
# libraries miniaudio loads, the Vulkan loader) is named here.
#
# The Debian version comes from scripts/version.sh: v0.1.0 -> 0.1.0,
# v0.1.0-3-gabc1234 -> 0.1.0+git3.gabc1234, no tag -> 0~dev+git.abc1234
# ("-dirty" adds .dirty). Prints the package's path on stdout.
#
#   scripts/deb.sh                 # BIN=bin VAD_MODEL=<the test models' Silero>
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

log() { printf 'deb: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

BIN=${BIN:-$repo/bin}
OUT=${OUT:-$repo/dist}
VERSION=${VERSION:-$(scripts/version.sh)}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/yazses
VAD_MODEL=${VAD_MODEL:-$cache/test-models/ggml-silero-v6.2.0.bin}
VAD_SHA256=2aa269b785eeb53a82983a20501ddf7c1d9c48e33ab63a41391ac6c9f7fb6987
PROGRAMS=(yaz-capture yaz-decode yaz-speak yaz-gate yazsesd yaz-mcp yaz-type)

for t in dpkg-deb dpkg-shlibdeps fakeroot; do
  command -v "$t" >/dev/null || die "$t is missing (apt install dpkg-dev fakeroot)"
done
for p in "${PROGRAMS[@]}"; do
  [ -x "$BIN/$p" ] || die "$BIN/$p is missing: run make build first"
done
[ -f "$VAD_MODEL" ] || die "the Silero model $VAD_MODEL is missing: run make setup (or set VAD_MODEL)"
echo "$VAD_SHA256  $VAD_MODEL" | sha256sum -c --quiet - >/dev/null ||
  die "$VAD_MODEL is not the pinned ggml-silero-v6.2.0.bin (sha256 $VAD_SHA256)"

# The Debian version.
debver() {
  local v=${1#v} dirty=
  case "$v" in *-dirty) v=${v%-dirty}; dirty=.dirty ;; esac
  case "$v" in
    0.0.0-dev+*) echo "0~dev+git.${v#0.0.0-dev+}$dirty" ;;
    0.0.0-dev) echo "0~dev$dirty" ;;
    *-*-g*) local base=${v%%-*} rest=${v#*-}; echo "$base+git${rest%%-*}.${rest#*-}$dirty" ;;
    *) echo "$v$dirty" ;;
  esac
}
version=$(debver "$VERSION")
arch=$(dpkg --print-architecture)
pkg=yazses_${version}_${arch}.deb
log "yazses $version ($VERSION) for $arch"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/root
mkdir -p "$root"

# The files, as make install puts them under /usr.
make -s --no-print-directory install DESTDIR="$root" PREFIX=/usr BIN="$BIN" VERSION="$VERSION" \
  UNITDIR=/usr/lib/systemd/user CONFDIR=/usr/share/yazses BASHCOMP_LOADER=/dev/null >/dev/null
# The reference configuration is data, readable by all (make install makes
# a user's own one private).
chmod 0755 "$root/usr/share/yazses"
chmod 0644 "$root/usr/share/yazses/config.toml"
install -D -m 0644 "$VAD_MODEL" "$root/usr/share/yazses/models/ggml-silero-v6.2.0.bin"
# The CUDA module (built only where nvcc is) goes in a package of its own,
# yazses-cuda, which depends on this one's exact version.
cuda=
if [ -f "$root/usr/lib/yazses/yaz-ggml-cuda.so" ]; then
  cuda=$work/cuda
  install -D -m 0644 "$root/usr/lib/yazses/yaz-ggml-cuda.so" "$cuda/usr/lib/yazses/yaz-ggml-cuda.so"
  rm -f "$root/usr/lib/yazses/yaz-ggml-cuda.so"
  rmdir "$root/usr/lib/yazses" 2>/dev/null || true
fi
gzip -9n "$root"/usr/share/man/man1/*.1

doc=$root/usr/share/doc/yazses
install -d "$doc"
gzip -9nc CHANGELOG.md > "$doc/changelog.gz"
date=$(git log -1 --format=%aD 2>/dev/null || date -R)
printf 'yazses (%s) unstable; urgency=medium\n\n  * Built from YazSes %s.\n  * What changed for users is in changelog.gz.\n\n -- The YazSes developers <yazses@users.noreply.github.com>  %s\n' \
  "$version" "$VERSION" "$date" | gzip -9n > "$doc/changelog.Debian.gz"
scripts/deb-copyright.sh "$BIN" > "$doc/copyright"

# Dependencies: what the cgo programs link, from dpkg-shlibdeps.
mkdir -p "$work/src/debian"
printf 'Source: yazses\n\nPackage: yazses\nArchitecture: any\n' > "$work/src/debian/control"
shlibs=$(cd "$work/src" && dpkg-shlibdeps -O -e"$root/usr/bin/yaz-decode" -e"$root/usr/bin/yaz-capture" -e"$root/usr/bin/yaz-speak" \
  -e"$root/usr/bin/yazsesd" -e"$root/usr/bin/yaz-mcp" -e"$root/usr/bin/yaz-type" -e"$root/usr/bin/yaz-gate" 2>/dev/null |
  sed -n 's/^shlibs:Depends=//p')
[ -n "$shlibs" ] || die "dpkg-shlibdeps found no libraries"

size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
mkdir -p "$root/DEBIAN"
cat > "$root/DEBIAN/control" <<EOF
Package: yazses
Version: $version
Architecture: $arch
Maintainer: The YazSes developers <yazses@users.noreply.github.com>
Installed-Size: $size
Depends: $shlibs, espeak-ng, libpulse0 | libasound2
Recommends: pulseaudio-utils | pipewire-pulse, libvulkan1, mesa-vulkan-drivers, xdg-desktop-portal
Suggests: ibus, ydotool, bash-completion, yazses-cuda
Section: sound
Priority: optional
Homepage: https://github.com/yazses/yazses
Description: offline voice layer: speech to text and text to speech on your machine
 YazSes turns speech into text and text into speech entirely on your own
 machine, with whisper.cpp (Whisper and Parakeet models) and espeak-ng, as
 small programs that work in shell pipelines (yaz-capture | yaz-decode),
 a push-to-talk dictation daemon (yazsesd) that types into the focused
 window on X11, wlroots, GNOME and KDE, and an MCP server (yaz-mcp) for
 coding agents.
 .
 The Silero voice-activity model is included; speech models are fetched
 with yaz-fetch-model (base.en, 142 MiB, is the default).
EOF
(cd "$root" && find usr -type f -print0 | sort -z | xargs -0 md5sum) > "$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"
find "$root" -type d -exec chmod 0755 {} +

mkdir -p "$OUT"
fakeroot dpkg-deb --build -Zxz --root-owner-group "$root" "$OUT/$pkg" >/dev/null
if [ -n "$cuda" ]; then
  cpkg=yazses-cuda_${version}_${arch}.deb
  install -d "$cuda/usr/share/doc/yazses-cuda" "$cuda/DEBIAN"
  cp "$doc/copyright" "$cuda/usr/share/doc/yazses-cuda/copyright"
  cp "$doc/changelog.Debian.gz" "$cuda/usr/share/doc/yazses-cuda/changelog.Debian.gz"
  cshlibs=$(cd "$work/src" && dpkg-shlibdeps -O --ignore-missing-info -e"$cuda/usr/lib/yazses/yaz-ggml-cuda.so" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
  {
    printf 'Package: yazses-cuda\nVersion: %s\nArchitecture: %s\n' "$version" "$arch"
    printf 'Maintainer: The YazSes developers <yazses@users.noreply.github.com>\n'
    printf 'Installed-Size: %s\n' "$(du -sk --exclude=DEBIAN "$cuda" | cut -f1)"
    printf 'Depends: yazses (= %s)%s\n' "$version" "${cshlibs:+, $cshlibs}"
    printf 'Section: sound\nPriority: optional\nHomepage: https://github.com/yazses/yazses\n'
    printf 'Description: offline voice layer: whisper.cpp on NVIDIA GPUs for YazSes\n'
    printf ' The CUDA module that yaz-decode opens when it is installed and an NVIDIA\n'
    printf ' GPU with its driver is there (decode.device = "gpu"). Without it YazSes\n'
    printf ' decodes on the CPU or through Vulkan.\n'
  } > "$cuda/DEBIAN/control"
  (cd "$cuda" && find usr -type f -print0 | sort -z | xargs -0 md5sum) > "$cuda/DEBIAN/md5sums"
  find "$cuda" -type d -exec chmod 0755 {} +
  fakeroot dpkg-deb --build -Zxz --root-owner-group "$cuda" "$OUT/$cpkg" >/dev/null
  log "built $OUT/$cpkg (the CUDA module)"
fi
log "built $OUT/$pkg ($(du -h "$OUT/$pkg" | cut -f1), installed $size KiB); depends: $shlibs, espeak-ng, libpulse0 | libasound2"
echo "$OUT/$pkg"
