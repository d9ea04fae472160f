#!/usr/bin/env bash
# desk-root.sh: build a Debian 13 (trixie) root with a real desktop (GNOME
# Shell, or KWin with `kde`), the desktop portals, IBus and python3-gi GTK 3/4
# once into a cache folder that later runs (internal/testdesk) reuse.
#
# Result: $cache/desk-trixie-<hash>, a complete root file system, where
# <hash> is a short hash of the suite, the variant and the package list: a
# changed list builds a new root next to the old one. The script prints
# nothing on stdout but the root's path.
#
# One build at a time per root: the script holds an flock on $root.lock while
# it checks and builds, so a second caller (two test binaries starting at
# once) waits, then reuses what the first built. mmdebstrap builds into a
# temporary folder next to the root, renamed to the root only when complete:
# a killed build leaves a *.tmp.* folder (removed by the next build), never a
# half root taken for a finished one. Progress lines go to stderr; mmdebstrap's
# own output goes to $root.log, which a failure names (with its last lines).
#
# Needs root (mmdebstrap's root mode, and the tests chroot into it) and the
# network to a Debian mirror (DESK_MIRROR, default http://deb.debian.org/debian).
# mmdebstrap comes from the host's apt when it is missing. About 1.3 GB and
# 5 to 10 minutes on a 2-core machine.
#
# `desk-root.sh [--path] [gnome|kde]`: --path prints the root's path and
# builds nothing; gnome (the default) is GNOME Shell with its portal backend,
# kde is KWin (kwin_wayland) with xdg-desktop-portal-kde.
set -euo pipefail

SUITE=trixie
VARIANT=apt
log() { printf 'desk-root: %s\n' "$*" >&2; }

path_only=
desk=gnome
for arg in "$@"; do
  case "$arg" in
    --path) path_only=1 ;;
    gnome|kde) desk=$arg ;;
    *) log "unknown argument $arg (want --path, gnome or kde)"; exit 2 ;;
  esac
done

# Keep these lists minimal: every test that uses the desk waits for it once.
case "$desk" in
  gnome)
    PACKAGES=(
      dbus-daemon
      dbus-user-session
      gir1.2-gtk-3.0
      gir1.2-gtk-4.0
      gnome-shell
      ibus
      python3-gi
      xdg-desktop-portal
      xdg-desktop-portal-gnome
    )
    BIN=/usr/bin/gnome-shell ;;
  kde)
    PACKAGES=(
      dbus-daemon
      dbus-user-session
      gir1.2-gtk-3.0
      gir1.2-gtk-4.0
      ibus
      kwin-wayland
      python3-gi
      qt6-wayland
      xdg-desktop-portal
      xdg-desktop-portal-kde
    )
    BIN=/usr/bin/kwin_wayland ;;
esac
mirror=${DESK_MIRROR:-http://deb.debian.org/debian}

list=$(printf '%s\n' "$SUITE" "$VARIANT" "${PACKAGES[@]}" | LC_ALL=C sort)
hash=$(printf '%s' "$list" | sha256sum | cut -c1-12)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/yazses
root=$cache/desk-$SUITE-$hash

if [ -n "$path_only" ]; then echo "$root"; exit 0; fi

# A finished root has this file, written last (after the rename too, the
# rename is what makes it visible).
done_mark=$root/.yazses-desk-root
if [ -f "$done_mark" ]; then
  echo "$root"
  exit 0
fi

[ "$(id -u)" = 0 ] || { log "building the desk root needs root (mmdebstrap's root mode); run as root"; exit 1; }

mkdir -p "$cache"
exec 9<>"$root.lock"
if ! flock -n 9; then
  log "waiting for another build of $root to finish ($(tr -d '\n' < "$root.lock" 2>/dev/null || echo 'holder unknown'))"
  flock 9
  log "the other build is done; checking what it built"
fi
printf 'pid %s, %s, since %s' "$$" "$(pwd)" "$(date +%H:%M:%S)" > "$root.lock"

if [ -f "$done_mark" ]; then
  echo "$root"
  exit 0
fi

if ! command -v mmdebstrap >/dev/null; then
  log "mmdebstrap is missing: installing it with apt-get (Debian package mmdebstrap)"
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends mmdebstrap >&2 ||
    { log "apt-get install mmdebstrap failed (try apt-get update first)"; exit 1; }
fi

# Leftovers of killed builds, and a root without its mark (never across a
# mount point: a build killed on an older system may have left one).
rm -rf --one-file-system "$root".tmp.* "$root"
buildlog=$root.log
: > "$buildlog"
tmp=$root.tmp.$$
start=$(date +%s)
log "building the $desk desk: Debian $SUITE root $root from $mirror: ${PACKAGES[*]} (log: $buildlog; 5 to 10 minutes)"
# mmdebstrap's progress: one stderr line per stage it announces.
awk_lines=()
if awk -W interactive 'BEGIN { exit 0 }' </dev/null >/dev/null 2>&1; then awk_lines=(-W interactive); fi
failed() {
  log "$1; mmdebstrap's output is in $buildlog, which ends:"
  tail -n 20 "$buildlog" >&2
  rm -rf --one-file-system "$tmp"
  exit 1
}
# In a mount namespace of its own: the /proc, /dev and /sys mmdebstrap
# mounts into the root while it installs go away with it, even when it is
# killed.
unshare --mount --propagation private mmdebstrap --mode=root --variant="$VARIANT" --include="$(IFS=,; echo "${PACKAGES[*]}")" \
  "$SUITE" "$tmp" "$mirror" 2>&1 | tee -a "$buildlog" |
  awk ${awk_lines[@]+"${awk_lines[@]}"} '/^I: / { sub(/^I: /, ""); print "desk-root: " $0; fflush() }' >&2 ||
  failed "mmdebstrap failed"
[ -x "$tmp$BIN" ] && [ -x "$tmp/usr/bin/ibus-daemon" ] ||
  failed "mmdebstrap finished without $BIN or ibus-daemon in the root"
# Downloaded packages are not needed in the root.
rm -rf "$tmp"/var/cache/apt/archives/*.deb "$tmp"/var/lib/apt/lists/*_Packages
mv "$tmp" "$root"
secs=$(( $(date +%s) - start ))
size=$(du -sh "$root" | cut -f1)
date -u +%FT%TZ > "$done_mark"
printf 'build_seconds %s\nsize %s\n' "$secs" "$size" >> "$done_mark"
log "root built in $secs s, $size: $root"
echo "$root"
