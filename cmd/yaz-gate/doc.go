// Command yaz-gate holds YazSes's interruption budget: how many times per
// sliding hour an agent may speak to the person (docs/design.md, "The
// interruption budget"). There is one gate, a child of yazsesd, for the
// daemon's whole life; nothing else holds or resets a budget.
//
// # Synopsis
//
//	yaz-gate [--per-hour N] [--spent] [--log-level L] [--log-format F]  3<>SOCKETPAIR-END
//
// # Description
//
// yaz-gate serves on file descriptor 3, which must be an inherited AF_UNIX
// stream socket (one end of a socketpair made by yazsesd). Started any other
// way (no fd 3, or fd 3 a file, a pipe, a TCP or datagram socket) it prints
//
//	yaz-gate: runs only as a child of yazsesd
//
// and exits 2. It opens no socket, file or listener of its own.
//
// Protocol (package lib/gate): JSON Lines, one request per line, one reply
// per request, in order:
//
//	{"op":"reserve"}                -> {"ok":true,"token":"…"}
//	                                   {"ok":false,"reason":"budget_exhausted","retry_after_s":N}
//	                                   {"ok":false,"reason":"disabled","retry_after_s":0}
//	{"op":"commit","token":"…"}     -> {"ok":true} | {"ok":false,"reason":"unknown_token",…}
//	{"op":"release","token":"…"}    -> {"ok":true} | {"ok":false,"reason":"unknown_token",…}
//	{"op":"status"}                 -> {"ok":true,"per_hour":N,"used":N,"next_free_s":N}
//	anything else                   -> {"ok":false,"reason":"bad_request","retry_after_s":0}
//
// A request may carry "id":N; its reply echoes it. Blank lines get no
// reply; lines longer than 4096 bytes are answered bad_request. The gate
// keeps serving after every refusal.
//
// A client may pipeline requests. The gate handles them one at a time in
// arrival order (so a reserve's check and charge stay atomic) and writes
// the replies in batches: a reply waits in a buffer only while the next
// whole request is already read in, and the buffer is written before any
// read that could wait.
//
// Budget rules (package cmd/yaz-gate/internal/budget): reserve atomically takes a slot before
// any audio; a reserved slot counts as used. commit (audio started) keeps
// the slot until one hour after the commit. release refunds the slot and is
// accepted only for a reserved, uncommitted token within its 10-minute
// lease: a proven failure before any output. A reservation neither
// committed nor released within the lease is charged as spoken at its end.
// Unknown, doubled, released-then-committed and committed-then-released
// tokens are refused as unknown_token and change nothing. Time is measured
// on the monotonic clock: setting the system clock frees nothing.
//
// The budget lives in this process's memory only. yazsesd restarts a
// crashed gate with --spent, so a crash never grants fresh slots; a daemon
// restart does start a fresh budget (a documented limit).
//
// # Flags
//
//	--per-hour N         attempts per sliding hour; 0 (the default) refuses
//	                     every reserve with "disabled" (env YAZ_GATE_PER_HOUR)
//	--spent              start with all N slots spent for the next hour
//	--log-level L        debug, info (default), warn or error (env YAZ_LOG_LEVEL)
//	--log-format F       text (default) or json, on stderr (env YAZ_LOG_FORMAT)
//	--version, --help
//
// Logs carry ops, results and counts only: never a token, question or
// answer.
//
// # Environment
//
// YAZ_READY_FD=n makes yaz-gate write a newline to fd n and
// close it once it is serving (readiness, the s6 convention).
//
// # Exit status
//
// 0 when fd 3 reaches EOF (yazsesd went away) or on SIGTERM or SIGINT; 1 on
// a runtime failure; 2 on a usage error or when not started as a child of
// yazsesd.
//
// # Files
//
// None: the budget lives in memory, and the gate opens no file or socket
// of its own. The daemon's configuration ([budget] ask_human_per_hour in
// $XDG_CONFIG_HOME/yazses/config.toml) gives --per-hour.
//
// # Examples
//
// yazsesd starts the gate; the budget is seen through the daemon:
//
//	yazsesd ctl budget.status
//
// Started by hand, without the socketpair, it refuses (exit 2):
//
//	yaz-gate --per-hour 4
package main
