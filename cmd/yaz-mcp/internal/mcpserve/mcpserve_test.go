package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/config"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/jsonrpc"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/safesocket"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const marker = "SYNTHETIC-MARKER-4417"

// noDaemon points XDG_RUNTIME_DIR at an empty folder and returns it.
func noDaemon(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ymrt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o700)
	t.Setenv("XDG_RUNTIME_DIR", dir)
	return dir
}

// fakeDaemon serves the daemon socket with the given handlers.
func fakeDaemon(t *testing.T, handlers map[string]jsonrpc.Handler) {
	t.Helper()
	dir, err := safesocket.Dir(noDaemon(t))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := safesocket.Listen(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv := jsonrpc.NewServer(nil)
	for m, h := range handlers {
		srv.Handle(m, h)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ctx, ln)
	}()
	t.Cleanup(func() {
		cancel()
		testwait.Closed(t, done, "the fake daemon to stop")
	})
}

func baseOptions(t *testing.T) Options {
	cfg := config.Default()
	cfg.Decode.Model = filepath.Join(t.TempDir(), "ggml-test.bin")
	if err := os.WriteFile(cfg.Decode.Model, []byte("model"), 0o644); err != nil {
		t.Fatal(err)
	}
	return Options{Config: cfg, Decoder: filepath.Join(t.TempDir(), "no-decoder"), UseDaemon: true, ProgressEvery: 50 * time.Millisecond}
}

// fakeDecoder writes a shell script standing in for yaz-decode.
func fakeDecoder(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fake-decode")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func wavFile(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, append(pcm.WAVHeader(32000), make([]byte, 32000)...), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestToolsListedByOptIn(t *testing.T) {
	noDaemon(t)
	for _, on := range []bool{false, true} {
		t.Run("ask_human="+strconv.FormatBool(on), func(t *testing.T) {
			opt := baseOptions(t)
			opt.Config.MCP.AskHuman = on
			s, _ := startSession(t, opt)
			s.initialize("2025-06-18")
			names := s.toolNames()
			want := []string{"transcribe"}
			if on {
				want = []string{"ask_human", "transcribe"}
			}
			slices.Sort(names)
			if !slices.Equal(names, want) {
				t.Fatalf("tools = %v, want %v", names, want)
			}
			m := s.call("tools/call", map[string]any{"name": "ask_human", "arguments": map[string]any{"question": "Ship it?"}})
			if on {
				r := s.toolResult(m)
				if r.IsError || !strings.Contains(string(r.StructuredContent), `"daemon_not_running"`) {
					t.Fatalf("ask_human without a daemon = %s %s", r.text(), r.StructuredContent)
				}
				return
			}
			if m.Error == nil || m.Error.Code != -32602 || !strings.Contains(m.Error.Message, "not found") {
				t.Fatalf("ask_human with the opt-in off = %+v, want an unknown-tool protocol error", m)
			}
		})
	}
}

func TestProtocolVersions(t *testing.T) {
	noDaemon(t)
	for _, v := range []string{"2025-06-18", "2025-11-25"} {
		t.Run(v, func(t *testing.T) {
			s, _ := startSession(t, baseOptions(t))
			s.initialize(v) // fails unless the server answers with v
			if names := s.toolNames(); len(names) != 1 {
				t.Fatalf("tools = %v", names)
			}
		})
	}
}

func TestTranscribeRefusals(t *testing.T) {
	noDaemon(t)
	dir := filepath.Join(t.TempDir(), marker)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.wav")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.wav")
	os.WriteFile(empty, nil, 0o644)
	text := filepath.Join(dir, "notes.wav")
	os.WriteFile(text, []byte(marker+" is not audio\n"), 0o644)
	huge := filepath.Join(dir, "huge.wav")
	os.WriteFile(huge, pcm.WAVHeader(1<<30), 0o644)
	os.Truncate(huge, 1<<30+1)

	s, logs := startSession(t, baseOptions(t))
	s.initialize("2025-11-25")
	cases := []struct {
		name string
		args map[string]any
		want Code
	}{
		{"missing", map[string]any{"path": filepath.Join(dir, "missing.wav")}, NotFound},
		{"directory", map[string]any{"path": dir}, NotAFile},
		{"fifo", map[string]any{"path": fifo}, NotAFile},
		{"dev zero", map[string]any{"path": "/dev/zero"}, NotAFile},
		{"empty file", map[string]any{"path": empty}, UnsupportedFormat},
		{"text file", map[string]any{"path": text}, UnsupportedFormat},
		{"over 1 GiB", map[string]any{"path": huge}, TooLarge},
		{"no path", map[string]any{}, InvalidArgument},
		{"empty path", map[string]any{"path": ""}, InvalidArgument},
		{"number", map[string]any{"path": 42}, InvalidArgument},
		{"array", map[string]any{"path": []string{marker}}, InvalidArgument},
		{"nul byte", map[string]any{"path": dir + "/\x00" + marker}, InvalidArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// A FIFO or a device refused by its type, not read: a blocked
			// open never answers (s.tool fails after testwait.Hang), and
			// /dev/zero read to the size cap would be too_large.
			r := s.tool("transcribe", c.args)
			wantError(t, r, c.want)
			// An empty file needs no converting: it is said to be empty.
			switch c.name {
			case "empty file":
				if !strings.Contains(r.text(), "empty") || strings.Contains(r.text(), "ffmpeg") {
					t.Errorf("error %q, want it to say the file is empty, with no ffmpeg advice", r.text())
				}
			case "text file":
				if !strings.Contains(r.text(), "ffmpeg") {
					t.Errorf("error %q, want the ffmpeg advice", r.text())
				}
			}
		})
	}
	if strings.Contains(s.output(), marker) {
		t.Errorf("the marker reached the client:\n%s", s.output())
	}
	if strings.Contains(logs.String(), marker) {
		t.Errorf("the marker reached the log:\n%s", logs.String())
	}
}

// answerJSON is yaz-decode serve's answer to the first utterance: "hello
// there" in two segments.
const answerJSON = `{"utt":1,"text":"hello there","segments":[{"start_ms":0,"end_ms":900,"text":"hello"},{"start_ms":900,"end_ms":1000,"text":"there"}],"audio_ms":1000,"decode_ms":3}`

// serveFake is the body of a fake yaz-decode serve that answers the first
// utterance with answerJSON (before it has read it) and reads its stdin to
// the end.
const serveFake = "echo '" + answerJSON + "'\ncat >/dev/null\n"

func TestTranscribeLocal(t *testing.T) {
	noDaemon(t)
	opt := baseOptions(t)
	// The audio comes on stdin, as frames; the path is nowhere.
	opt.Decoder = fakeDecoder(t, `
[ "$1" = serve ] || exit 3
case "$*" in *.wav*) exit 5;; esac
[ "$(head -c 1)" = A ] || exit 4
`+serveFake)
	s, _ := startSession(t, opt)
	s.initialize("2025-06-18")
	dir := t.TempDir()
	wav := wavFile(t, dir, "a.wav")
	os.Symlink(wav, filepath.Join(dir, "link.wav"))

	m := s.call("tools/call", map[string]any{"name": "transcribe", "arguments": map[string]any{"path": filepath.Join(dir, "link.wav")},
		"_meta": map[string]any{"progressToken": "tok-1"}})
	r := s.toolResult(m)
	if r.IsError || r.text() != "hello there" {
		t.Fatalf("transcribe = %q (error %v)", r.text(), r.IsError)
	}
	var got Transcript
	if err := json.Unmarshal(r.StructuredContent, &got); err != nil {
		t.Fatal(err)
	}
	if got.Text != "hello there" || len(got.Segments) != 2 || got.Segments[1].StartMs != 900 || got.AudioMs != 1000 {
		t.Errorf("structured = %+v", got)
	}
	// Progress may trail the result (mcp-go writes them separately).
	var values []float64
	deadline := time.After(testwait.Hang)
collect:
	for len(values) < 2 {
		select {
		case n := <-s.notes:
			if n.Method != "notifications/progress" {
				continue
			}
			tok, v := progressOf(n)
			if tok != "tok-1" {
				t.Errorf("progress token %q", tok)
			}
			values = append(values, v)
		case <-deadline:
			break collect
		}
	}
	if want := []float64{0, 1000}; !slices.Equal(values, want) { // ms of the 1000 ms file, at 0 and after its one piece
		t.Errorf("progress = %v, want %v", values, want)
	}

	// Without a progress token: no notifications. Notifications go out in
	// the order they were sent (mcp-go writes them from one queue), so a
	// later call's progress comes after any of this call's: every
	// notification before it is one too many.
	r = s.tool("transcribe", map[string]any{"path": wav})
	if r.IsError {
		t.Fatalf("transcribe: %s", r.text())
	}
	m = s.call("tools/call", map[string]any{"name": "transcribe", "arguments": map[string]any{"path": wav},
		"_meta": map[string]any{"progressToken": "tok-after"}})
	if r := s.toolResult(m); r.IsError {
		t.Fatalf("transcribe: %s", r.text())
	}
	for {
		n := testwait.Recv(t, s.notes, "the progress of the call with a token")
		tok, _ := progressOf(n)
		if n.Method == "notifications/progress" && tok == "tok-after" {
			break
		}
		if n.Method == "notifications/progress" && tok == "tok-1" {
			continue // the first call's, checked above
		}
		t.Errorf("notification without a progress token: %s %s", n.Method, n.Params)
	}
}

func TestTranscribeFailuresHideDetails(t *testing.T) {
	noDaemon(t)
	dir := t.TempDir()
	wav := wavFile(t, dir, marker+".wav")
	cases := []struct {
		name  string
		opt   func(*Options)
		want  Code
		extra string
	}{
		{"decoder fails", func(o *Options) {
			o.Decoder = fakeDecoder(t, "echo 'partial "+marker+"'; echo 'error: "+marker+" at /dev/fd/3' >&2; exit 1\n")
		}, DecodeFailed, ""},
		{"decoder crashes", func(o *Options) { o.Decoder = fakeDecoder(t, "echo '"+marker+"'; kill -SEGV $$\n") }, DecodeFailed, ""},
		{"decoder prints garbage", func(o *Options) { o.Decoder = fakeDecoder(t, "echo '{\"text\": "+marker+"'\n") }, DecodeFailed, ""},
		{"model missing", func(o *Options) {
			o.Decoder = fakeDecoder(t, serveFake)
			o.Model = filepath.Join(dir, marker+"-model.bin")
		}, ModelMissing, ""},
		{"no decoder", func(o *Options) { o.Decoder = filepath.Join(dir, marker+"-yaz-decode") }, Unavailable, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opt := baseOptions(t)
			c.opt(&opt)
			s, logs := startSession(t, opt)
			s.initialize("2025-06-18")
			wantError(t, s.tool("transcribe", map[string]any{"path": wav}), c.want)
			if strings.Contains(s.output(), marker) {
				t.Errorf("the marker reached the client:\n%s", s.output())
			}
			if strings.Contains(logs.String(), marker) {
				t.Errorf("the marker reached the log:\n%s", logs.String())
			}
		})
	}
}

// TestTranscribeCancel: notifications/cancelled kills the decoder (which
// would otherwise sleep far longer than testwait.Hang).
func TestTranscribeCancel(t *testing.T) {
	noDaemon(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	opt := baseOptions(t)
	opt.Decoder = fakeDecoder(t, "echo $$ > "+pidFile+"\nexec sleep 600\n")
	s, logs := startSession(t, opt)
	s.initialize("2025-06-18")
	id, resp := s.request("tools/call", map[string]any{"name": "transcribe", "arguments": map[string]any{"path": wavFile(t, t.TempDir(), "a.wav")}})
	pid := waitPID(t, pidFile)
	exited, err := testwait.Exited(pid)
	if err != nil {
		t.Fatal(err)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + strconv.Itoa(id) + `,"reason":"test"}}`)
	testwait.Closed(t, exited, fmt.Sprintf("the decoder %d to be killed by the cancel", pid))
	// A cancelled call is not answered (MCP): yaz-mcp drops its result
	// and says so in its log, after which nothing can come for it.
	waitUnanswered(t, logs)
	select {
	case m := <-resp:
		t.Errorf("the cancelled call was answered: %s", m.Result)
	default:
	}
	// The server still serves.
	if names := s.toolNames(); len(names) != 1 {
		t.Fatalf("tools after cancel = %v", names)
	}
}

// waitPID waits for the fake decoder to write its pid to file, re-reading
// it at each change of the file (inotify); after testwait.Hang it fails.
func waitPID(t *testing.T, file string) int {
	t.Helper()
	w, err := testwait.WatchFile(file)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	pid := 0
	read := func() bool {
		b, _ := os.ReadFile(file)
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err == nil && n > 0 {
			pid = n
		}
		return pid > 0
	}
	if err := testwait.Until(testwait.Context(t), read, w); err != nil {
		t.Fatalf("waiting for the decoder to start (its pid in %s): %v", file, err)
	}
	return pid
}

func TestTranscribeOnDaemon(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	unavailable := false
	fakeDaemon(t, map[string]jsonrpc.Handler{
		daemonapi.MethodTranscribe: func(ctx context.Context, params json.RawMessage) (any, error) {
			var p daemonapi.TranscribeParams
			json.Unmarshal(params, &p)
			mu.Lock()
			defer mu.Unlock()
			paths = append(paths, p.Path)
			if unavailable {
				return nil, &jsonrpc.Error{Code: daemonapi.CodeUnavailable, Message: "decoder down"}
			}
			return daemonapi.TranscribeResult{Text: "from the daemon", Segments: []daemonapi.Segment{{StartMs: 0, EndMs: 2000, Text: "from the daemon"}}, AudioMs: 2000, DecodeMs: 5}, nil
		},
	})
	dir := t.TempDir()
	wav := wavFile(t, dir, "a.wav")
	link := filepath.Join(dir, "link.wav")
	os.Symlink(wav, link)
	local := fakeDecoder(t, serveFake)

	run := func(opt Options) string {
		t.Helper()
		opt.Decoder = local
		s, _ := startSession(t, opt)
		s.initialize("2025-06-18")
		r := s.tool("transcribe", map[string]any{"path": link})
		if r.IsError {
			t.Fatalf("transcribe: %s", r.text())
		}
		s.close()
		return r.text()
	}
	opt := baseOptions(t)
	if got := run(opt); got != "from the daemon" {
		t.Errorf("with a daemon: %q, want the daemon's transcript", got)
	}
	mu.Lock()
	if len(paths) != 1 || paths[0] != wav {
		t.Errorf("daemon got paths %q, want [%s] (links resolved)", paths, wav)
	}
	unavailable = true
	mu.Unlock()
	if got := run(opt); got != "hello there" {
		t.Errorf("daemon decoder down: %q, want the local transcript", got)
	}
	opt.UseDaemon = false
	if got := run(opt); got != "hello there" {
		t.Errorf("--daemon never: %q, want the local transcript", got)
	}
	opt = baseOptions(t)
	opt.Model = opt.Config.Decode.Model + ".other"
	os.WriteFile(opt.Model, []byte("m"), 0o644)
	if got := run(opt); got != "hello there" {
		t.Errorf("another model: %q, want the local transcript", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paths) != 2 {
		t.Errorf("daemon called %d times, want 2", len(paths))
	}
}

// TestOneDecoderAtATime: concurrent transcribe calls run their yaz-decode
// children one after the other.
func TestOneDecoderAtATime(t *testing.T) {
	noDaemon(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	opt := baseOptions(t)
	opt.Decoder = fakeDecoder(t, "echo start >> "+log+"; sleep 0.2; echo end >> "+log+"\n"+serveFake)
	s, _ := startSession(t, opt)
	s.initialize("2025-06-18")
	wav := wavFile(t, dir, "a.wav")
	var resps []chan message
	for range 3 {
		_, r := s.request("tools/call", map[string]any{"name": "transcribe", "arguments": map[string]any{"path": wav}})
		resps = append(resps, r)
	}
	for _, r := range resps {
		if res := s.toolResult(s.wait(r, "a concurrent transcribe's result")); res.IsError {
			t.Fatalf("transcribe: %s", res.text())
		}
	}
	b, _ := os.ReadFile(log)
	if got, want := strings.Fields(string(b)), strings.Fields(strings.Repeat("start end ", 3)); !slices.Equal(got, want) {
		t.Errorf("decoder runs %v, want %v (never two at once)", got, want)
	}
}

// TestTranscribeLocalVAD: the local decoder gets the [vad] settings as
// flags, and --vad refuses an unknown detector.
func TestTranscribeLocalVAD(t *testing.T) {
	noDaemon(t)
	opt := baseOptions(t)
	opt.Config.VAD = config.VAD{Engine: config.VADSilero, Model: "/models/vad.bin", Threshold: 0.65}
	argsFile := filepath.Join(t.TempDir(), "args")
	opt.Decoder = fakeDecoder(t, `printf '%s\n' "$@" > `+argsFile+"\n"+serveFake)
	s, _ := startSession(t, opt)
	s.initialize("2025-06-18")
	if r := s.tool("transcribe", map[string]any{"path": wavFile(t, t.TempDir(), "a.wav")}); r.IsError {
		t.Fatalf("transcribe: %s", r.text())
	}
	b, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Split(strings.TrimSpace(string(b)), "\n")
	for _, want := range []string{"--vad=silero", "--vad-model=/models/vad.bin", "--vad-threshold=0.65"} {
		if !slices.Contains(args, want) {
			t.Errorf("decoder args %q lack %s", args, want)
		}
	}
	var out, errb bytes.Buffer
	if code := Main(context.Background(), []string{"--vad", "webrtc"}, strings.NewReader(""), &out, &errb); code != 2 || !strings.Contains(errb.String(), "--vad must be auto, silero or energy") {
		t.Errorf("--vad webrtc: exit %d, %q; want 2 and the allowed values", code, errb.String())
	}
}
