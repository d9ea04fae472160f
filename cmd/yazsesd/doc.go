// Command yazsesd is the YazSes daemon: push-to-talk dictation into the
// focused window, the ask_human service for MCP clients, and the one
// interruption budget.
//
// # Synopsis
//
//	yazsesd run [--config FILE]         run in the foreground (systemd runs this)
//	yazsesd status [-f json]            health, set-up, children, hold state, budget
//	yazsesd ctl METHOD [JSON]           call a socket method
//	yazsesd ctl hold start|stop|toggle|cancel
//	yazsesd ctl watch [--format json|waybar|polybar]  stream the live state for a status bar
//	yazsesd config init [--force] [FILE]  write the commented default configuration
//	yazsesd config default              print it
//	yazsesd config check [FILE]         check a configuration file and the model it names
//
// # Description
//
// yazsesd runs four children, each in its own process group, and restarts
// any that crashes (backoff 1 s doubling to 30 s; exit 125 is never
// restarted; five starts within a minute leave the child down, which
// status shows as crashloop):
//
//	gate     yaz-gate: the interruption budget; fd 3 is a socketpair to the daemon
//	speak    yaz-speak --serve: the question's voice
//	decode   yaz-decode serve: the resident whisper model
//	capture  yaz-capture: the microphone, open only while needed
//	         (capture.mode = "on-demand") or always, for pre-roll
//
// The commands come from [children] in the configuration; the daemon adds
// the settings it owns: --per-hour (and --spent) to the gate, --voice and
// --rate to speak, --model, --language, --threads, --beam-size and --prompt
// to decode, --backend and --device to capture when they are set. Every
// child signals readiness on the fd named by $YAZ_READY_FD, logs JSON lines
// on stderr that the daemon re-logs with child=NAME, and gets fresh pipes on
// every start. A child that ends while the daemon runs is restarted,
// whatever its exit status (a child stopped from outside with SIGTERM
// exits 0 and is restarted too), except exit 125 (below); a gate restarted
// for any reason starts fully spent (fail closed): no question is spoken
// until the hour has passed, and status says so. The capture child, which
// runs while someone listens, starts again at the next hold or answer.
//
// A child that cannot start for a reason a restart cannot fix (the model
// file is missing or is not a whisper model) logs one ERROR record with a
// cause attribute (model_missing, model_invalid, language_unsupported) and
// a message that names the file and the fix, and exits 125. The daemon is
// not restarted over it and keeps serving what still works; it shows the
// message where the person looks: its own ERROR line ("decode: model not
// found: PATH — fetch one with yaz-fetch-model base.en"), `yazsesd status`
// (each child's cause and reason, and a health line), the cause and reason
// of a hold.stop that could not be decoded, one desktop notification, and
// the systemd status line.
//
// Readiness. The socket listens at once (clients may call status while the
// children start), but READY=1 goes to systemd (sd_notify, Type=notify)
// only once the gate, the speaker and the decoder (and the microphone in
// capture.mode = "always") are each running, or have ended their first
// start: failed for a known cause, crashed, or not ready in time (the
// decoder's model may take up to 60 s to load). With READY=1 goes
// STATUS=, the health line: "ready", or each child that is down or
// restarting and why; it is sent again whenever it changes, so
// `systemctl --user status yazsesd` shows it.
//
// Status. `yazsesd status` shows the health line, the model and its
// language, the typing backends dictation.inject resolves to ("auto →
// x11, clipboard", or none and why), the capture mode, device and
// backend, whether the hotkey listener runs (or why not), the hold and
// budget state, and each child's state, pid, restarts, last exit and
// version (its program's --version, asked once at start).
//
// The socket is $XDG_RUNTIME_DIR/yazses/yazsesd.sock; without
// XDG_RUNTIME_DIR, /run/user/$UID/yazses/yazsesd.sock when /run/user/$UID
// is ours with mode 0700, never a shared folder (folder 0700, socket 0600;
// peers of another uid are refused with SO_PEERCRED and audited);
// one daemon runs per user. It speaks JSON-RPC 2.0, one object per line.
// Methods: status, hold.start, hold.stop, hold.toggle, hold.cancel,
// ask_human {question, timeout_s}, budget.status, last, audit {max},
// transcribe {path}, and watch, a stream of the live state (idle,
// listening, decoding, typing, speaking, waiting, with the budget and the
// last results; the text decoded so far in a hold only with [dictation]
// preview = true). `yazsesd ctl watch` prints it: one line per change, as
// JSON, as Waybar's custom-module JSON, or as polybar text; when the
// daemon is not running or stops it prints an offline line and exits 1,
// for the bar to run it again. At most 16 watches run at once; a watch has
// no idle clock. No method changes the budget or the opt-in: those
// come from the configuration file (SIGHUP reloads it); a reload that turns
// questions off or lowers the cap refuses (or reserves again under the new
// cap) every question not yet being asked, and the one being asked
// finishes. An ask_human timeout_s shorter than any answer needs (4 s with
// the defaults; docs/config.md, [ask]) is invalid params, and a question
// left with too little time to be spoken and answered is not asked
// (deferred timeout, nothing charged). Parameter names are
// exact (case-sensitive, each once) and must be valid UTF-8, else invalid
// params. A connection idle for 30 s, or 5 s into an unfinished line, is
// closed; with 256 connections open a new one is told server busy and
// closed; refusals are logged once per 30 s with a count.
//
// The control socket. Beside it, control.sock (0600, the same folder, the
// same peer check, the same lock) serves only hold.start, hold.stop,
// hold.toggle, hold.cancel and status, on a server of its own: however
// many clients fill yazsesd.sock, idle or waiting for a person, a press
// and a release get through. Other methods there are method not found.
// `yazsesd ctl hold …`, `ctl status` and `yazsesd status` use it, and
// yazsesd.sock when a daemon has none (an older one); yazsesd.sock still
// serves every method.
//
// The resident decoder serves one utterance at a time: a hold before an
// answer, an answer before a file. A call whose client goes away while its
// utterance is being decoded (a cancelled transcribe: yaz-mcp closes its
// connection) sends the decoder an abandon frame (X), so whisper stops at
// its next abort point; the next utterance waiting (a hold) is served as
// soon as the decoder has answered "abandoned".
//
// transcribe reads the file as a 16 kHz stream and decodes it in pieces of
// at most 30 s, cut at quiet moments, whose segments are put back on the
// file's timeline: the daemon holds one piece of a file at a time (its
// memory does not grow with the file's length, rate or sample width), the
// decoder never sees an utterance longer than whisper's window, and a hold
// or an answer that comes meanwhile is served before the next piece, the
// piece in progress being abandoned and done again after it. Files of up
// to 4 hours; one decodes at a time and four more may wait; a call beyond
// that is refused busy (code -32012). An answer's decoding waits until the
// caller's timeout_s is over (or 5 s after the answer ended, if later).
//
// A hold ends by itself after dictation.max_hold_s, as if released.
//
// The budget starts spent for the hour (fail closed) when the previous
// daemon of this user did not stop cleanly in this boot: a marker file,
// yazsesd.running in the state folder ($XDG_STATE_HOME/yazses, beside the
// audit log), is written at start and removed at a clean stop (SIGINT,
// SIGTERM); an empty, damaged or symlinked marker counts as unclean, and so
// does one an older version left in the runtime folder
// ($XDG_RUNTIME_DIR/yazses/yazsesd.running), read at start and removed
// once the new one is written. While
// the marker cannot be written (a full disk) no question is spoken:
// ask_human is unavailable (state_unavailable), status shows
// state_failing, and each question tries again. One daemon runs per user
// whatever its runtime folder: the lock is yazsesd.lock in the state
// folder, and a second daemon exits 125 naming the first one's pid and
// socket. budget.status says why
// (fail_closed_reason daemon_restarted, or gate_restarted after a crash of
// yaz-gate).
//
// Dictation with no focused window types nothing: the text is kept for
// `yazsesd ctl last`, a notification says so, and so does an INFO line of
// the log (never with the text).
//
// ask_human speaks "An MCP client asks: QUESTION", listens for the answer
// (it ends after ask.answer_silence_ms of silence) and returns it. It never
// speaks during a hold (the question waits, free of charge); a hold started
// while a question plays stops it at once. Results: answered {answer},
// no_answer {reason}, deferred {reason}, refused {reason, retry_after_s},
// unavailable {reason}.
//
// Nothing the person says or is asked is logged: logs and the audit log
// ($XDG_STATE_HOME/yazses/audit.jsonl, read with `yazsesd ctl audit`) carry
// kinds, reasons, counts and durations only.
//
// # Signals
//
// SIGINT and SIGTERM stop the daemon: a hold that still records is
// dropped; one already released is decoded, if that takes at most 8 s
// (else it is lost, cause shutdown), and typed, and a hold.stop waiting
// for it gets its answer. Then the children stop (SIGTERM, then SIGKILL
// after 3 s) and it exits 0: all within 15 s, the user unit's
// TimeoutStopSec. SIGHUP reloads the configuration; a file with any error
// is refused as a whole and the old settings stay.
//
// # Exit status
//
//	0  stopped by a signal, or a client command succeeded
//	1  runtime failure: the socket folder is unsafe, the configuration has
//	   errors, a call failed
//	125  another daemon of this user runs (the unit does not restart it)
//	2  usage error
//
// # Files
//
//	$XDG_CONFIG_HOME/yazses/config.toml   the configuration (yazsesd config init writes it)
//	$XDG_DATA_HOME/yazses/models/         the models (yaz-fetch-model puts them there)
//	$XDG_RUNTIME_DIR/yazses/yazsesd.sock  the socket
//	$XDG_RUNTIME_DIR/yazses/control.sock  the control socket (hold.* and status only)
//	$XDG_STATE_HOME/yazses/audit.jsonl    the audit log (yazsesd ctl audit)
//	$XDG_STATE_HOME/yazses/               also the single-instance lock and the crash marker
//	~/.config/systemd/user/app-io.github.yazses.YazSes.service  the systemd user unit (make install; enabled, also yazsesd.service)
//	~/.local/share/applications/io.github.yazses.YazSes.desktop  YazSes's application id for the desktop portal (make install)
//
// Unset, XDG_CONFIG_HOME is ~/.config, XDG_DATA_HOME ~/.local/share and
// XDG_STATE_HOME ~/.local/state; without XDG_RUNTIME_DIR the sockets are in
// /run/user/$UID/yazses.
//
// # Examples
//
// Set up, start with systemd, and look:
//
//	yazsesd config init
//	systemctl --user enable --now yazsesd
//	yazsesd status
//
// Dictate with a key binding of your desktop (toggle: press to talk,
// press again to type the text):
//
//	yazsesd ctl hold toggle
//
// Ask the person at the desk, show the budget, show the live state in a
// Waybar custom module:
//
//	yazsesd ctl ask_human '{"question":"Deploy to staging now?","timeout_s":30}'
//	yazsesd ctl budget.status
//	yazsesd ctl watch --format waybar
package main
