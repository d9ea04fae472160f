// Package child holds yazsesd's ends of its children: Decoder (yaz-decode
// serve), Speaker (yaz-speak --serve), Gate (yaz-gate, the budget's
// keeper) and Typer (yaz-type --serve); the ends of the children that hear
// (yaz-capture, and yaz-decode vad-stream) are package mic's. Each end is
// a process (a proc.Process): it owns its supervise.Child, makes the
// child's pipes (or socketpair) afresh on every start, and shows the
// child's state as channels rather than as flags to poll: Changed (closed
// at the next change of state, a bcast.Signal), Down (closed while the
// child is down for good, supervise.State.Down), and Up for the speaker
// and the decoder (closed while they take work).
//
// Goroutines. The readers of a start's pipes and the writer of a
// decoder's turn (which outlives a Decode whose caller went away) belong
// to their end: its Run waits for them once the child is gone. No end
// keeps a context.
//
// The Decoder serves its callers by turns (package turn): a hold before
// an answer, an answer before a file's piece, which yields to them.
//
// Nothing here knows of holds, questions or the budget's rules: that is
// the daemon's policy (package daemon). No end logs or returns the text it
// carries.
package child
