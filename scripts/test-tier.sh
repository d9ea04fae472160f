#!/usr/bin/env bash
# test-tier.sh TIER: the Go packages of a test tier, one per line.
#
#   short     Go alone: tests that start no server, link no C library,
#             build no program, run no tool and read no model
#   programs  the rest that needs no desktop: whisper.cpp (cgo), the real
#             programs built and run, the Silero model, espeak-ng, man
#   desktop   Xvfb, sway, PulseAudio, D-Bus, the desktop portal and the
#             real desks: typing, notifications, audio devices, the
#             programs together end to end
#
# Every package is in exactly one tier (test/deps TestTiersCoverAll).
set -euo pipefail
cd "$(dirname "$0")/.."
desktop='/cmd/yaz-type/internal/(inject|portal|xkb|wayland|sway|x11|xconn|xdotool|ibus)$|/cmd/yazsesd/internal/(shortcut|notify)$|/internal/test(x|portal|sway|bus|notify|desk)$|/lib/(xdp|audio|vad)$|/cmd/yaz-capture$|/cmd/yaz-speak$|/test/(e2e|adversarial)$'
programs='/cmd/yaz-decode|/internal/(ggmlgpu|testbin|testvad|testdaemon|testmodel)$|/scripts/|/test/(deps|readme|scripts)$|/cmd/yaz-mcp(/internal/localdecode)?$|/cmd/yaz-gate$|/cmd/yazsesd$|/cmd/yaz-type$|/cmd/yazsesd/internal/(vadlink|sdnotify)$|/lib/(config|tts|cli)$|/cmd/yaz-capture/internal/capcmd$'
all=$(go list ./...)
case "${1:-}" in
  short) grep -vE "$desktop|$programs" <<<"$all" ;;
  programs) grep -vE "$desktop" <<<"$all" | grep -E "$programs" ;;
  desktop) grep -E "$desktop" <<<"$all" ;;
  *) echo "usage: $0 short|programs|desktop" >&2; exit 2 ;;
esac
