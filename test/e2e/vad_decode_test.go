package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/pcm"
)

// decodeRun is one run of the real yaz-decode at debug level with JSON
// logs: its stdout, its log records and its exit code.
type decodeRun struct {
	stdout string
	recs   []map[string]any
	code   int
	stderr string
}

// runDecode runs yaz-decode on the generated tiny.en-sized model with the
// given detector arguments, on a file (file != "") or in stream mode (the
// samples as raw PCM on stdin).
func runDecode(t *testing.T, file string, stream []float32, args ...string) decodeRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	all := append([]string{"-m", world.tinyEn, "-t", "2", "--log-level", "debug", "--log-format", "json"}, args...)
	var stdin []byte
	if file != "" {
		all = append(all, file)
	} else {
		stdin = pcm.Encode(nil, pcm.FromFloat32(nil, stream))
	}
	stdout, stderr, code := command(t, ctx, stdin, "yaz-decode", all...)
	return decodeRun{stdout: stdout, recs: logRecords(t, stderr), code: code, stderr: stderr}
}

// detectorSaid fails the test unless the run said it used Silero: a test of
// the detector that ran the energy one proves nothing.
func (r decodeRun) detectorSaid(t *testing.T, want string) {
	t.Helper()
	said := withMsg(r.recs, "voice detector: Silero VAD")
	if want == "energy" {
		said = nil
		for _, rec := range r.recs {
			if rec["vad"] == "energy" {
				said = append(said, rec)
			}
		}
	}
	if len(said) != 1 {
		t.Fatalf("the run did not say once that the %s detector runs:\n%s", want, tail(r.stderr, 20))
	}
}

// noises are ten seconds each of what a microphone or a file may hold
// without anyone speaking.
func noises() []struct {
	name  string
	audio []float32
} {
	rng := rand.New(rand.NewPCG(13, 13))
	return []struct {
		name  string
		audio []float32
	}{
		{"digital silence", zeros(10)},
		{"white -60 dBFS", whiteNoise(rng, 10, -60)},
		{"white -40 dBFS", whiteNoise(rng, 10, -40)},
		{"white -20 dBFS", whiteNoise(rng, 10, -20)},
		{"pink -50 dBFS", pinkNoise(rng, 10, -50)},
		{"pink -30 dBFS", pinkNoise(rng, 10, -30)},
		{"pink -15 dBFS", pinkNoise(rng, 10, -15)},
		{"hum 50 Hz -25 dBFS", mainsHum(10, -25)},
		{"zeros then pink -25 dBFS", join(zeros(3), pinkNoise(rng, 7, -25))},
		{"zeros then white -30 dBFS", join(zeros(3), whiteNoise(rng, 7, -30))},
		{"clicks", clickTrain(rng, 10, 0.5)},
	}
}

// TestVADNoiseMakesNoText: with Silero, ten seconds of noise — digital
// silence, white and pink noise at several levels, mains hum, noise that
// starts abruptly after digital zeros, clicks — cut no utterance in stream
// mode and decode nothing in file mode, so whisper never runs and no line
// of text appears. The energy detector, on the same abrupt noise, does cut
// an utterance (its documented limit): the test tells the two apart.
func TestVADNoiseMakesNoText(t *testing.T) {
	vm := sileroModel(t)
	dir := t.TempDir()
	for _, n := range noises() {
		t.Run(n.name, func(t *testing.T) {
			s := runDecode(t, "", n.audio, "--vad", "silero", "--vad-model", vm, "--json")
			if s.code != 0 {
				t.Fatalf("stream: exit %d\n%s", s.code, tail(s.stderr, 10))
			}
			s.detectorSaid(t, "silero")
			if cut := withMsg(s.recs, "utterance cut"); len(cut) != 0 || s.stdout != "" {
				t.Errorf("stream: %d utterances cut, stdout %q; want none", len(cut), s.stdout)
			}
			if end := withMsg(s.recs, "stream ended"); len(end) != 1 || field(end[0], "utterances") != 0 {
				t.Errorf("stream ended records %v, want one with 0 utterances", end)
			}

			path := writeWAVFile(t, filepath.Join(dir, strings.ReplaceAll(n.name, " ", "_")+".wav"), n.audio)
			f := runDecode(t, path, nil, "--vad", "silero", "--vad-model", vm, "-o", "json", "--no-speech-threshold", "1")
			if f.code != 0 {
				t.Fatalf("file: exit %d\n%s", f.code, tail(f.stderr, 10))
			}
			f.detectorSaid(t, "silero")
			var doc jsonDoc
			if err := json.Unmarshal([]byte(f.stdout), &doc); err != nil {
				t.Fatalf("file: no JSON transcript: %v\n%s", err, f.stdout)
			}
			if doc.Text != "" || len(doc.Segments) != 0 || doc.AudioMs != 10000 {
				t.Errorf("file: transcript %+v, want 10 s of audio and no text", doc)
			}
			if d := withMsg(f.recs, "speech decoded"); len(d) != 0 {
				t.Errorf("file: whisper ran %d times, want none", len(d))
			}
			if len(withMsg(f.recs, "no speech in file: not decoded")) != 1 {
				t.Errorf("file: no record says the file was not decoded")
			}
			// And as text: nothing at all.
			txt := runDecode(t, path, nil, "--vad", "silero", "--vad-model", vm)
			if txt.code != 0 || txt.stdout != "" {
				t.Errorf("file as text: exit %d, stdout %q; want 0 and nothing", txt.code, txt.stdout)
			}

			if strings.HasPrefix(n.name, "zeros then") {
				e := runDecode(t, "", n.audio, "--vad", "energy", "--json")
				e.detectorSaid(t, "energy")
				if len(withMsg(e.recs, "utterance cut")) == 0 {
					t.Errorf("the energy detector cut no utterance from %s: this case no longer tells the detectors apart", n.name)
				}
			}
		})
	}
}

// speechInNoise is jfk.wav with pink noise 10 dB below its level mixed in,
// and 4 s of the same noise before and after; from and to are where the
// speech is, in milliseconds.
func speechInNoise(t *testing.T) (audio []float32, from, to int64) {
	speech := jfkSamples(t)
	rng := rand.New(rand.NewPCG(21, 21))
	lead := 4.0
	noise := pinkNoise(rng, lead+float64(len(speech))/sr+4, 20*math.Log10(rmsOf32(speech))-10)
	audio = append([]float32(nil), noise...)
	off := int(lead * sr)
	for i, x := range speech {
		audio[off+i] += x
	}
	f, e := soundExtent(speech)
	return audio, pcm.Millis(off + f), pcm.Millis(off + e)
}

// TestVADSpeechInNoise: speech under pink noise at 10 dB SNR still makes
// its utterances (stream mode) and its decoded spans (file mode), each
// starting inside the speech, not in the noise before it, and ending
// before the noise after it has gone on for long.
func TestVADSpeechInNoise(t *testing.T) {
	vm := sileroModel(t)
	audio, from, to := speechInNoise(t)
	const slack = 400 // ms: the pad (200 ms stream, 100 ms files) and the 32 ms windows
	s := runDecode(t, "", audio, "--vad", "silero", "--vad-model", vm, "--json")
	if s.code != 0 {
		t.Fatalf("stream: exit %d\n%s", s.code, tail(s.stderr, 10))
	}
	s.detectorSaid(t, "silero")
	cut := withMsg(s.recs, "utterance cut")
	if len(cut) == 0 {
		t.Fatalf("stream: no utterance cut from speech in noise\n%s", tail(s.stderr, 20))
	}
	for _, u := range cut {
		if st, end := int64(field(u, "start_ms")), int64(field(u, "end_ms")); st < from-slack || st > to || end > to+1500 {
			t.Errorf("stream: utterance [%d, %d] ms, want it to start inside the speech [%d, %d] ms", st, end, from, to)
		}
	}
	var lines []struct {
		StartMs int64 `json:"start_ms"`
	}
	for _, l := range strings.Split(strings.TrimSpace(s.stdout), "\n") {
		if l == "" {
			continue
		}
		var v struct {
			StartMs int64 `json:"start_ms"`
		}
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("stream: line %q: %v", l, err)
		}
		lines = append(lines, v)
	}
	for _, l := range lines {
		if l.StartMs < from-slack || l.StartMs > to {
			t.Errorf("stream: a line starts at %d ms, outside the speech [%d, %d] ms", l.StartMs, from, to)
		}
	}

	path := writeWAVFile(t, filepath.Join(t.TempDir(), "speech-in-noise.wav"), audio)
	f := runDecode(t, path, nil, "--vad", "silero", "--vad-model", vm, "-o", "json", "--no-speech-threshold", "1")
	if f.code != 0 {
		t.Fatalf("file: exit %d\n%s", f.code, tail(f.stderr, 10))
	}
	dec := withMsg(f.recs, "speech decoded")
	if len(dec) == 0 {
		t.Fatalf("file: nothing decoded from speech in noise\n%s", tail(f.stderr, 20))
	}
	for _, d := range dec {
		if a, b := int64(field(d, "from_ms")), int64(field(d, "to_ms")); a < from-slack || a > to || b > to+slack {
			t.Errorf("file: decoded [%d, %d] ms, want it inside the speech [%d, %d] ms", a, b, from, to)
		}
	}
	var doc jsonDoc
	if err := json.Unmarshal([]byte(f.stdout), &doc); err != nil {
		t.Fatalf("file: %v\n%s", err, f.stdout)
	}
	for _, sg := range doc.Segments {
		if sg.StartMs < from-slack || sg.EndMs > to+slack {
			t.Errorf("file: segment [%d, %d] ms outside the speech [%d, %d] ms", sg.StartMs, sg.EndMs, from, to)
		}
	}
}

var cueRE = regexp.MustCompile(`(?m)^(\d\d):(\d\d):(\d\d),(\d\d\d) --> (\d\d):(\d\d):(\d\d),(\d\d\d)$`)

func cueMs(m []string) int64 {
	var h, mi, s, ms int64
	fmt.Sscan(m[0], &h)
	fmt.Sscan(m[1], &mi)
	fmt.Sscan(m[2], &s)
	fmt.Sscan(m[3], &ms)
	return ((h*60+mi)*60+s)*1000 + ms
}

// TestVADFileTimestamps: jfk.wav, 20 s of silence, jfk.wav again, as SRT:
// only the speech is decoded (both copies in one group, the silence a
// short stitch), and every cue lies inside one of the two stretches of
// speech of the file's own timeline — none covers the silence, and none
// is left at its place in the decoded audio. The cues follow each other
// in time, and whisper-cli --vad is the oracle for where the speech
// starts and ends on the file's timeline: the first cue starts, and the
// last one ends, where its first and last segments do (the words after
// the pause keep their time; an earlier version put them all before it).
func TestVADFileTimestamps(t *testing.T) {
	vm := sileroModel(t)
	speech := jfkSamples(t)
	audio := join(speech, zeros(20), speech)
	path := writeWAVFile(t, filepath.Join(t.TempDir(), "jfk-gap-jfk.wav"), audio)
	f, e := soundExtent(speech)
	second := len(speech) + 20*sr
	const slack = 150 // ms: the 100 ms pad and a window
	islands := [][2]int64{
		{pcm.Millis(f) - slack, pcm.Millis(e) + slack},
		{pcm.Millis(second+f) - slack, pcm.Millis(second+e) + slack},
	}
	r := runDecode(t, path, nil, "--vad", "silero", "--vad-model", vm, "-o", "srt", "--no-speech-threshold", "1")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, tail(r.stderr, 10))
	}
	r.detectorSaid(t, "silero")
	cues := cueRE.FindAllStringSubmatch(r.stdout, -1)
	if len(cues) == 0 {
		t.Fatalf("no cue in the SRT:\n%s", r.stdout)
	}
	var prevEnd int64
	for _, c := range cues {
		a, b := cueMs(c[1:5]), cueMs(c[5:9])
		inside := false
		for _, is := range islands {
			inside = inside || is[0] <= a && b <= is[1]
		}
		if !inside || b < a {
			t.Errorf("cue %s --> %s [%d, %d] ms lies outside the speech %v ms", c[0][:12], c[0][17:], a, b, islands)
		}
		if a < prevEnd {
			t.Errorf("cue %s --> %s starts before the cue before it ends (%d ms)", c[0][:12], c[0][17:], prevEnd)
		}
		prevEnd = b
	}
	cli := whisperCLIVAD(t, path, vm)
	const near = 300 // ms: the pads differ (whisper.cpp 30 ms, yaz-decode 100 ms), and a window
	first, last := cueMs(cues[0][1:5]), cueMs(cues[len(cues)-1][5:9])
	if d := first - cli[0].Offsets.From; d < -near || d > near {
		t.Errorf("the first cue starts at %d ms; whisper-cli --vad starts at %d ms", first, cli[0].Offsets.From)
	}
	if d := last - cli[len(cli)-1].Offsets.To; d < -near || d > near {
		t.Errorf("the last cue ends at %d ms; whisper-cli --vad ends at %d ms (the speech after the pause lost its time)\n%s",
			last, cli[len(cli)-1].Offsets.To, r.stdout)
	}
	dec := withMsg(r.recs, "speech decoded")
	var decodedMs int64
	for _, d := range dec {
		decodedMs += int64(field(d, "audio_ms"))
	}
	if len(dec) != 1 || decodedMs > pcm.Millis(2*(e-f))+1000 {
		t.Errorf("decoded %d groups, %d ms of audio; want one group of the speech only (about %d ms)", len(dec), decodedMs, pcm.Millis(2*(e-f)))
	}
}

// whisperCLIVAD runs whisper-cli --vad with the Silero model vm on path
// (the tiny.en-sized model, greedy, as runDecode decodes) and returns its
// segments with text, times on the file's timeline.
func whisperCLIVAD(t *testing.T, path, vm string) []cliSegment {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "cli")
	cmd := exec.CommandContext(ctx, world.whisperCLI, "-m", world.tinyEn, "-f", path, "-t", "2", "-bs", "1", "-sns", "-np",
		"--vad", "-vm", vm, "-oj", "-of", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("whisper-cli --vad: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var doc cliJSON
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("whisper-cli JSON: %v", err)
	}
	var segs []cliSegment
	for _, s := range doc.Transcription {
		if strings.TrimSpace(s.Text) != "" {
			segs = append(segs, s)
		}
	}
	if len(segs) == 0 {
		t.Fatalf("whisper-cli --vad printed no segments: the oracle proves nothing")
	}
	return segs
}

// TestVADFallbackToEnergy: with no model file at the default path,
// --vad auto (the default) runs the energy detector and says so in one
// INFO line that names the command that fetches the model; files and
// streams still decode.
func TestVADFallbackToEnergy(t *testing.T) {
	dir := t.TempDir()
	path := writeWAVFile(t, filepath.Join(dir, "jfk.wav"), jfkSamples(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, mode := range []string{"file", "stream"} {
		t.Run(mode, func(t *testing.T) {
			cmd := exec.CommandContext(ctx, bin("yaz-decode"), "-m", world.mini, "-t", "2")
			for _, kv := range os.Environ() {
				if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "YAZ_VAD") && k != "XDG_DATA_HOME" {
					cmd.Env = append(cmd.Env, kv)
				}
			}
			cmd.Env = append(cmd.Env, "XDG_DATA_HOME="+dir)
			if mode == "file" {
				cmd.Args = append(cmd.Args, path)
			} else {
				cmd.Stdin = strings.NewReader(string(pcm.Encode(nil, pcm.FromFloat32(nil, jfkSamples(t)))))
			}
			var out, errb strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v\n%s", err, errb.String())
			}
			lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
			want := filepath.Join(dir, "yazses", "models", "ggml-silero-v5.1.2.bin")
			if len(lines) != 1 || !strings.Contains(lines[0], "level=INFO") || !strings.Contains(lines[0], "yaz-fetch-model silero-v5.1.2") ||
				!strings.Contains(lines[0], "vad=energy") || !strings.Contains(lines[0], want) {
				t.Errorf("stderr %q, want one INFO line that the energy detector runs, naming %s and yaz-fetch-model silero-v5.1.2", errb.String(), want)
			}
			if strings.TrimSpace(out.String()) == "" {
				t.Errorf("no transcript with the energy detector")
			}
		})
	}
}
