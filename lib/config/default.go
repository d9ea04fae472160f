package config

// DefaultTOML is a configuration file that sets every key to its default,
// each with a one-line explanation: what `yazsesd config default` prints.
// It parses to exactly Default().
func DefaultTOML() string { return defaultTOML }

const defaultTOML = `# YazSes daemon (yazsesd) configuration.
#
# File: $XDG_CONFIG_HOME/yazses/config.toml (default ~/.config/yazses/config.toml).
# Every key is optional; the values below are the defaults. Unknown keys and
# bad values are refused with their line. Reference: docs/config.md.
# Paths may use ~/, $HOME and $XDG_DATA_HOME, $XDG_CONFIG_HOME, $XDG_STATE_HOME,
# $XDG_CACHE_HOME, $XDG_RUNTIME_DIR.
#
# Reload with SIGHUP (systemctl --user reload yazsesd): [mcp], [budget], [ask],
# [dictation] (except prompt), [notify] and [audit] apply at once; [decode],
# [vad], [speak], [capture], [hotkey], [children] and dictation.prompt need a
# restart.

[mcp]
# Offer the ask_human tool to MCP clients; false: the tool is not even listed.
ask_human = false

[budget]
# Questions that may be spoken in any sliding hour, 0-60; 0 refuses every call.
ask_human_per_hour = 3

[ask]
# Longest wait a caller may ask for, seconds (1-3600). MCP hosts often time a
# call out at 60 s: raise the host's timeout too before raising this.
max_timeout_s = 45
# Wait for a call that names no timeout, seconds (1 to max_timeout_s).
default_timeout_s = 45
# Silence after speech that ends the answer, milliseconds (200-10000).
answer_silence_ms = 1200
# Longest answer recorded, seconds (1-300).
max_answer_s = 30
# Pause after the question is spoken before listening starts, ms (0-5000).
guard_ms = 300

[decode]
# Whisper ggml model file (fetch with yaz-fetch-model base.en).
model = "$XDG_DATA_HOME/yazses/models/ggml-base.en.bin"
# Spoken language code, or "auto" (multilingual models only).
language = "en"
# CPU threads for whisper, 0-64; 0: as many as there are CPUs, up to 4.
threads = 0
# Vocabulary hint for every utterance: names and words whisper should expect.
prompt = ""
# 1: greedy decoding (fastest); 2-8: beam search of that width.
beam_size = 1
# Where the model runs: "auto" (the best real GPU, else the CPU), "cpu", "gpu"
# (the best real GPU; without one, the CPU with a warning in yazsesd status)
# or "gpu:N" (N from yaz-decode devices).
device = "auto"

[vad]
# Voice detector: "auto" (Silero VAD when its model file exists, else the energy
# detector), "silero" (the model must be usable) or "energy".
engine = "auto"
# Silero VAD model file (fetch with yaz-fetch-model silero-v5.1.2).
model = "$XDG_DATA_HOME/yazses/models/ggml-silero-v5.1.2.bin"
# Speech probability that counts as speech, 0.01-0.99; higher: fewer false
# starts in noise, lower: softer speech.
threshold = 0.5

[speak]
# espeak-ng voice (espeak-ng --voices lists them), e.g. "en-us" or "en-us+f3".
voice = "en-us"
# Speaking rate in words per minute, 80-450.
rate = 170
# Output device of the voice: a playback ID from yaz-capture --list-devices; "": the default.
device = ""

[capture]
# Microphone device ID as yaz-capture lists devices; "": the default device.
device = ""
# Audio backend: "auto", "pulseaudio", "alsa" or "null".
backend = "auto"
# "on-demand": microphone open only while listening; "always": kept open for pre-roll.
mode = "on-demand"
# Audio from before hold.start kept when mode = "always", milliseconds (0-2000).
pre_roll_ms = 300

[dictation]
# Vocabulary hint for dictation only; replaces decode.prompt for holds when set.
prompt = ""
# How text is typed: "auto", "wayland", "portal", "ibus", "wtype", "x11", "xdotool",
# "ydotool", "clipboard" or "stdout". "auto" picks from the session and
# says why in yazsesd status; "portal" types on GNOME and KDE Plasma
# through the desktop's remote-desktop portal (you allow its dialog once).
# "stdout" writes what you say to yazsesd's standard output: under the systemd
# unit that is the journal, so use it only with "yazsesd run" in a terminal.
inject = "auto"
# Texts longer than this many characters are pasted (clipboard restored after); 0: never.
paste_over_chars = 3000
# Holds shorter than this produce nothing, milliseconds (0-5000).
min_utterance_ms = 300
# The most audio still recorded after hold.stop, milliseconds (0-2000); the
# tail ends as soon as the voice detector hears you stop.
tail_ms = 200
# A toggled hold (hold.toggle) ends by itself after this much silence,
# milliseconds (0: never; 300-60000).
auto_stop_ms = 0
# Decode a hold in pieces while you speak: each pause this long (milliseconds)
# ends a piece, so at release only the last one is left (0: off; 200-5000).
# Either way, with the Silero detector, the daemon decodes at each 150 ms
# pause, and a release with nothing said after it types that decode at once.
eager_pause_ms = 0
# Live text: type each piece at its pause while you still speak, into the window
# that had the focus at the first piece; nothing is ever taken back. With
# eager_pause_ms = 0 the pieces end at 300 ms pauses.
live = false
# A hold ends by itself after this many seconds, as if released (5-240).
max_hold_s = 180
# Show the text decoded so far in a hold to "yazsesd ctl watch" (a status bar or
# an overlay), on your own socket only, never logged. Off: the state carries no text.
preview = false
# Typed after each dictation, so that the next one into the same field does not
# run into it ("country. And so", not "country.And so"): spaces only; "" for none.
separator = " "
# Play a short tone (generated, through the speaker's device) when a hold starts
# listening and when it stops; never over a question being spoken.
cues = false
# A command each dictation's text goes through before it is typed, e.g.
# ["/home/ada/bin/cleanup", "--fast"]: the text on its stdin, what to type from
# its stdout; on a failure, a timeout or no output the text is typed as it was.
# [] for none.
post_process = []
# The most one post_process run may take, milliseconds (100-30000).
post_process_timeout_ms = 3000
# Exact word or phrase replacements in dictated text, applied in order
# (never to ask_human answers). None by default; add tables like these:
# [[dictation.replace]]
# from = "yaz says"
# to = "YazSes"

[hotkey]
# Listen for a push-to-talk key inside the daemon (source below).
enabled = false
# "evdev": read the keyboards (needs read access to /dev/input);
# "portal": the desktop's global-shortcuts portal (GNOME 48+, KDE Plasma,
# Hyprland): no access needed, you confirm the key in the desktop's dialog.
source = "evdev"
# Linux input key name (see /usr/include/linux/input-event-codes.h).
key = "KEY_RIGHTCTRL"
# "hold": talk while the key is held; "toggle": press to start, press to stop.
mode = "hold"
# Input device such as /dev/input/event3; "": every keyboard.
device = ""

[notify]
# Desktop notifications (listening, no text target, question waiting).
enabled = true
# Most notifications shown in any minute, 1-60.
per_minute = 6

[audit]
# Size at which $XDG_STATE_HOME/yazses/audit.jsonl is rotated, bytes (4096-1073741824).
max_bytes = 1048576
# Rotated files kept (audit.jsonl.1 ...), 0-100.
keep = 3

[children]
# Commands the daemon runs; a bare name is looked up next to yazsesd, then in PATH.
# Microphone capture.
capture = ["yaz-capture"]
# Resident speech-to-text decoder.
decode = ["yaz-decode", "serve"]
# Text-to-speech.
speak = ["yaz-speak", "--serve"]
# The interruption budget.
gate = ["yaz-gate"]
# The voice detector (Silero VAD's probabilities), when [vad] selects Silero.
vad = ["yaz-decode", "vad-stream"]
# Typing into the focused window (dictation.inject picks its route).
type = ["yaz-type", "--serve"]
`
