// Command yaz-capture records the microphone as raw PCM on stdout.
//
// # Synopsis
//
//	yaz-capture [flags] | yaz-decode       record until SIGINT/SIGTERM
//	yaz-capture --seconds 5 --format wav > rec.wav
//	yaz-capture --file speech.wav | …      replay a file in real time
//	yaz-capture --list-devices             show the devices
//
// # Description
//
// The output is the YazSes wire format: signed 16-bit little-endian samples,
// 16 000 Hz, mono, no header (see lib/pcm); miniaudio converts from whatever
// the device runs at. Only audio goes to stdout; logs go to stderr.
//
// With --format wav a RIFF/WAV header comes first. On a pipe it is a stream
// header (sizes 0xFFFFFFFF, as sox and ffmpeg write); on a regular file the
// sizes are patched at the end, also after SIGINT or SIGTERM. A file opened
// for appending (>>) keeps the stream header.
//
// With --file PATH no device is opened: the file (a WAV file in any encoding,
// rate and channel count lib/wav reads, converted to 16 kHz mono; or raw
// wire-format PCM named *.pcm or *.raw) is written out in real time, in
// chunks of 40 ms, as if it were being spoken into the microphone, and the
// program ends when the file does. Files longer than an hour are refused.
//
// # Flags
//
//	-d, --device ID|NAME    capture device: an ID from --list-devices, or a
//	                        case-insensitive part of its name; empty for the
//	                        default (env YAZ_CAPTURE_DEVICE)
//	    --list-devices      print capture and playback devices as a table
//	                        (KIND, DEFAULT, ID, NAME) on stdout and exit
//	    --backend NAME      auto (PulseAudio, then ALSA, then JACK), pulseaudio,
//	                        alsa, or null: a silent device that runs in real
//	                        time, for tests (env YAZ_AUDIO_BACKEND)
//	-s, --seconds N         stop after N seconds of audio: exactly N*16000
//	                        samples are written; 0 (default) records until a
//	                        signal
//	-f, --format raw|wav    output format
//	    --file PATH         replay PATH instead of recording
//	    --log-level LEVEL   debug, info, warn, error (env YAZ_LOG_LEVEL)
//	    --log-format FMT    text or json (env YAZ_LOG_FORMAT)
//	    --version           print "yaz-capture VERSION" and exit
//
// # Signals
//
// SIGINT and SIGTERM stop the recording; what was captured is
// flushed (whole samples only) and the exit status is 0. A reader that goes
// away (EPIPE, as in yaz-capture | head -c 100) is a clean end too.
//
// # Supervision
//
// If YAZ_READY_FD names a file descriptor, a newline is written
// to it and it is closed once the device delivers audio (or, with --file,
// at once). A device that stops delivering audio for 4 s (unplugged, sound
// server gone) ends the program with status 1. Samples the program could not
// write in time (a stalled reader, more than about 8 s behind) are dropped
// and counted in a warning on stderr.
//
// # Exit status
//
// 0 success (including a signal or a closed stdout); 1 runtime failure (no
// such device, permission denied, no sound server, unreadable file); 2
// usage error (bad flag, stdout is a terminal).
//
// # Files
//
// yaz-capture reads no file of its own: only the one given to --file. The
// sound server (PulseAudio or PipeWire's pulse server) or ALSA chooses the
// default device.
//
// # Examples
//
// Dictate into a pipe until Ctrl-C:
//
//	yaz-capture | yaz-decode
//
// Record five seconds into a WAV file, from a device named like "USB":
//
//	yaz-capture -d usb -s 5 -f wav > rec.wav
//
// List the devices, then replay a recording as if it were spoken:
//
//	yaz-capture --list-devices
//	yaz-capture --file rec.wav | yaz-decode
package main
