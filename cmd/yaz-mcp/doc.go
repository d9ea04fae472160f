// Command yaz-mcp is the MCP server of YazSes: offline speech to text for
// coding agents, and an opt-in way for them to ask the person at the
// machine a question out loud.
//
// # Synopsis
//
//	yaz-mcp [flags]
//
// # Description
//
// An MCP host starts yaz-mcp and speaks MCP (JSON-RPC 2.0, one message per
// line) on its stdin and stdout: protocol 2026-07-28 (stateless: no
// initialize, the server found with server/discover), 2025-11-25 and
// 2025-06-18 (and the older ones). A member name of JSON-RPC or MCP is
// exact: "ID" for "id", or a member given twice, is an invalid request. It
// opens no network or socket listener of any kind. For example, with
// Claude Code:
//
//	claude mcp add yazses -- yaz-mcp
//
// # Tools
//
//	transcribe(path)
//	    Always listed. Decodes the WAV file at path with whisper.cpp on this
//	    machine and returns the text, and as structured content
//	    {text, segments:[{start_ms,end_ms,text}], audio_ms, decode_ms}
//	    (an output schema is declared). A file cut short (its header
//	    declares more audio than it holds: an interrupted download) is
//	    transcribed as far as it goes, with a "warning" in the structured
//	    content and a text item "[warning: the file is cut short: ...]"
//	    after the transcript, on either path below. The file must be a
//	    regular file
//	    (symbolic links are followed; directories, FIFOs, devices and
//	    sockets are refused without being opened), at most 1 GiB and at most
//	    4 hours of audio. When yazsesd runs and uses the same model, its
//	    resident decoder does the work (no model load per call; dictation
//	    still comes first); otherwise yaz-mcp runs yaz-decode serve as a
//	    child in its own process group, at CPU niceness +5, and sends it the
//	    file's audio on its stdin; one such child runs at a time, later
//	    calls wait. Either way the file is cut and decoded the same way (the
//	    same pieces of at most 30 s, each decoded alone with the same
//	    [decode] and [vad] settings), so a file gives the same transcript on
//	    both. A progress token in the call gets progress notifications:
//	    milliseconds of audio done of the file's (total), at 0 and after
//	    each piece (nothing within a piece); cancelling the call kills the
//	    decoder at once.
//
//	ask_human(question, timeout_s)
//	    Listed only when the configuration says [mcp] ask_human = true;
//	    otherwise the tool does not exist and a call to it is an unknown
//	    tool. The daemon speaks "An MCP client asks: …", listens for the
//	    answer and charges the one interruption budget it holds. The
//	    question is checked as the daemon checks it: control and invisible
//	    characters are removed, and it must then be 1 to 500 characters
//	    with something visible, in valid UTF-8. timeout_s is in seconds: 0 or absent takes
//	    ask.default_timeout_s (45), more than ask.max_timeout_s (45) is cut
//	    to it, a fraction is rounded up, and one shorter than any answer
//	    needs (the label and a word spoken at speak.rate, ask.guard_ms,
//	    250 ms of speech and ask.answer_silence_ms: 4 s with the defaults)
//	    is invalid_argument, naming the minimum. A question left with too
//	    little time to be spoken and answered is not asked (deferred
//	    timeout, nothing charged). The structured result is one of
//	    answered {answer}, no_answer {reason}, deferred {reason},
//	    refused {reason, retry_after_s} and unavailable {reason}, with a
//	    short text. No daemon running: unavailable {reason:
//	    "daemon_not_running"}; yaz-mcp never speaks by itself. While it
//	    waits it sends a progress notification every 5 seconds (with a
//	    progress token); cancelling the call closes the daemon connection,
//	    which cancels the ask (one not yet audible costs nothing).
//
// # Errors
//
// Tool errors are results with isError set and the text "CODE: SENTENCE",
// CODE one of not_found, not_a_file, unsupported_format, too_large,
// model_missing, decode_failed, invalid_argument and unavailable, and the
// sentence fixed for it: never a path, a system error or part of a
// transcript. Protocol errors (JSON-RPC errors) are only for protocol
// faults: bad JSON, unknown methods, unknown tools. A line on stdin longer
// than 4 MiB is dropped and answered with a parse error.
//
// A call the client cancelled (notifications/cancelled) is not answered,
// as MCP asks. A response carries its request's id exactly as the client
// wrote it; an id that is neither a string nor an integer (null, a
// fraction, an object, an array, a boolean) is refused with a JSON-RPC
// invalid request error (-32600) and an id of null.
//
// Whatever a tool returns is disclosed to the MCP host, which may send it
// to a model or a service; see docs/trust-boundary.md.
//
// # Flags
//
//	-c, --config FILE         configuration (env YAZ_CONFIG; default
//	                          $XDG_CONFIG_HOME/yazses/config.toml)
//	-m, --model PATH          whisper model for transcribe (env YAZ_MODEL;
//	                          default decode.model from the configuration)
//	    --vad auto|silero|energy  voice detector of a local transcribe (env
//	                          YAZ_VAD; default vad.engine from the configuration)
//	    --vad-model PATH      Silero VAD model of a local transcribe (env
//	                          YAZ_VAD_MODEL; default vad.model)
//	    --decoder PROG        yaz-decode program, looked up next to yaz-mcp,
//	                          then in PATH (env YAZ_MCP_DECODER)
//	    --daemon auto|never   use yazsesd's decoder when it runs (default auto;
//	                          env YAZ_MCP_DAEMON)
//	    --nice N              niceness added to the yaz-decode child (default
//	                          5; env YAZ_MCP_NICE)
//	    --log-level, --log-format, --version
//
// # Configuration
//
// The configuration is read once, at start: after changing [mcp] ask_human,
// have the host restart the server (the daemon reads the file again on
// SIGHUP, and refuses questions while its own copy says off). Logs go to
// stderr only (stdout carries MCP messages) and never contain a question, an
// answer, a transcript or an audio path. A configuration file that does not
// load is logged and leaves ask_human off.
//
// The daemon's socket is found the way the daemon chooses it, with no
// variable from the host: $XDG_RUNTIME_DIR/yazses/yazsesd.sock, or, as MCP
// hosts pass no XDG_RUNTIME_DIR, /run/user/$UID/yazses/yazsesd.sock when
// /run/user/$UID is ours with mode 0700; never a shared folder. When no
// daemon is found, the log says once at INFO where it looked and why it
// refused ("no daemon found: decoding locally", "no daemon found: ask_human
// unavailable").
//
// # Exit status
//
// 0 when stdin ends or on SIGINT/SIGTERM; 1 a runtime failure; 2 usage
// error.
//
// # Files
//
//	$XDG_CONFIG_HOME/yazses/config.toml     the configuration ([mcp], [ask], [decode], [vad])
//	$XDG_DATA_HOME/yazses/models/           the models (yaz-fetch-model puts them there)
//	$XDG_RUNTIME_DIR/yazses/yazsesd.sock    the daemon's socket, when it runs
//
// # Examples
//
// Add the server to Claude Code (an absolute path works for hosts that
// start it without ~/.local/bin in PATH):
//
//	claude mcp add yazses -- ~/.local/bin/yaz-mcp
//
// Try it in the MCP Inspector, with a model of your own:
//
//	npx @modelcontextprotocol/inspector ~/.local/bin/yaz-mcp -m ~/models/ggml-small.en.bin
package main
