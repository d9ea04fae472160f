package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/yazses/yazses/lib/frame"
)

// TestFramesKeptBeforeAnswer: with YAZ_FAKE_FRAMES, an utterance's frames,
// its end included, are in the file by the time its answer is written.
// The e2e echo tests read the file as soon as the daemon has the answer; a
// tee in front of the decoder wrote the end frame after the decoder had
// answered, and CI once read an utterance with no end.
func TestFramesKeptBeforeAnswer(t *testing.T) {
	var sent bytes.Buffer
	w := frame.NewWriter(&sent)
	for range 3 {
		if err := w.Audio(make([]int16, 1600)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.End(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "frames.bin")
	t.Setenv("YAZ_FAKE_FRAMES", path)
	t.Setenv("YAZ_READY_FD", "")
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, stdout := os.Stdin, os.Stdout
	os.Stdin, os.Stdout = inR, outW
	done := make(chan error, 1)
	go func() { done <- run() }()
	t.Cleanup(func() { os.Stdin, os.Stdout = stdin, stdout })

	// One byte a write: the end frame's last byte is the last read.
	for _, b := range sent.Bytes() {
		if _, err := inW.Write([]byte{b}); err != nil {
			t.Fatal(err)
		}
	}
	answer, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, sent.Bytes()) {
		t.Errorf("the file holds %d bytes when the answer %q is written; want all %d sent", len(got), answer, sent.Len())
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Errorf("run: %v", err)
	}
	outW.Close()
}
