// Command yaz-decode turns speech into text with whisper.cpp, on this machine.
// It runs either of the two engines of the one whisper.cpp source: Whisper
// or NVIDIA's Parakeet TDT. The engine is read from the model file given to
// --model (its header, not its name); everything below holds for both
// unless it says whisper.
//
// # Synopsis
//
//	yaz-decode [flags] FILE...           transcribe WAV files
//	yaz-decode [flags] < audio           transcribe a live PCM or WAV stream
//	yaz-decode serve [flags]             framed mode for yazsesd
//	yaz-decode vad-stream [flags]        Silero VAD probabilities for yazsesd
//	yaz-decode devices [flags]           list the devices and exit
//
// Files and streams are the default command: it has no name, and a first
// argument that names a command is that command (a file called serve is
// ./serve). Each command takes only its own flags: a flag of another is a
// usage error (exit 2), and so are files given to serve or vad-stream.
//
// # Description
//
// With files as arguments, each WAV file (8/16/24/32-bit integer or 32/64-bit
// float PCM, any rate, any channel count) is converted to 16 kHz mono and
// transcribed; --format picks txt (default), json, srt or vtt, written to
// stdout or, with --output-dir, to DIR/NAME.EXT (DIR and its parents are
// created if missing, as mkdir -p does). Several files printed as text on
// stdout each get a header line, as head(1) prints them:
//
//	==> a.wav <==
//	text of a
//
//	==> b.wav <==
//	text of b
//
// (one file: no header; a file with no speech: nothing at all; json prints
// one object per line with its "file"). A file cut short, whose header
// declares more audio than it holds (an interrupted download), is
// transcribed as far as it goes, as whisper-cli does, with a line on
// stderr
//
//	yaz-decode: warning: PATH: the file is cut short: it ends N bytes before the audio its header declares (an interrupted download?); transcribed the 4.5 s it holds
//
// and "truncated":true in json; it is not a failure (exit 0). A WAV stream
// on stdin cut short the same way ends with a WARN record. A file that ends
// inside its header holds no audio and is an error.
// Other formats are refused with the sox or ffmpeg command that converts
// them. --progress always draws a bar on stderr while a file decodes (auto:
// on a terminal, for files over 30 s).
//
// With Silero VAD (see "Voice detector" below), only a file's speech is
// decoded: the file is read as a stream through the detector (a 16 kHz file
// in 2 s blocks, so memory stays bounded however long it is), its speech
// spans are packed in order into groups of up to 29 s, a pause between two
// spans becoming 200 ms of silence, and each group is decoded with whisper's
// audio context trimmed to its length while reading goes on. Every
// segment's times are mapped back to the file's timeline, so txt, json, srt
// and vtt times match the file; a segment that runs across a pause of 1.5 s
// or more is split there by whisper's token times, each stretch of speech
// getting its own words at their own times, so no cue covers the silence
// and no word is moved before it (a word is never cut in two; when every
// word lies on one side, the cue is kept to that side). A file without
// speech decodes nothing and prints nothing. With the energy detector the
// file is read as a stream too and decoded in pieces of at most 30 s, each
// cut at the quietest 100 ms of its last 10 s (as yazsesd sends a file to
// its decoder), and a piece in which the detector finds no speech is not
// decoded (every piece is, with --no-vad-gate); each piece's segments are
// put at its place in the file. Either way memory holds a piece or a group,
// not the file: a file of any length decodes in the memory of a short one.
//
// Without files, stdin carries raw PCM (s16le, 16 kHz, mono) or a WAV stream
// (detected from its header). The voice detector cuts it into utterances,
// incrementally; each is printed as soon as it is decoded: one line of text,
// or with --format json one object {"start_ms","end_ms","text"}. --min-speech is the
// shortest speech that counts (default 120 ms) and --min-silence the pause
// that ends an utterance (default 600 ms); an utterance is at most 25 s
// long (a longer one is cut at its quietest moment). Noise the detector does
// not take for speech opens no utterance at all (at --log-level debug each
// utterance cut is a record, and the end of the stream says how many). EOF
// flushes the last utterance. SIGINT or SIGTERM ends the stream the same
// way.
//
// With serve, stdin carries frames type(1 byte) length(uint32 LE) payload:
// 'A' audio (s16le PCM), 'E' end of utterance, 'X' abandon, 'P' a vocabulary
// hint (UTF-8, at most 4096 bytes) that replaces --prompt for the current
// utterance only; stdout answers one JSON line per ended utterance, in order:
//
//	{"utt":N,"text":…,"segments":[{"start_ms","end_ms","text"}…],"audio_ms":…,"decode_ms":…}
//
// with "error" set to abandoned, too_long or decode_failed when there is no
// transcript. 'X' after audio or a prompt discards them; 'X' with nothing
// since the last 'E' abandons the utterance that 'E' ended: if it waits it is
// never decoded, if it is decoding whisper stops within milliseconds, and its
// one result says "error":"abandoned" (see package lib/frame). The model
// stays loaded. If YAZ_READY_FD names a file descriptor, the model first runs
// once on a second of silence (an INFO record "model warmed up" with its ms;
// at most 20 s), so the first utterance after a start is as fast as the next
// ones, and then one line is written to it: a JSON object naming the device
// it loaded on ({"device":{"index":0,"backend":"CPU","name":"CPU",
// "kind":"cpu",...}}, package lib/devices), which yazsesd status shows.
//
// With vad-stream, yaz-decode is the daemon's voice detector (yazsesd is
// pure Go and cannot link whisper.cpp): stdin carries 'A' and 'E' frames
// as in serve, and stdout answers, for every frame that completes 512-
// sample windows (32 ms), a line "P FIRST PROB..." with Silero VAD's speech
// probability of each, in the shortest decimal that reads back as the same
// float32; an 'E' frame runs the last partial window zero-padded, answers
// "E N" (N windows in that use) and resets the detector's state, so the
// next audio starts a new use at window 0 (see package lib/vadwire). The
// windows run as the frames arrive, never again. The reader applies its own
// thresholds and durations (package lib/vadspan). No whisper model is
// loaded; the Silero model is required (--vad auto or silero; auto without
// the file is vad_model_missing, as there is no energy fallback for
// probabilities). Any other frame, or a malformed one, exits 1; EOF ends
// the open use as 'E' does and exits 0. One thread, no gate: the numbers
// are whisper.cpp's, bit for bit.
//
// The same audio with the same flags always gives the same transcript,
// whatever the process decoded before. SIGINT or SIGTERM stop whisper at
// once (files and serve mode; stream mode still decodes what it heard).
//
// --language picks the spoken language. An English-only model (a .en name)
// decodes English only: any other language is refused at start with an error
// (auto means English there); a multilingual model takes any language code
// whisper knows, or auto to detect it. JSON output names the language
// decoded.
//
// A Parakeet model has no language selection: it transcribes the language
// it hears (v3: 25 European languages; v2: English). -l en (the default)
// and -l auto are accepted; any other language is refused at start (exit 1;
// under a supervisor 125 with cause language_unsupported), and JSON output
// names no language. --prompt, --beam-size above 1, --audio-ctx other than
// auto and --no-speech-threshold other than 0.6 are whisper's: with a
// Parakeet model each gives one warning on stderr and is not used, and so
// does the first 'P' frame under serve. --no-fallback changes nothing
// (Parakeet decodes greedily, always deterministically). Audio longer than
// the model holds in one pass (its n_audio_ctx, 50 s in the converted
// models) is decoded in chunks cut at quiet points; segment times stay on
// the file's timeline. Parakeet's segments end at sentence ends, pauses of
// a second, or after 10 s.
//
// Silence and noise print nothing: a voice-activity detector runs before
// whisper, and segments whisper itself marks as no-speech are dropped.
//
// Voice detector: --vad auto (the default) uses Silero VAD, the trained
// detector inside whisper.cpp, when its model file (--vad-model, default
// $XDG_DATA_HOME/yazses/models/ggml-silero-v5.1.2.bin; fetch it with
// yaz-fetch-model silero-v5.1.2) exists, and the energy detector otherwise;
// --vad silero requires the model, --vad energy never loads it. One INFO
// line on stderr says which runs, where it is first needed. Silero tells a
// fan, a hum, clicks or noise that starts abruptly from speech, where the
// energy detector takes a loud steady noise for speech until it has learnt
// its level. --vad-threshold (0.5) is the speech probability that counts:
// higher starts less often in noise, lower catches softer speech. The model
// file is checked whole before whisper.cpp reads it: a file that is missing
// (with --vad silero), a folder, cut short, random or a whisper model is
// refused with one line naming it; with auto, a file that is there but
// unusable is refused too rather than silently replaced. Silero costs about
// 2.5 ms of CPU per second of audio on one thread; windows of digital
// silence (files, serve) or below −60 dBFS once idle (streams) skip it.
//
// # Flags
//
//	-m, --model PATH            ggml model, whisper or Parakeet TDT (env YAZ_MODEL;
//	                            default $XDG_DATA_HOME/yazses/models/ggml-base.en.bin)
//	-l, --language CODE         spoken language, or auto (multilingual models)
//	-t, --threads N             CPU threads (0: up to 4)
//	    --device auto|cpu|gpu|gpu:N  where the model runs (env YAZ_DEVICE; see Devices)
//	    --prompt TEXT           vocabulary hint passed to whisper (whisper only)
//	    --prompt-stdin          files: read the hint as one 'P' frame on stdin
//	                            (as serve takes one), on no command line
//	    --beam-size N           1 greedy (fast), 5 as whisper-cli's default (whisper only)
//	    --audio-ctx auto|full|N trim to the utterance (auto), 1500 (full), or N (whisper only)
//	-f, --format FMT            txt, json, srt, vtt (files); txt, json (stream mode:
//	                            one JSON object per utterance). Old spellings,
//	                            still accepted: -o/--output FMT, and --json
//	    --output-dir DIR        write one file per input into DIR
//	    --[no-]vad-gate         skip decoding audio with no speech (default on;
//	                            off: files are decoded whole)
//	    --vad auto|silero|energy  voice detector (env YAZ_VAD; default auto)
//	    --vad-model PATH        Silero VAD model (env YAZ_VAD_MODEL)
//	    --vad-threshold P       Silero speech probability, 0.01-0.99 (0.5)
//	    --min-speech D          stream mode: shortest speech (120ms)
//	    --min-silence D         stream mode: pause that ends an utterance (600ms)
//	    --progress auto|always|never
//	    --max-duration D        refuse files longer than D (4h)
//	    --log-level, --log-format, --version
//
// serve takes the flags of the model and the detector: -m, -l, -t,
// --device, --prompt, --beam-size, --audio-ctx, --no-fallback,
// --no-speech-threshold, --[no-]vad-gate, --vad, --vad-model,
// --vad-threshold, --min-speech and --min-silence (its "was anything
// said?"). vad-stream takes --vad (auto or silero), --vad-model and
// --vad-threshold. devices takes --device, -m (a GPU the model does not fit
// is passed over) and -f txt|json. All take --log-level and --log-format.
//
// The model file is checked before whisper.cpp loads it (its ggml header,
// vocabulary and tensor headers, in pure Go): a missing file, a file that is
// neither a whisper nor a Parakeet model, a truncated download and a
// Parakeet file without its audio context (n_audio_ctx 0) each get one
// message naming the file and the fix ("model not found: PATH — fetch one
// with yaz-fetch-model base.en").
//
// # Devices
//
// A build with a GPU backend (make setup: Vulkan, where glslc,
// libvulkan-dev and spirv-headers are installed; CUDA, a module
// yaz-ggml-cuda.so opened at run time from beside the binary,
// ../lib/yazses or $YAZ_CUDA_MODULE, where nvcc and an NVIDIA GPU are)
// runs the model on a GPU when --device says so; every build runs on the
// CPU, and one binary runs with or without a Vulkan loader and driver, the
// CUDA libraries and the NVIDIA driver. A backend installed but unable to
// run says why on a line of yaz-decode devices ("not available: CUDA: ...")
// and in --device gpu's warning. yaz-decode devices prints every
// device ggml finds: its index, backend (CPU, Vulkan, CUDA), ggml's name
// (Vulkan0), kind (discrete, integrated, virtual, software, cpu), free and
// total memory in MiB and its own name, then "auto: NAME", and for a
// --device other than auto a line "gpu: NAME" (or its error, exit 1) and,
// when that device is not what --device meant, a line "warning: ..."; with
// -f json one JSON object instead: devices, auto, device, chosen, error,
// warning (what yazsesd config check reads for decode.device). A software
// device is a Vulkan driver that runs on the CPU (Mesa's lavapipe,
// "llvmpipe"): slower than the CPU backend, listed for tests. --device auto
// (the default) takes the best real GPU, discrete before integrated, and
// the CPU when there is none, never a software device (on a machine with
// no GPU device node, /dev/dri/renderD* or /dev/nvidiactl, it does not
// start Vulkan at all: every device there is a software one); cpu the CPU;
// gpu the best hardware GPU in the same order, never a software device:
// with none it decodes on the CPU, with a WARN line that says so and why
// ("--device gpu: no hardware GPU found: decoding on the CPU: ..."; serve
// puts it on its readiness line, which yazsesd status shows), since who
// asks for a GPU on a machine without one still wants the transcript;
// gpu:N device N of the list, a software one too (for tests), with a WARN
// line that it is slower than the CPU. gpu:N with no such device is one
// line naming it, and exit 1 (125 under a supervisor: cause
// device_missing). A decode on a GPU says so in one INFO
// line at start ("decoding on Vulkan0"; on the CPU the line is at debug
// level). A model file larger than a GPU's free memory is not put there:
// auto says so on a WARN line and takes the next device or the CPU, gpu and
// gpu:N refuse it (one line naming both sizes). The device never changes
// the transcript's format. A cancelled
// decode on a GPU stops within 64 graph nodes on the device.
//
// Logs are slog records on stderr (--log-format json: one JSON object per
// line); whisper.cpp's own lines are among them at --log-level debug.
//
// # Exit status
//
// 0 success (also after SIGINT or SIGTERM, and for a file cut short: its
// audio is transcribed, and the warning above says so); 1 a file, the model
// or the language failed (other files are still transcribed); 2 usage error;
// 125 under a supervisor (serve, vad-stream, or YAZ_READY_FD set) when
// the model is missing or not a whisper or Parakeet model, -l names a language the model does not
// know, or the VAD model is missing (--vad silero) or unusable: a restart
// cannot fix that, so the one log record says why (attribute cause:
// model_missing, model_invalid, language_unsupported, vad_model_missing or
// vad_model_invalid) and yazsesd does not restart it.
//
// # Deprecated flags
//
// The modes were flags before they were commands (--serve is serve,
// --vad-stream is vad-stream, --list-devices is devices). The flags still
// work, until the next release, wherever they stand before "--", with the
// flags of the command they stand for; --list-devices wins over any other
// mode, as before, and --serve with --vad-stream is a usage error (exit
// 2).
//
// # Files
//
//	$XDG_DATA_HOME/yazses/models/ggml-base.en.bin       the default model (--model)
//	$XDG_DATA_HOME/yazses/models/ggml-silero-v5.1.2.bin  the Silero VAD model (--vad-model)
//
// $XDG_DATA_HOME is ~/.local/share when it is not set; yaz-fetch-model
// downloads the models there.
//
// # Examples
//
// Fetch the default model, then transcribe a file, or write subtitles for
// two files into a folder:
//
//	yaz-fetch-model base.en
//	yaz-decode meeting.wav
//	yaz-decode -f srt --output-dir subs/ a.wav b.wav
//
// Dictate from the microphone, one line per utterance, or as JSON:
//
//	yaz-capture | yaz-decode
//	yaz-capture | yaz-decode -f json
//
// Another format through sox, or a multilingual model detecting the
// language:
//
//	sox in.mp3 -t raw -r 16000 -c 1 -b 16 -e signed - | yaz-decode
//	yaz-decode -m ~/.local/share/yazses/models/ggml-small.bin -l auto talk.wav
package main
