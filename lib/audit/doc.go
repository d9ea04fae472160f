// Package audit is the content-free audit log of yazsesd: one compact JSON
// object per line at $XDG_STATE_HOME/yazses/audit.jsonl ([Path]).
//
// Invariant 10 of docs/design.md says no audit line may carry question, answer or
// transcript text. This package makes that structural rather than a matter
// of care:
//
//   - [Event] has no free-text field. Its only strings (Kind, Reason, Child,
//     Backend) are closed-vocabulary words that must match
//     ^[a-z][a-z0-9_.]{0,63}$; anything else, a sentence, a space, an
//     uppercase letter, is refused with [ErrBadWord] and nothing is
//     written. The error names the field, never its value. A test fails if
//     a new string (or slice, map, interface, pointer or struct) field is
//     added to Event.
//   - [Read] applies the same check to what it reads back, so a line edited
//     into the file by hand cannot carry text out through `yazsesd ctl
//     audit`.
//
// The file and its folder are private: the folder is created 0700, the file
// 0600 with O_APPEND|O_CREATE|O_NOFOLLOW, so a symlink planted at the path is
// refused ([ErrSymlink]) rather than followed. A file of ours found with wider
// modes is tightened to 0600; a file owned by another uid, or one that is not
// a regular file, is refused.
//
// The log is size-capped: when a line would take audit.jsonl past maxBytes,
// it is rotated to audit.jsonl.1 (older files shift up to .keep, the oldest
// is dropped) and the line starts a fresh file. So no file ever exceeds
// maxBytes, except a file holding a single line longer than maxBytes.
//
// Records are written whole or not at all: a short write (a full disk) is
// truncated back, and a log found ending in a cut record (a crash
// mid-write) gets a newline before the next one, so records never glue
// together. [Read] reports every line it cannot read back as an event of
// kind [KindDamaged] in its place, never hiding it. [Log.Failing] tells
// whether the last write failed, so the daemon can refuse what must not
// happen unaudited (an ask_human) while dictation goes on.
//
// What anyone may cause without limit goes through [Log.Tally]: of each
// kind and reason, TallyBurst lines per TallyWindow, then one line with
// the count of the rest when the window ends (or at Close), so a flood
// cannot rotate away what [Log.Write] records. A counted event's error
// says whether space for the next line was reserved (fallocate), so it
// still proves the log can record what comes next.
//
// A [Log] is safe for concurrent use by the goroutines of one process; it
// assumes it is the only writer (yazsesd holds a per-user lock).
package audit
