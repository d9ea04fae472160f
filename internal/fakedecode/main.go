// Command fakedecode speaks the `yaz-decode serve` protocol (see package
// frame) and answers every utterance with a fixed text. The daemon tests
// use it where exact words matter (docs/design.md, "Models and engines"): the real decoder
// has its own tests on the generated model.
//
// It ignores its arguments (the daemon passes the decoder's flags), except
// --version, which prints "fakedecode test". The environment sets what it
// does:
//
//	YAZ_FAKE_TEXT      the text of every answer (default "fake transcript");
//	                   "{audio_ms}" in it becomes the utterance's length
//	YAZ_FAKE_TEXT_FILE a file whose content is the text, for a text longer
//	                   than one environment variable may be (128 KiB)
//	YAZ_FAKE_DELAY_MS  time to "decode" one utterance (default 0)
//	YAZ_FAKE_MS_PER_S  more time per second of audio (default 0), so a long
//	                   file takes long and a short hold is quick
//	YAZ_FAKE_PIDFILE   if set, its pid is written there at start
//	YAZ_FAKE_FRAMES    if set, every byte read from stdin is written to
//	                   this file (created anew) before it is parsed, so
//	                   an utterance's frames are all there by the time
//	                   its answer is written (a tee in front would race
//	                   the answer: GNU tee writes its stdout first)
//
// It logs "decoding utterance" on stderr when it starts an utterance,
// "decoded utterance" when it answers one, and "abandoned utterance" when
// it drops one.
//
// Abandon (contract 1): an X frame with audio buffered since the last E
// drops that audio; an X frame with none abandons the most recently ended
// utterance if it is still queued or being decoded: its "decoding" stops at
// once and its answer is {"utt":N,"error":"abandoned"}, so answers stay one
// per utterance, in order.
//
// Readiness is signalled on $YAZ_READY_FD as yaz-decode does.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/yazses/yazses/lib/cli"
	"github.com/yazses/yazses/lib/frame"
)

func main() {
	if slices.Contains(os.Args[1:], "--version") {
		fmt.Println("fakedecode test")
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fakedecode:", err)
		os.Exit(1)
	}
}

// job is one ended utterance.
type job struct {
	utt     int
	samples int
}

func run() error {
	text := os.Getenv("YAZ_FAKE_TEXT")
	if p := os.Getenv("YAZ_FAKE_TEXT_FILE"); p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("YAZ_FAKE_TEXT_FILE: %w", err)
		}
		text = string(b)
	}
	if text == "" {
		text = "fake transcript"
	}
	delay, _ := strconv.Atoi(os.Getenv("YAZ_FAKE_DELAY_MS"))
	perS, _ := strconv.Atoi(os.Getenv("YAZ_FAKE_MS_PER_S"))
	if p := os.Getenv("YAZ_FAKE_PIDFILE"); p != "" {
		if err := os.WriteFile(p, []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
			return err
		}
	}
	if err := cli.Ready(); err != nil {
		return err
	}
	var in io.Reader = os.Stdin
	if p := os.Getenv("YAZ_FAKE_FRAMES"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		defer f.Close()
		in = io.TeeReader(in, f)
	}
	jobs := make(chan job, 1024)
	abandon := make(chan int, 1024)
	readErr := make(chan error, 1)
	go func() {
		readErr <- read(in, jobs, abandon)
		close(jobs)
	}()
	out := json.NewEncoder(os.Stdout)
	dropped := map[int]bool{} // abandoned before their turn
	for j := range jobs {
		ms := int64(j.samples) * 1000 / 16000
		said := strings.ReplaceAll(text, "{audio_ms}", strconv.FormatInt(ms, 10))
		res := frame.Result{Utt: j.utt, Text: said, AudioMs: ms,
			Segments: []frame.Segment{{StartMs: 0, EndMs: ms, Text: said}}}
		took := time.Duration(delay)*time.Millisecond + time.Duration(ms*int64(perS)/1000)*time.Millisecond
		abandoned := dropped[j.utt]
		if !abandoned {
			fmt.Fprintln(os.Stderr, "decoding utterance")
			start := time.Now()
			t := time.NewTimer(took)
		wait:
			for {
				select {
				case <-t.C:
					break wait
				case n := <-abandon:
					if n == j.utt {
						abandoned = true
						t.Stop()
						break wait
					}
					if n > j.utt {
						dropped[n] = true
					}
				}
			}
			res.DecodeMs = time.Since(start).Milliseconds()
		}
		if abandoned {
			res.Text, res.Segments, res.Error = "", []frame.Segment{}, "abandoned"
			fmt.Fprintln(os.Stderr, "abandoned utterance")
		} else {
			fmt.Fprintln(os.Stderr, "decoded utterance")
		}
		if err := out.Encode(res); err != nil {
			return err
		}
	}
	return <-readErr
}

// read turns the frames in in into jobs and abandons.
func read(in io.Reader, jobs chan<- job, abandon chan<- int) error {
	r := frame.NewReader(bufio.NewReader(in))
	samples, utt := 0, 0
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch f.Type {
		case frame.Audio:
			samples += len(f.Payload) / 2
		case frame.Abandon:
			if samples > 0 {
				samples = 0
			} else if utt > 0 {
				abandon <- utt
			}
		case frame.End:
			utt++
			jobs <- job{utt: utt, samples: samples}
			samples = 0
		}
	}
}
