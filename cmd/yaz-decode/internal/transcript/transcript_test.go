package transcript

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var segs = []Segment{
	{Start: 0, End: 1500 * time.Millisecond, Text: " And so my fellow Americans,"},
	{Start: 1500 * time.Millisecond, End: 3*time.Second + 250*time.Millisecond, Text: "  "},
	{Start: 3 * time.Second, End: 3723*time.Second + 45*time.Millisecond, Text: "ask not\n\nwhat"},
}

func TestWrite(t *testing.T) {
	tests := []struct {
		format string
		want   string
	}{
		{"txt", "And so my fellow Americans, ask not\n\nwhat\n"},
		{"srt", "1\n00:00:00,000 --> 00:00:01,500\nAnd so my fellow Americans,\n\n" +
			"2\n00:00:03,000 --> 01:02:03,045\nask not what\n\n"},
		{"vtt", "WEBVTT\n\n00:00:00.000 --> 00:00:01.500\nAnd so my fellow Americans,\n\n" +
			"00:00:03.000 --> 01:02:03.045\nask not what\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			var b bytes.Buffer
			if err := Write(&b, tt.format, segs, JSONDoc{}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, b.String()); diff != "" {
				t.Errorf("Write(%s) mismatch (-want +got):\n%s", tt.format, diff)
			}
		})
	}
}

func TestWriteJSON(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, "json", segs, JSONDoc{File: "a.wav", AudioMs: 4000}); err != nil {
		t.Fatal(err)
	}
	var got JSONDoc
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, b.String())
	}
	want := JSONDoc{File: "a.wav", AudioMs: 4000, Text: "And so my fellow Americans, ask not\n\nwhat",
		Segments: []JSONSegment{{0, 1500, "And so my fellow Americans,"}, {3000, 3723045, "ask not\n\nwhat"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("json mismatch (-want +got):\n%s", diff)
	}
}

func TestCuesNeverOverlap(t *testing.T) {
	var b bytes.Buffer
	in := []Segment{{Start: 2 * time.Second, End: 3 * time.Second, Text: "a"}, {Start: time.Second, End: time.Second, Text: "b"}}
	if err := Write(&b, "srt", in, JSONDoc{}); err != nil {
		t.Fatal(err)
	}
	want := "1\n00:00:02,000 --> 00:00:03,000\na\n\n2\n00:00:03,000 --> 00:00:03,001\nb\n\n"
	if b.String() != want {
		t.Errorf("srt = %q, want %q", b.String(), want)
	}
}

func TestUnknownFormat(t *testing.T) {
	if err := Write(&bytes.Buffer{}, "docx", segs, JSONDoc{}); err == nil {
		t.Error("Write(docx) = nil error, want an error")
	}
}
