// Package transcript holds timed transcript segments and writes them in the
// output formats of yaz-decode: plain text, JSON, SubRip (SRT) and WebVTT.
//
// Text is written as whisper produced it (trimmed of surrounding spaces):
// transcripts are untrusted data for whoever reads them, and this package
// never rewrites them beyond that.
package transcript

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// Segment is one timed piece of a transcript.
type Segment struct {
	Start time.Duration
	End   time.Duration
	Text  string
	// Tokens are the segment's text in the pieces the engine decoded,
	// each with its time, when they were asked for (asr.Options.TokenTimes);
	// their texts joined are Text. They are never written out: yaz-decode
	// uses them to split a segment that crosses a long pause.
	Tokens []Token
}

// Token is one timed piece of a segment's text: its text as decoded (a
// leading space where a word starts) and the time it was heard.
type Token struct {
	Start time.Duration
	End   time.Duration
	Text  string
}

// Formats lists the names accepted by Write, in documentation order.
var Formats = []string{"txt", "json", "srt", "vtt"}

// Text joins the segments' texts with single spaces.
func Text(segs []Segment) string {
	var b strings.Builder
	for _, s := range segs {
		t := strings.TrimSpace(s.Text)
		if t == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t)
	}
	return b.String()
}

// JSONSegment is the JSON form of a segment, times in milliseconds.
type JSONSegment struct {
	StartMs int64  `json:"start_ms"`
	EndMs   int64  `json:"end_ms"`
	Text    string `json:"text"`
}

// JSONDoc is the JSON form of a whole transcript.
type JSONDoc struct {
	File     string        `json:"file,omitempty"`
	Language string        `json:"language,omitempty"`
	AudioMs  int64         `json:"audio_ms"`
	Text     string        `json:"text"`
	Segments []JSONSegment `json:"segments"`
	// Truncated: the file ends before the audio its header declares (an
	// interrupted download); the transcript is of the audio it holds.
	Truncated bool `json:"truncated,omitempty"`
}

// ToJSON converts segments to their JSON form.
func ToJSON(segs []Segment) []JSONSegment {
	out := make([]JSONSegment, 0, len(segs))
	for _, s := range segs {
		t := strings.TrimSpace(s.Text)
		if t == "" {
			continue
		}
		out = append(out, JSONSegment{StartMs: s.Start.Milliseconds(), EndMs: s.End.Milliseconds(), Text: t})
	}
	return out
}

// Write writes segs to w in format (one of Formats). doc supplies the
// file-level JSON fields; its Text and Segments are filled in here.
func Write(w io.Writer, format string, segs []Segment, doc JSONDoc) error {
	switch format {
	case "txt":
		t := Text(segs)
		if t == "" {
			return nil
		}
		_, err := fmt.Fprintln(w, t)
		return err
	case "json":
		doc.Text = Text(segs)
		doc.Segments = ToJSON(segs)
		return json.NewEncoder(w).Encode(doc)
	case "srt":
		return writeCues(w, segs, false)
	case "vtt":
		if _, err := io.WriteString(w, "WEBVTT\n\n"); err != nil {
			return err
		}
		return writeCues(w, segs, true)
	default:
		return fmt.Errorf("unknown output format %q (want one of %s)", format, strings.Join(Formats, ", "))
	}
}

func writeCues(w io.Writer, segs []Segment, vtt bool) error {
	n := 0
	var last time.Duration
	for _, s := range segs {
		t := strings.TrimSpace(s.Text)
		if t == "" {
			continue
		}
		start, end := s.Start, s.End
		// Cues must not run backwards or overlap: players reject or reorder them.
		if start < last {
			start = last
		}
		if end <= start {
			end = start + time.Millisecond
		}
		last = end
		n++
		// A blank line ends a cue in both formats: fold line breaks inside text.
		t = strings.Join(strings.Fields(t), " ")
		var err error
		if vtt {
			_, err = fmt.Fprintf(w, "%s --> %s\n%s\n\n", stamp(start, '.'), stamp(end, '.'), t)
		} else {
			_, err = fmt.Fprintf(w, "%d\n%s --> %s\n%s\n\n", n, stamp(start, ','), stamp(end, ','), t)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// stamp formats d as HH:MM:SS,mmm (SRT) or HH:MM:SS.mmm (WebVTT).
func stamp(d time.Duration, sep byte) string {
	if d < 0 {
		d = 0
	}
	ms := d.Milliseconds()
	h := ms / 3600000
	m := ms / 60000 % 60
	s := ms / 1000 % 60
	return fmt.Sprintf("%02d:%02d:%02d%c%03d", h, m, s, sep, ms%1000)
}
