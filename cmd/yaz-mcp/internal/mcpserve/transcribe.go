package mcpserve

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/yazses/yazses/cmd/yaz-mcp/internal/audiofile"
	"github.com/yazses/yazses/cmd/yaz-mcp/internal/localdecode"
	"github.com/yazses/yazses/lib/config"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/filedecode"
	"github.com/yazses/yazses/lib/jsonrpc"
)

// errNoDecoder: the yaz-decode program was not found.
var errNoDecoder = errors.New("decoder program not found")

// Transcript is the structured content of a transcribe result.
type Transcript struct {
	Text     string                `json:"text"`
	Segments []localdecode.Segment `json:"segments"`
	AudioMs  int64                 `json:"audio_ms"`
	DecodeMs int64                 `json:"decode_ms"`
	// Warning, when not empty, is a fixed sentence about the file that did
	// not stop its transcription (daemonapi.WarningCutShort).
	Warning string `json:"warning,omitempty"`
}

// noSpeech is the text content of a transcript without words.
const noSpeech = "[no speech found]"

func (s *Server) transcribe(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args := req.GetArguments()
	path, ok := args["path"].(string)
	if !ok || path == "" {
		return toolError(InvalidArgument, detailPath), nil
	}
	af, err := audiofile.Open(path)
	if err != nil {
		code := codeOf(err)
		s.log.Info("transcribe refused", "code", string(code))
		switch {
		case code == InvalidArgument:
			return toolError(code, detailPath), nil
		case errors.Is(err, audiofile.ErrEmpty):
			return toolError(code, detailEmpty), nil
		}
		return toolError(code), nil
	}
	defer af.Close()
	prog := newProgress(ctx, req)

	if s.opt.UseDaemon && s.daemonModel() {
		t, err := s.transcribeOnDaemon(ctx, af, prog)
		switch {
		case err == nil:
			return transcriptResult(t), nil
		case ctx.Err() != nil:
			return cancelledTranscribe(), nil
		case errors.Is(err, errFallBack):
			// no daemon, or its decoder is down: decode here
		default:
			s.log.Info("transcribe failed on the daemon", "code", string(codeOf(err)))
			return toolError(codeOf(err)), nil
		}
	}
	t, err := s.transcribeLocally(ctx, af, prog)
	if err != nil {
		if ctx.Err() != nil {
			return cancelledTranscribe(), nil
		}
		code := codeOf(err)
		s.log.Warn("transcribe failed", "code", string(code), "audio_ms", af.Duration.Milliseconds())
		return toolError(code), nil
	}
	return transcriptResult(t), nil
}

// cancelledTranscribe is the result of a call that ended because it was
// cancelled: the client that cancelled it never gets it (calls drops it),
// and it says nothing of the file, which may be fine.
func cancelledTranscribe() *mcp.CallToolResult {
	return toolError(Unavailable, "The call was cancelled before the file was transcribed.")
}

func transcriptResult(t Transcript) *mcp.CallToolResult {
	if t.Segments == nil {
		t.Segments = []localdecode.Segment{}
	}
	text := t.Text
	if strings.TrimSpace(text) == "" {
		text = noSpeech
	}
	r := mcp.NewToolResultStructured(t, text)
	if t.Warning != "" {
		// Where a caller that reads the text alone sees it too.
		r.Content = append(r.Content, mcp.NewTextContent("[warning: "+t.Warning+"]"))
	}
	return r
}

// daemonModel reports whether the daemon would decode with the model this
// server was asked to use (its own decode.model).
func (s *Server) daemonModel() bool {
	return s.opt.Model == "" || s.opt.Model == s.opt.Config.Decode.Model
}

// errFallBack: the daemon cannot decode; the local decoder should.
var errFallBack = errors.New("daemon cannot decode")

func (s *Server) transcribeOnDaemon(ctx context.Context, af *audiofile.File, prog *progress) (Transcript, error) {
	c, err := s.dialDaemon(ctx, "decoding locally")
	if err != nil {
		return Transcript{}, fmt.Errorf("%w: %w", errFallBack, err)
	}
	// Closing the connection cancels the call in the daemon.
	defer c.Close()
	r, err := s.daemonTranscribe(ctx, c, af, prog)
	if err != nil {
		if ctx.Err() != nil {
			return Transcript{}, ctx.Err()
		}
		// Decoder down, a file over the daemon's own cap (it takes an hour
		// at most), a method unknown to an older daemon, a lost
		// connection: the local decoder can still do it.
		s.log.Info("daemon did not transcribe; decoding locally", "err_kind", errKind(err))
		return Transcript{}, fmt.Errorf("%w: %w", errFallBack, err)
	}
	s.log.Info("transcribed on the daemon", "audio_ms", r.AudioMs, "decode_ms", r.DecodeMs)
	segs := make([]localdecode.Segment, 0, len(r.Segments))
	for _, g := range r.Segments {
		segs = append(segs, localdecode.Segment{StartMs: g.StartMs, EndMs: g.EndMs, Text: g.Text})
	}
	return Transcript{Text: r.Text, Segments: segs, AudioMs: r.AudioMs, DecodeMs: r.DecodeMs, Warning: r.Warning}, nil
}

// daemonTranscribe has the daemon transcribe af. With progress asked
// for, it is transcribe.stream: milliseconds of audio done of the file's,
// as on the local path, at the file's opening and after each 30 s piece
// (the daemon knows no more within a piece). A daemon without that method
// (an older one) or with no stream free gets transcribe, with the elapsed
// seconds as progress.
func (s *Server) daemonTranscribe(ctx context.Context, c *daemonapi.Client, af *audiofile.File, prog *progress) (daemonapi.TranscribeResult, error) {
	if prog.on() {
		total := max(1, af.Duration.Milliseconds())
		r, err := c.TranscribeProgress(ctx, af.Path, func(done, _ int64) {
			prog.send(float64(min(done, total)), float64(total), "decoding on the daemon")
		})
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.MethodNotFound && rpcErr.Code != jsonrpc.ServerBusy {
			if err == nil {
				prog.send(float64(total), float64(total), "decoding on the daemon")
			}
			return r, err
		}
		s.log.Debug("the daemon has no transcribe with progress here: progress is the elapsed time", "err_kind", errKind(err))
	}
	stop := prog.heartbeat(s.opt.ProgressEvery, 0, "decoding on the daemon")
	defer stop()
	return c.Transcribe(ctx, af.Path)
}

// errKind names an error's kind for logs without its text.
func errKind(err error) string {
	var rpcErr *jsonrpc.Error
	switch {
	case errors.As(err, &rpcErr):
		return fmt.Sprintf("rpc %d", rpcErr.Code)
	case errors.Is(err, jsonrpc.ErrClosed):
		return "connection closed"
	default:
		return fmt.Sprintf("%T", errors.Unwrap(err))
	}
}

func (s *Server) transcribeLocally(ctx context.Context, af *audiofile.File, prog *progress) (Transcript, error) {
	argv, err := config.ResolveCommand([]string{s.opt.Decoder}, s.opt.SelfDir)
	if err != nil {
		return Transcript{}, fmt.Errorf("%w: %w", errNoDecoder, err)
	}
	// The decoder and its flags are lib/filedecode's, as the daemon's
	// decoder child runs: the same file gives the same text on either.
	d := s.opt.Config.Decode
	if s.opt.Model != "" {
		d.Model = s.opt.Model
	}
	opt := localdecode.Options{
		Command: append(argv, "serve"),
		Flags:   filedecode.Flags(d, s.opt.Config.VAD),
		Model:   d.Model,
		Prompt:  d.Prompt,
		Nice:    s.opt.Nice,
		Env:     childEnv(),
	}
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	case <-ctx.Done():
		return Transcript{}, ctx.Err()
	}
	// Progress is milliseconds of audio done of the file's, at 0 and
	// after each piece, as on the daemon.
	var onProgress func(int64)
	if prog.on() {
		total := max(1, af.Duration.Milliseconds())
		prog.send(0, float64(total), "decoding")
		onProgress = func(done int64) { prog.send(float64(min(done, total)), float64(total), "decoding") }
	}
	r, err := localdecode.Run(ctx, opt, af.F, onProgress, func(pid int) {
		s.log.Debug("decoder started", "pid", pid, "audio_ms", af.Duration.Milliseconds())
	})
	if err != nil {
		return Transcript{}, err
	}
	s.log.Info("transcribed locally", "audio_ms", r.AudioMs, "decode_ms", r.DecodeMs, "pieces", r.Pieces, "segments", len(r.Segments))
	t := Transcript{Text: r.Text, Segments: r.Segments, AudioMs: r.AudioMs, DecodeMs: r.DecodeMs}
	if r.Truncated {
		t.Warning = daemonapi.WarningCutShort // as the daemon says it
	}
	return t, nil
}

// childEnv is the decoder's environment: this one without the variables
// that would override its flags or hand it our readiness descriptor.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "YAZ_READY_FD", "YAZ_LOG_FORMAT", "YAZ_LOG_LEVEL":
			continue
		}
		env = append(env, kv)
	}
	return env
}
