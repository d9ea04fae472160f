package e2e

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/wav"
)

var pausedOnce struct {
	sync.Once
	dir   string
	files []pausedFile
	err   error
}

// pausedFile is one of the files pausedSpeechWAVs makes.
type pausedFile struct {
	name string
	path string
	ms   int64 // its length
}

// pausedSpeechWAVs are files of speech with pauses: pieces of jfk.wav from
// 2 to 11 s long between pauses of digital silence from 0 to 6 s, so that
// a file is cut into several pieces and holds spans of speech of many
// lengths. The whole 122.1 s as 16 kHz mono; its first 40 s; and the
// whole as 48 kHz stereo 24-bit (each sample three times; the right
// channel at half the level), which both paths read through the same
// mixing and resampling. Made once for the suite.
func pausedSpeechWAVs(t testing.TB) []pausedFile {
	t.Helper()
	pausedOnce.Do(func() {
		jfk, _, err := wav.ReadFile16k(world.jfk, 60*pcm.SampleRate)
		if err != nil {
			pausedOnce.err = err
			return
		}
		speech := pcm.FromFloat32(nil, jfk)
		var out []int16
		for _, p := range []struct{ speech, pause time.Duration }{
			{11 * time.Second, time.Second}, {5 * time.Second, 3 * time.Second},
			{8 * time.Second, 400 * time.Millisecond}, {11 * time.Second, 6 * time.Second},
			{3 * time.Second, 2 * time.Second}, {11 * time.Second, 700 * time.Millisecond},
			{7 * time.Second, 4 * time.Second}, {11 * time.Second, 1500 * time.Millisecond},
			{6 * time.Second, 0}, {11 * time.Second, 2500 * time.Millisecond},
			{9 * time.Second, 5 * time.Second}, {2 * time.Second, time.Second},
		} {
			out = append(out, speech[:min(len(speech), pcm.Samples(p.speech))]...)
			out = append(out, make([]int16, pcm.Samples(p.pause))...)
		}
		if pausedOnce.dir, err = os.MkdirTemp("", "yazses-paused-"); err != nil {
			pausedOnce.err = err
			return
		}
		write := func(name string, rate, channels, bits int, data []byte, ms int64) {
			if pausedOnce.err != nil {
				return
			}
			p := filepath.Join(pausedOnce.dir, name+".wav")
			pausedOnce.err = os.WriteFile(p, append(wavHeader(rate, channels, bits, len(data)), data...), 0o644)
			pausedOnce.files = append(pausedOnce.files, pausedFile{name, p, ms})
		}
		write("122s-16k-mono", pcm.SampleRate, 1, 16, pcm.Encode(nil, out), pcm.Millis(len(out)))
		write("40s-16k-mono", pcm.SampleRate, 1, 16, pcm.Encode(nil, out[:pcm.Samples(40*time.Second)]), 40000)
		var b []byte
		for _, v := range out {
			for range 3 {
				l, r := int32(v)<<8, int32(v)<<7
				b = append(b, byte(l), byte(l>>8), byte(l>>16), byte(r), byte(r>>8), byte(r>>16))
			}
		}
		write("122s-48k-stereo-24bit", 48000, 2, 24, b, pcm.Millis(len(out)))
	})
	if pausedOnce.err != nil {
		t.Fatalf("paused speech WAVs: %v", pausedOnce.err)
	}
	return pausedOnce.files
}

// wavHeader is the header of a PCM WAV file of n data bytes.
func wavHeader(rate, channels, bits, n int) []byte {
	le := binary.LittleEndian
	h := append([]byte(nil), "RIFF"...)
	h = le.AppendUint32(h, uint32(36+n))
	h = append(h, "WAVEfmt "...)
	h = le.AppendUint32(h, 16)
	h = le.AppendUint16(h, 1) // PCM
	h = le.AppendUint16(h, uint16(channels))
	h = le.AppendUint32(h, uint32(rate))
	h = le.AppendUint32(h, uint32(rate*channels*bits/8))
	h = le.AppendUint16(h, uint16(channels*bits/8))
	h = le.AppendUint16(h, uint16(bits))
	h = append(h, "data"...)
	return le.AppendUint32(h, uint32(n))
}

// TestTranscribeSameOnDaemonAndLocally: the same file with the same
// settings gives the same transcript, text and timed segments, through the
// daemon's resident decoder (yazsesd ctl transcribe) and through yaz-mcp's
// own decoder (no daemon), with the energy detector and with Silero, for
// files of speech with pauses of several lengths, rates and layouts.
// They used to differ with Silero: yaz-mcp ran yaz-decode on the whole
// file, which then decodes speech spans grouped up to 29 s, where the
// daemon decodes 30 s pieces (on a 10-minute file 19 segments against
// 27). The real decoder on the generated model: any difference in the
// pieces or their settings changes its output.
func TestTranscribeSameOnDaemonAndLocally(t *testing.T) {
	t.Parallel()
	files := pausedSpeechWAVs(t)
	for _, engine := range []string{"energy", "silero"} {
		t.Run(engine, func(t *testing.T) {
			cfg := baseConfig().With("vad.engine", q(engine))
			if engine == "silero" {
				cfg = cfg.With("vad.model", q(sileroModel(t)))
			}
			d := startDaemon(t, cfg)
			// yaz-mcp with the same [decode] and [vad], never the daemon.
			home := t.TempDir()
			writeUserConfig(t, home, toml{"decode": cfg["decode"], "vad": cfg["vad"]})
			noHostDaemon(t)
			cs, _, _ := sdkSession(t, hostEnv(home, "YAZ_MCP_DAEMON=never"), "", nil)
			for _, f := range files {
				t.Run(f.name, func(t *testing.T) {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
					defer cancel()
					params, _ := json.Marshal(daemonapi.TranscribeParams{Path: f.path})
					out, stderr, code := d.Ctl(ctx, "transcribe", string(params))
					if code != 0 {
						t.Fatalf("yazsesd ctl transcribe: exit %d: %s\n%s", code, stderr, d.LogTail(20))
					}
					var onDaemon daemonapi.TranscribeResult
					if err := json.Unmarshal([]byte(out), &onDaemon); err != nil {
						t.Fatalf("ctl transcribe printed %q: %v", out, err)
					}
					r := callTool(t, cs, "transcribe", map[string]any{"path": f.path})
					if r.IsError {
						t.Fatalf("yaz-mcp transcribe: %s", resultText(r))
					}
					var local mcpTranscript
					structuredInto(t, r, &local)

					type seg struct {
						StartMs, EndMs int64
						Text           string
					}
					daemonSegs, localSegs := []seg{}, []seg{}
					for _, s := range onDaemon.Segments {
						daemonSegs = append(daemonSegs, seg{s.StartMs, s.EndMs, s.Text})
					}
					for _, s := range local.Segments {
						localSegs = append(localSegs, seg{s.StartMs, s.EndMs, s.Text})
					}
					t.Logf("%d segments on the daemon, %d locally", len(daemonSegs), len(localSegs))
					if onDaemon.Text == "" || len(daemonSegs) < 2 {
						t.Fatalf("the daemon's transcript has %d segments and text %q: too little to compare", len(daemonSegs), onDaemon.Text)
					}
					if diff := cmp.Diff(daemonSegs, localSegs); diff != "" {
						t.Errorf("segments differ (-daemon +local):\n%s", diff)
					}
					if onDaemon.Text != local.Text {
						t.Errorf("text differs:\ndaemon: %q\nlocal:  %q", onDaemon.Text, local.Text)
					}
					if onDaemon.AudioMs != f.ms || local.AudioMs != f.ms {
						t.Errorf("audio_ms %d on the daemon, %d locally, want %d", onDaemon.AudioMs, local.AudioMs, f.ms)
					}
				})
			}
		})
	}
}
