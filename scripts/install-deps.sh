#!/usr/bin/env bash
# install-deps.sh: install the Debian packages YazSes needs to build, run and
# test, only those that are missing. Needs root (or sudo) when anything is.
set -euo pipefail
# Each line: Debian packages | what they are for (said when one is missing).
table=$(cat <<'EOF'
cmake                                        | builds whisper.cpp
libvulkan-dev glslc spirv-headers pkg-config | whisper.cpp's Vulkan backend (scripts/setup-whisper.sh; YAZ_GPU=none skips it)
mesa-vulkan-drivers                          | lavapipe, a Vulkan driver on the CPU: the tests' Vulkan device
espeak-ng                                    | yaz-speak's voice
sox                                          | demos, test fixtures
libsox-fmt-mp3                               | the README's sox in.mp3 example (Debian's sox reads no MP3 without it)
jq                                           | the README's yaz-decode -o json | jq example
curl                                         | yaz-fetch-model downloads models
git                                          | the version of every program (scripts/version.sh), a README example
groff-base                                   | renders the man pages in the tests (make install writes them)
pulseaudio pulseaudio-utils                  | sound server (tests run a private one)
xvfb xdotool xterm x11-utils                 | typing tests under a virtual X server
x11-xserver-utils                            | cmd/yaz-type: xmodmap (Unicode with xdotool)
xclip xsel                                   | cmd/yaz-type: the X11 clipboard
openbox                                      | cmd/yaz-type: a window manager for the X11 focus tests
rxvt-unicode                                 | cmd/yaz-type: a second stock X terminal for the paste tests
sway wtype foot wl-clipboard                 | cmd/yaz-type: Wayland typing tests under headless sway
dbus-daemon dunst                            | tests only: a private session bus (internal/testbus) and a real notification server; the daemon posts notifications over D-Bus itself (godbus)
xdg-desktop-portal libxkbcommon-tools        | internal/testportal: the real portal frontend (RemoteDesktop, GlobalShortcuts) and xkbcli, the XKB oracle
linux-libc-dev                               | lib/keyname: input-event-codes.h, checked against the key table
systemd                                      | systemd-analyze verifies packaging/systemd/app-io.github.yazses.YazSes.service
npm                                          | fetches the pinned whisper.cpp source package
dpkg-dev fakeroot lintian mmdebstrap         | make deb (dpkg-shlibdeps, dpkg-deb) and make test-package (lintian, fresh Debian roots)
EOF
)
pkgs=()
declare -A why_of
while IFS='|' read -r names why; do
  for p in $names; do
    pkgs+=("$p")
    why_of[$p]=${why# }
  done
done <<<"$table"
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# A machine whose Node.js came from elsewhere already has npm.
if command -v npm >/dev/null; then
  missing=("${missing[@]/npm}")
fi
read -r -a missing <<<"${missing[*]}"
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
{
  echo "install-deps: ${#missing[@]} Debian package(s) missing, installing them with ${sudo:+sudo }apt-get:"
  for p in "${missing[@]}"; do printf '  %-26s %s\n' "$p" "${why_of[$p]}"; done
} >&2
export DEBIAN_FRONTEND=noninteractive
# Another apt may be running: a fresh machine's apt-daily or
# unattended-upgrades, or make desk beside make setup. install waits for
# the dpkg lock itself (DPkg::Lock::Timeout); update waits for no lock, so
# it is tried again while another apt holds the package lists, saying once
# who holds them. Up to 10 minutes each.
lock_wait=600
updated=
for ((i = 0; i < lock_wait; i++)); do
  if out=$($sudo apt-get update -qq 2>&1); then updated=1; break; fi
  grep -q 'Could not get lock' <<<"$out" || { echo "$out" >&2; exit 1; }
  [ "$i" -gt 0 ] || echo "install-deps: waiting for another apt to finish: $(grep -m1 'Could not get lock' <<<"$out")" >&2
  sleep 1
done
[ -n "$updated" ] || { echo "install-deps: another apt held the package lists for ${lock_wait}s: $out" >&2; exit 1; }
[ -z "$out" ] || echo "$out" >&2
$sudo apt-get -o DPkg::Lock::Timeout=$lock_wait install -y -qq --no-install-recommends "${missing[@]}" >&2
