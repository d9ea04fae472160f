// Command fakedecode speaks the `yaz-decode --serve` protocol (see package
// frame) and answers every utterance with a fixed text. The daemon tests
// use it where exact words matter (DESIGN.md, "Models"): the real decoder
// has its own tests on the generated model.
//
// It ignores its arguments (the daemon passes the decoder's flags). The
// environment sets what it does:
//
//	YAZ_FAKE_TEXT      the text of every answer (default "fake transcript")
//	YAZ_FAKE_DELAY_MS  time to "decode" one utterance (default 0)
//	YAZ_FAKE_PIDFILE   if set, its pid is written there at start
//
// It logs "decoding utterance" on stderr when an utterance ends.
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
	"strconv"
	"time"

	"github.com/yazses/yazses/lib/cli"
	"github.com/yazses/yazses/lib/frame"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fakedecode:", err)
		os.Exit(1)
	}
}

func run() error {
	text := os.Getenv("YAZ_FAKE_TEXT")
	if text == "" {
		text = "fake transcript"
	}
	delay, _ := strconv.Atoi(os.Getenv("YAZ_FAKE_DELAY_MS"))
	if p := os.Getenv("YAZ_FAKE_PIDFILE"); p != "" {
		if err := os.WriteFile(p, []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
			return err
		}
	}
	if err := cli.Ready(); err != nil {
		return err
	}
	r := frame.NewReader(bufio.NewReader(os.Stdin))
	out := json.NewEncoder(os.Stdout)
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
			samples = 0
		case frame.End:
			utt++
			fmt.Fprintln(os.Stderr, "decoding utterance")
			time.Sleep(time.Duration(delay) * time.Millisecond)
			ms := int64(samples) * 1000 / 16000
			res := frame.Result{Utt: utt, Text: text, AudioMs: ms, DecodeMs: int64(delay),
				Segments: []frame.Segment{{StartMs: 0, EndMs: ms, Text: text}}}
			if err := out.Encode(res); err != nil {
				return err
			}
			samples = 0
		}
	}
}
