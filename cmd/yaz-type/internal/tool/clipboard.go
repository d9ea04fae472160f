package tool

import (
	"bytes"
	"context"
	"errors"
	"time"
)

// Clipboard is the commands of one clipboard tool set (wl-copy and
// wl-paste, xclip or xsel for one X selection).
type Clipboard struct {
	Save  []string // prints the clipboard's text
	Set   []string // takes the text on stdin (forks a helper that serves it)
	Clear []string // empties the clipboard
}

// ConfirmWait bounds the wait for a clipboard tool's helper to own the
// clipboard.
const ConfirmWait = 3 * time.Second

// Put sets the clipboard to data (nil: clears it) and waits until the
// clipboard really holds it: xclip, xsel and wl-copy fork a helper that
// takes the clipboard some time after the command has returned, and a
// paste before that would paste the old content. secret is kept out of
// errors.
func Put(ctx context.Context, env []string, tools Clipboard, data []byte, secret string) error {
	argv := tools.Set
	stdin := data
	if data == nil {
		argv, stdin = tools.Clear, []byte{}
	}
	r := Call{Env: env, Secret: secret, Stdin: stdin, Detach: true}
	if _, err := r.Run(ctx, argv[0], argv[1:]...); err != nil {
		return err
	}
	deadline := time.Now().Add(ConfirmWait)
	for {
		got, err := Call{Env: env}.Run(ctx, tools.Save[0], tools.Save[1:]...)
		if data == nil {
			// Cleared: no text, or at least not the dictated one.
			if err != nil || len(got) == 0 {
				return nil
			}
		} else if err == nil && bytes.Equal(got, data) {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("the clipboard did not take the new content")
		}
		if err := Sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
}
