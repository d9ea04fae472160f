package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/frame"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/wav"
)

// histories are the orders in which the same note is decoded: alone, after
// a long file (full audio context) and after a short one (a smaller trimmed
// context than the note's). Transcription must be a function of the audio
// and the settings only, whatever the process decoded before.
var histories = []struct {
	name   string
	before func(long, short string) []string
}{
	{"alone", func(long, short string) []string { return nil }},
	{"after a long file", func(long, short string) []string { return []string{long} }},
	{"after a short file", func(long, short string) []string { return []string{short} }},
	{"after long and short", func(long, short string) []string { return []string{long, short} }},
}

// determinismFiles writes the note (jfk.wav, 11 s), a 66 s file and a 3 s
// file.
func determinismFiles(t *testing.T) (note, long, short string) {
	dir := t.TempDir()
	return world.jfk, jfkOfLength(t, dir, 66), jfkOfLength(t, dir, 3)
}

// TestDecodeFilesDeterministic: `yaz-decode note.wav` and `yaz-decode
// meeting.wav note.wav` print the same segments for note.wav.
func TestDecodeFilesDeterministic(t *testing.T) {
	note, long, short := determinismFiles(t)
	var want []jsonSegment
	for _, h := range histories {
		t.Run(h.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			files := append(h.before(long, short), note)
			args := append([]string{"-m", world.tinyEn, "-t", "2", "--no-speech-threshold", "1", "-o", "json"}, files...)
			stdout, stderr, code := command(t, ctx, nil, "yaz-decode", args...)
			if code != 0 {
				t.Fatalf("yaz-decode %v: exit %d\n%s", files, code, tail(stderr, 10))
			}
			lines := strings.Split(strings.TrimSpace(stdout), "\n")
			if len(lines) != len(files) {
				t.Fatalf("%d JSON documents for %d files", len(lines), len(files))
			}
			var doc jsonDoc
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &doc); err != nil || doc.File != note {
				t.Fatalf("last document %q is not the note's: %v", lines[len(lines)-1], err)
			}
			if len(doc.Segments) == 0 {
				t.Fatal("no segments for the note: the comparison proves nothing")
			}
			if want == nil {
				want = doc.Segments
				return
			}
			if diff := cmp.Diff(want, doc.Segments); diff != "" {
				t.Errorf("the note decoded %s differs from the note decoded alone (-alone +now):\n%s", h.name, diff)
			}
		})
	}
}

// TestDecodeServeDeterministic: the resident decoder of `yaz-decode --serve`
// answers the same segments for the same utterance whatever it decoded
// before, and the same as files mode.
func TestDecodeServeDeterministic(t *testing.T) {
	note, long, short := determinismFiles(t)
	read := func(path string) []int16 {
		f32, _, err := wav.ReadFile16k(path, 120*pcm.SampleRate)
		if err != nil {
			t.Fatal(err)
		}
		return pcm.FromFloat32(nil, f32)
	}
	order := []string{note, long, note, short, note, long, short, note}
	var in bytes.Buffer
	w := frame.NewWriter(&in)
	for _, p := range order {
		if err := w.Audio(read(p)); err != nil {
			t.Fatal(err)
		}
		if err := w.End(); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin("yaz-decode"), "--serve", "-m", world.tinyEn, "-t", "2", "--no-speech-threshold", "1")
	cmd.Stdin = &in
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("yaz-decode --serve: %v\n%s", err, tail(errb.String(), 10))
	}
	var results []frame.Result
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var r frame.Result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("result line %q: %v", sc.Text(), err)
		}
		results = append(results, r)
	}
	if len(results) != len(order) {
		t.Fatalf("%d results for %d utterances", len(results), len(order))
	}
	var first []frame.Segment
	for i, p := range order {
		r := results[i]
		if r.Utt != i+1 || r.Error != "" {
			t.Fatalf("result %d = utt %d error %q", i, r.Utt, r.Error)
		}
		if p != note {
			continue
		}
		if first == nil {
			first = r.Segments
			if len(first) == 0 {
				t.Fatal("no segments for the note: the comparison proves nothing")
			}
			continue
		}
		if diff := cmp.Diff(first, r.Segments); diff != "" {
			t.Errorf("utterance %d (the note after %s) differs from utterance 1 (-first +now):\n%s", i+1, filepath.Base(order[i-1]), diff)
		}
	}
	// Files mode on the same model gives the same segments.
	stdout, stderr, code := command(t, ctx, nil, "yaz-decode", "-m", world.tinyEn, "-t", "2", "--no-speech-threshold", "1", "-o", "json", note)
	if code != 0 {
		t.Fatalf("yaz-decode: exit %d\n%s", code, tail(stderr, 10))
	}
	var doc jsonDoc
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	var fileSegs []frame.Segment
	for _, s := range doc.Segments {
		fileSegs = append(fileSegs, frame.Segment{StartMs: s.StartMs, EndMs: s.EndMs, Text: s.Text})
	}
	if diff := cmp.Diff(fileSegs, first); diff != "" {
		t.Errorf("--serve and files mode differ on the note (-files +serve):\n%s", diff)
	}
}

// TestDaemonTranscribeDeterministic: the daemon's resident decoder gives
// the same transcript of a file whatever it decoded before (`transcribe`
// on the socket, and `yazsesd ctl transcribe`).
func TestDaemonTranscribeDeterministic(t *testing.T) {
	t.Parallel()
	note, long, short := determinismFiles(t)
	d := startDaemon(t, baseConfig().
		With("decode.model", q(world.tinyEn)).
		With("decode.threads", "2"))
	c := d.Client()
	transcribe := func(path string) []jsonSegment {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		r, err := c.Transcribe(ctx, path)
		if err != nil {
			t.Fatalf("transcribe %s: %v\n%s", path, err, d.LogTail(20))
		}
		var segs []jsonSegment
		for _, s := range r.Segments {
			segs = append(segs, jsonSegment{StartMs: s.StartMs, EndMs: s.EndMs, Text: s.Text})
		}
		return segs
	}
	want := transcribe(note)
	if len(want) == 0 {
		t.Fatal("no segments for the note: the comparison proves nothing")
	}
	for _, h := range histories[1:] {
		for _, p := range h.before(long, short) {
			transcribe(p)
		}
		if diff := cmp.Diff(want, transcribe(note)); diff != "" {
			t.Errorf("the note transcribed %s differs from the first time (-first +now):\n%s", h.name, diff)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	transcribe(long)
	params, _ := json.Marshal(daemonapi.TranscribeParams{Path: note})
	stdout, stderr, code := d.Ctl(ctx, "transcribe", string(params))
	if code != 0 {
		t.Fatalf("yazsesd ctl transcribe: exit %d\n%s", code, stderr)
	}
	var r daemonapi.TranscribeResult
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("yazsesd ctl transcribe printed %q: %v", stdout, err)
	}
	var got []jsonSegment
	for _, s := range r.Segments {
		got = append(got, jsonSegment{StartMs: s.StartMs, EndMs: s.EndMs, Text: s.Text})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("yazsesd ctl transcribe of the note after a long file differs (-first +now):\n%s", diff)
	}
}
