package modelfile

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/walk.golden")

// TestWalkGolden pins what Read says about every model kind and a sweep of
// broken files (cut at many points, each header integer and the first
// tensor headers changed to odd values): the result or the exact error,
// line by line against testdata/walk.golden, written by the header walks
// before whisper's and Parakeet's shared their steps. A change in what any
// walk accepts, refuses or says shows here; -update rewrites the file.
func TestWalkGolden(t *testing.T) {
	var out strings.Builder
	for _, m := range []struct {
		name string
		b    []byte
	}{
		{"whisper", miniModel(t)},
		{"parakeet", parakeetModel(t)},
		{"vad", vadFile(nil)},
	} {
		full := m.b
		say := func(what string, b []byte) {
			info, err := read(b)
			fmt.Fprintf(&out, "%s %s: %s\n", m.name, what, describeResult(info, err))
			if m.name == "vad" {
				_, err := CheckVADData("v.bin", b)
				fmt.Fprintf(&out, "%s %s full: %v\n", m.name, what, err)
			}
		}
		say("whole", full)
		for c := 0; c < len(full); c += max(1, min(c/4, len(full)/61)) {
			say(fmt.Sprintf("cut %d", c), full[:c])
		}
		// Each header integer (and a few after), then the fields of the
		// first three tensor headers.
		offs := []int{}
		for o := 4; o < 4+4*24; o += 4 {
			offs = append(offs, o)
		}
		if m.name != "vad" {
			rd := &reader{r: bytes.NewReader(full), size: int64(len(full))}
			rd.r.Seek(4, 0)
			rd.pos = 4
			nv, _ := rd.i32()
			hp := []int32{nv}
			for range 14 {
				v, _ := rd.i32()
				hp = append(hp, v)
			}
			if looksParakeet(hp) {
				rd.parakeet(hp)
			} else {
				rd.r.Seek(8, 0)
				rd.pos = 8
				rd.whisper(nv)
			}
			if len(rd.ends) < 4 {
				t.Fatalf("%s: walked %d tensors", m.name, len(rd.ends))
			}
			// The headers of the second, third and fourth tensors.
			for _, start := range rd.ends[:3] {
				for f := int64(0); f < 16; f += 4 {
					offs = append(offs, int(start+f))
				}
			}
		}
		for _, o := range offs {
			for _, v := range []int32{0, -1, 3, 1 << 20} {
				b := bytes.Clone(full)
				binary.LittleEndian.PutUint32(b[o:], uint32(v))
				say(fmt.Sprintf("int32 at %d = %d", o, v), b)
			}
		}
		say("one byte more", append(bytes.Clone(full), 0))
		say("four bytes more", append(bytes.Clone(full), 0, 0, 0, 0))
	}
	path := filepath.Join("testdata", "walk.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read the golden file (go test -run TestWalkGolden -update writes it): %v", err)
	}
	got := strings.Split(out.String(), "\n")
	wl := strings.Split(string(want), "\n")
	bad := 0
	for i := range max(len(got), len(wl)) {
		g, w := "", ""
		if i < len(got) {
			g = got[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			t.Errorf("line %d:\n got %s\nwant %s", i+1, g, w)
			if bad++; bad == 10 {
				t.Fatal("more differences left out")
			}
		}
	}
}

// describeResult is Read's result in one line.
func describeResult(info Info, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	s := fmt.Sprintf("%d tensors, %d bytes", info.Tensors, info.Bytes)
	switch {
	case info.Whisper != nil:
		s += fmt.Sprint(" ", *info.Whisper)
	case info.Parakeet != nil:
		s += fmt.Sprint(" ", *info.Parakeet)
	case info.VAD != nil:
		s += fmt.Sprint(" ", *info.VAD)
	}
	return info.Describe() + ": " + s
}
