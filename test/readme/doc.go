// Package readme checks what a new user gets from the README on a fresh
// machine: `make install` into a temporary prefix, every program's --version,
// man pages and shell completion, yaz-fetch-model and `make demo` offline,
// quiet failures without a sound server, and every shell example of
// README.md run as written (see readme_test.go for the few that cannot run
// here, each with its reason). And that the tree cites nothing a reader of
// the repository cannot open (citations_test.go): no design file outside
// it, no issue tracker's number, and only sections, contracts and
// invariants that docs/design.md has.
//
// The programs run with the small environment a user's shell, an MCP host or
// a service manager gives them: a temporary HOME with no configuration, no
// model but the ones a README step put there, and a private PulseAudio
// server with a null sink where a microphone or speaker is needed.
package readme
