//go:build yaz_vulkan

package serve

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/asr"
	"github.com/yazses/yazses/cmd/yaz-decode/internal/decodetest"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/frame"
)

// These run on Mesa's lavapipe, the software Vulkan device (see
// cmd/yaz-decode/internal/asr/vulkan_test.go).

// TestServeAbandonOnVulkan: an Abandon frame for an utterance that whisper
// is decoding on the Vulkan device stops it there: sent once its second
// 30 s window has begun (the first ran on the device), the decode returns
// the cancellation, seen by the abort check inside the device's graphs
// (yaz.c), the one result says abandoned, and the next utterance decodes
// as it did before. (Parakeet's cancel on the device: asr's
// TestVulkanCancel; an Abandon is the same cancellation.)
func TestServeAbandonOnVulkan(t *testing.T) {
	dev, err := asr.SelectDevice(decodetest.LavapipeSpec(t))
	if err != nil || dev.Backend != "Vulkan" {
		t.Fatalf("SelectDevice(gpu:N) = %+v, %v: want lavapipe (is mesa-vulkan-drivers installed?)", dev, err)
	}
	m, err := asr.LoadOn(decodetest.MiniModel(t, t.TempDir()), dev, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	w := &windows{inner: m, second: make(chan struct{}, 1), errs: make(chan error, 4)}
	c := newConfig()
	c.Options.Threads = 2
	c.Options.NoSpeechThreshold = 1
	s := startServe(t, c, w)
	short := decodetest.Speech(3 * time.Second)

	s.utterance(short)
	first := s.next()
	if first.Error != "" || len(first.Segments) == 0 {
		t.Fatalf("short utterance on %s = %+v, want segments", dev.Name, first)
	}
	if err := testwait.Recv(t, w.errs, "the short utterance's decode"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.second:
		t.Fatal("the 3 s utterance had a second window: the long one's would not be told apart")
	default:
	}
	s.utterance(decodetest.Speech(45 * time.Second))
	testwait.Recv(t, w.second, "the long utterance's second window")
	s.abandon()
	if r := s.next(); r.Utt != 2 || r.Error != frame.ErrorAbandoned {
		t.Errorf("abandoned long utterance = %+v, want utt 2 abandoned", r)
	}
	if err := testwait.Recv(t, w.errs, "the long utterance's decode"); !errors.Is(err, context.Canceled) {
		t.Errorf("the abandoned decode returned %v, want the cancellation (whisper stopped on %s)", err, dev.Name)
	}
	s.utterance(short)
	again := s.next()
	if again.Utt != 3 || again.Error != "" {
		t.Fatalf("utterance after the abandon = %+v", again)
	}
	if diff := cmp.Diff(first.Segments, again.Segments); diff != "" {
		t.Errorf("the short utterance after an abandon on %s differs from the first time (-first +now):\n%s", dev.Name, diff)
	}
	s.close()
}

// windows passes decodes to inner, says when one reaches its second 30 s
// window, and hands on what each decode returned.
type windows struct {
	inner  Recognizer
	second chan struct{}
	errs   chan error
}

func (w *windows) Transcribe(ctx context.Context, s []float32, opt asr.Options) (asr.Result, error) {
	calls := 0
	opt.Progress = func(p int) {
		// Progress comes at the top of each window, and once more at 100
		// after the last one: a window begins below 100.
		if p >= 100 {
			return
		}
		if calls++; calls == 2 {
			w.second <- struct{}{}
		}
	}
	r, err := w.inner.Transcribe(ctx, s, opt)
	w.errs <- err
	return r, err
}
