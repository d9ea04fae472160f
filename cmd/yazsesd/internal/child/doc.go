// Package child holds yazsesd's ends of its children: Mic (yaz-capture),
// Decoder (yaz-decode --serve), Speaker (yaz-speak --serve), Gate
// (yaz-gate), and VAD (yaz-decode --vad-stream, when [vad] selects Silero;
// its Link is a vadlink.Link made afresh on every start). Each end owns its supervise.Child, makes the child's
// pipes (or socketpair) afresh on every start, and shows the child's state
// as channels rather than as flags to poll: Changed (closed at every change
// of state and replaced), Down (closed while the child is down for good),
// and Up for the speaker, the decoder and the detector (closed while they
// take work).
//
// Queue is the one priority turn type of the daemon: the decoder serves
// its callers with one (a hold before an answer, an answer before a file's
// piece, which yields to them), and the daemon lines up its questions and
// its files with two more.
//
// Nothing here knows of holds, questions or the budget's rules: that is
// the daemon's policy (package daemon). No end logs or returns the text it
// carries.
package child
