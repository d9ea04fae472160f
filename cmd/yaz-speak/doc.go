// Command yaz-speak speaks text offline, with espeak-ng.
//
// # Synopsis
//
//	yaz-speak [flags] TEXT...
//	yaz-speak [flags] < lines.txt
//	yaz-speak -o FILE|- [-f raw|wav] [flags] [TEXT...]
//	yaz-speak --serve [flags]
//
// # Description
//
// With TEXT arguments, yaz-speak joins them with spaces and speaks them as one
// utterance. Without arguments it reads stdin and speaks each line as one
// utterance, in order, until EOF; blank lines are skipped. With no arguments
// and stdin a terminal it refuses to run (exit 2) rather than wait silently.
//
// Text is untrusted: control characters (C0, C1, DEL and the bidirectional
// controls U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069) are
// stripped, line breaks and tabs become spaces, and an utterance is cut to
// 4000 characters. Nothing else is changed. The text reaches espeak-ng on its
// stdin, never on a command line or through a shell, so a text such as
// "--help" is spoken, not obeyed. Note that espeak-ng itself reads [[...]] as
// phoneme codes; that only changes pronunciation.
//
// By default the audio is played on the sound device and each utterance is
// played to its end before the next one starts. With --output (-o) it is written
// instead, as the YazSes wire format (16 000 Hz, mono, signed 16-bit
// little-endian, no header) or as a WAV file: a FILE whose name ends in
// .wav (any case) is one without asking (--format auto, the default), and
// --format wav makes any output one (--format raw with a .wav name is
// refused rather than give a WAV name to headerless PCM). On stdout
// (--out -) only audio is written; with several utterances from stdin a WAV
// stream carries the streaming header (sizes 0xFFFFFFFF), a WAV file gets its
// real sizes when it is closed. For example:
//
//	yaz-speak -o - "hello" | yaz-decode
//	yaz-speak -o hello.wav "hello"
//
// Diagnostics go to stderr (log/slog). No log line or error message carries
// the text being spoken.
//
// # Flags
//
//	--voice=NAME         espeak-ng voice (default en-us; $YAZ_VOICE);
//	                     espeak-ng --voices lists them
//	--rate=WPM           speed in words per minute, 80-450 (default 170;
//	                     $YAZ_RATE)
//	-o, --output=FILE|-  write audio to FILE, or to stdout for "-", instead
//	                     of playing it
//	-f, --format=FMT     format of --output: auto (the default: wav for a
//	                     FILE ending in .wav, else raw), raw or wav; only
//	                     with --output
//	--backend=NAME       playback backend: auto, pulseaudio, alsa or null
//	                     (default auto; $YAZ_AUDIO_BACKEND)
//	-d, --device=DEVICE  playback device, an ID or part of its name (default:
//	                     the system's default device; $YAZ_PLAYBACK_DEVICE)
//	--serve              supervised mode, see below
//	--espeak=PROGRAM     the espeak-ng program (default espeak-ng;
//	                     $YAZ_ESPEAK)
//	--log-level=LEVEL    debug, info, warn or error (default info;
//	                     $YAZ_LOG_LEVEL)
//	--log-format=FORMAT  text or json (default text; $YAZ_LOG_FORMAT)
//	--version            print "yaz-speak VERSION" and exit
//	-h, --help           print help and exit
//
// --output, --format and --serve choose what a run does and have no environment
// variable on purpose: a setting left in the environment never silently
// turns playback into a file or a daemon.
//
// # Supervised mode
//
// With --serve, yaz-speak is the speech child of yazsesd (docs/design.md,
// "Supervised speak"). Requests come on stdin, one JSON object per line:
//
//	{"id":"q1","text":"An MCP client asks: shall I deploy?"}
//
// Events go to stdout, one compact JSON object per line, each written and
// flushed at once:
//
//	{"id":"q1","event":"started","audible":true,"audio_ms":2350}
//	{"id":"q1","event":"done","audible":true}
//
// Requests are handled one at a time, in order. "started" is sent only once
// the first audio buffer has been handed to the output device; its
// "audio_ms" is the length of the utterance. Handed over is not heard: the
// sound server may hold the audio back (an idle PulseAudio null sink starts
// playing about 1.9 s later), so "started" plus "audio_ms" is not when
// playback ends. "done" is: it is sent as soon as the device has played the
// last sample, measured from the device's own requests for data (with
// PulseAudio, once the server has asked for a full stream buffer of silence
// after the last sample; the buffer's size is what it took before the
// stream started), and before the device is closed, which takes a while
// longer. A reader that must not hear the utterance (yazsesd listening for
// the answer to a question) starts after "done". A request that
// cannot be spoken in full ends with "failed" instead of "done": with
// "audible":false only when no sample reached the device (a malformed request,
// no text after sanitizing, espeak-ng failing, the device failing to open, a
// skip before playback), otherwise with "audible":true after its "started". A
// line that is not a request (not JSON, no string "id" or "text", longer than
// 1 MiB) gets a "failed" event with its id when the id can be read, else with
// "id":""; blank lines are ignored; the server then goes on with the next
// line.
//
// A request may name a sound cue instead of a text (yazsesd's
// dictation.cues):
//
//	{"id":"c1","cue":"start"}
//
// "start" is an 880 Hz tone and "end" a 660 Hz one, each 80 ms at a third
// of full scale with a 10 ms fade in and out, generated in code (never a
// recording, never espeak-ng), played and reported as an utterance is; an
// unknown cue gets "failed" with "audible":false.
//
// Control: SIGUSR1 skips the utterance in progress (it ends with "failed"; a
// SIGUSR1 while idle is ignored). EOF on stdin lets the current utterance
// finish, then yaz-speak exits 0. SIGINT or SIGTERM stops playback at once,
// sends "failed" for the utterance in progress and exits 0. There is no
// cancel request on stdin.
//
// Readiness: when $YAZ_READY_FD holds a file descriptor number, yaz-speak
// writes a newline to it and closes it once it takes requests (after checking that
// espeak-ng is installed).
//
// # Signals
//
// SIGINT and SIGTERM stop playback or output at once and exit 0; with --out
// only whole samples are written. A closed stdout (EPIPE) also ends the run
// with exit 0.
//
// # Exit status
//
//	0  success, or stopped by SIGINT/SIGTERM, or stdout closed by its reader
//	1  runtime failure: espeak-ng missing or failing, the sound device, a
//	   file that cannot be written
//	2  usage error: bad flags (such as --format mp3), no text with stdin a
//	   terminal, --format wav without --out, --format raw with a .wav
//	   FILE, --serve with text or --out
//
// # Files
//
// The file given to --out. espeak-ng's voices are its own
// (/usr/share/espeak-ng-data). The sound server (PulseAudio or PipeWire's
// pulse server) or ALSA chooses the default device.
//
// # Examples
//
// Speak a sentence, then each line of a file:
//
//	yaz-speak "The build is green."
//	yaz-speak --voice en-gb --rate 200 < notes.txt
//
// Write a WAV file, or pipe speech into the decoder (a round trip):
//
//	yaz-speak -o hello.wav "hello"
//	yaz-speak -o - -f wav "hello" > hello-stream.wav
//	yaz-speak -o - "hello" | yaz-decode
//
// --out, the old name of --output, still works.
package main
