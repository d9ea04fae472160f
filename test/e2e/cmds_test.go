package e2e

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

var scriptCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"subs":     cmdSubs,
	"jsonl":    cmdJSONL,
	"pcmstats": cmdPCMStats,
	"mkwav":    cmdMkWAV,
	"lines":    cmdLines,
}

// lines FILE N: FILE (stdout, stderr or a file) has exactly N lines.
func cmdLines(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: lines FILE N")
	}
	want, _ := strconv.Atoi(args[1])
	got := strings.Count(ts.ReadFile(args[0]), "\n")
	if (got == want) == neg {
		ts.Fatalf("%s has %d lines, want %d", args[0], got, want)
	}
}

var cueRe = regexp.MustCompile(`^(\d\d):(\d\d):(\d\d)[,.](\d\d\d) --> (\d\d):(\d\d):(\d\d)[,.](\d\d\d)$`)

func stampOf(m []string) time.Duration {
	h, _ := strconv.Atoi(m[0])
	mi, _ := strconv.Atoi(m[1])
	s, _ := strconv.Atoi(m[2])
	ms, _ := strconv.Atoi(m[3])
	return time.Duration(h)*time.Hour + time.Duration(mi)*time.Minute + time.Duration(s)*time.Second + time.Duration(ms)*time.Millisecond
}

// subs srt|vtt FILE MINCUES: the file is well-formed SubRip or WebVTT with at
// least MINCUES cues whose times never run backwards.
func cmdSubs(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: subs srt|vtt FILE MINCUES")
	}
	data := ts.ReadFile(args[1])
	min, _ := strconv.Atoi(args[2])
	lines := strings.Split(data, "\n")
	if args[0] == "vtt" {
		if len(lines) == 0 || lines[0] != "WEBVTT" {
			ts.Fatalf("%s: no WEBVTT line", args[1])
		}
	}
	var last time.Duration
	cues := 0
	for i, l := range lines {
		m := cueRe.FindStringSubmatch(l)
		if m == nil {
			if strings.Contains(l, "-->") {
				ts.Fatalf("%s:%d: bad cue timing %q", args[1], i+1, l)
			}
			continue
		}
		start, end := stampOf(m[1:5]), stampOf(m[5:9])
		if start < last || end <= start {
			ts.Fatalf("%s:%d: cue %s runs backwards (previous end %s)", args[1], i+1, l, last)
		}
		if args[0] == "srt" && (i == 0 || lines[i-1] != strconv.Itoa(cues+1)) {
			ts.Fatalf("%s:%d: cue not numbered %d", args[1], i+1, cues+1)
		}
		if i+1 >= len(lines) || strings.TrimSpace(lines[i+1]) == "" {
			ts.Fatalf("%s:%d: cue without text", args[1], i+1)
		}
		last = end
		cues++
	}
	if cues < min {
		ts.Fatalf("%s: %d cues, want at least %d", args[1], cues, min)
	}
}

// jsonl FILE N [FIELD...]: FILE holds exactly N JSON objects, one per line,
// each with the named fields.
func cmdJSONL(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: jsonl FILE N [FIELD...]")
	}
	want, _ := strconv.Atoi(args[1])
	n := 0
	sc := bufio.NewScanner(strings.NewReader(ts.ReadFile(args[0])))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var obj map[string]any
		if err := json.Unmarshal(sc.Bytes(), &obj); err != nil {
			ts.Fatalf("%s line %d: %v", args[0], n+1, err)
		}
		for _, f := range args[2:] {
			if _, ok := obj[f]; !ok {
				ts.Fatalf("%s line %d: no field %q", args[0], n+1, f)
			}
		}
		n++
	}
	if (n == want) == neg {
		ts.Fatalf("%s: %d JSON lines, want %d", args[0], n, want)
	}
}

// pcmstats FILE MINSEC MAXSEC MINRMS: FILE is raw s16le 16 kHz PCM (or WAV,
// header skipped) lasting MINSEC..MAXSEC seconds with at least MINRMS RMS
// (full scale 1.0).
func cmdPCMStats(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 4 {
		ts.Fatalf("usage: pcmstats FILE MINSEC MAXSEC MINRMS")
	}
	data := []byte(ts.ReadFile(args[0]))
	if bytes.HasPrefix(data, []byte("RIFF")) && len(data) >= 44 {
		data = data[44:]
	}
	if len(data)%2 != 0 {
		ts.Fatalf("%s: %d bytes: half a sample at the end", args[0], len(data))
	}
	var sum float64
	n := len(data) / 2
	for i := 0; i < n; i++ {
		v := float64(int16(binary.LittleEndian.Uint16(data[2*i:]))) / 32768
		sum += v * v
	}
	secs := float64(n) / 16000
	rms := 0.0
	if n > 0 {
		rms = math.Sqrt(sum / float64(n))
	}
	lo, _ := strconv.ParseFloat(args[1], 64)
	hi, _ := strconv.ParseFloat(args[2], 64)
	minRMS, _ := strconv.ParseFloat(args[3], 64)
	ok := secs >= lo && secs <= hi && rms >= minRMS
	ts.Logf("%s: %.3f s, rms %.4f", args[0], secs, rms)
	if ok == neg {
		ts.Fatalf("%s: %.3f s (want %g..%g), rms %.4f (want >= %g)", args[0], secs, lo, hi, rms, minRMS)
	}
}

// mkwav FILE KIND SECONDS: write a 16 kHz mono WAV of silence, low noise or a
// tone.
func cmdMkWAV(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: mkwav FILE silence|noise|tone SECONDS")
	}
	secs, err := strconv.ParseFloat(args[2], 64)
	if err != nil {
		ts.Fatalf("mkwav: %v", err)
	}
	n := int(secs * 16000)
	var body bytes.Buffer
	seed := uint32(1)
	for i := 0; i < n; i++ {
		var v float64
		switch args[1] {
		case "silence":
		case "noise": // steady fan-like noise at about -50 dBFS
			seed = seed*1664525 + 1013904223
			v = (float64(seed>>16)/65536 - 0.5) * 0.01
		case "tone":
			v = 0.3 * math.Sin(2*math.Pi*440*float64(i)/16000)
		default:
			ts.Fatalf("mkwav: unknown kind %q", args[1])
		}
		binary.Write(&body, binary.LittleEndian, int16(v*32767))
	}
	var f bytes.Buffer
	f.WriteString("RIFF")
	binary.Write(&f, binary.LittleEndian, uint32(36+body.Len()))
	f.WriteString("WAVEfmt ")
	for _, v := range []any{uint32(16), uint16(1), uint16(1), uint32(16000), uint32(32000), uint16(2), uint16(16)} {
		binary.Write(&f, binary.LittleEndian, v)
	}
	f.WriteString("data")
	binary.Write(&f, binary.LittleEndian, uint32(body.Len()))
	f.Write(body.Bytes())
	if err := os.WriteFile(ts.MkAbs(args[0]), f.Bytes(), 0o644); err != nil {
		ts.Fatalf("mkwav: %v", err)
	}
}
