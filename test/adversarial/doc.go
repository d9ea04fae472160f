// Package adversarial attacks the real daemon the way a hostile or broken
// client of the same user would: connection floods, slow clients, lenient
// or malformed parameters. Each test names the defect it guards against
// and failed on the code before the fix.
//
// The tests run alone with
//
//	go test -race -count=1 ./test/adversarial
//
// (after `eval "$(make -s env)"`), and in `make test`. They take the
// binaries from internal/testbin (built once for every test package of the
// run), generate a random-weight model, and run yazsesd with the null
// audio backend: no sound server is needed.
//
// The daemon harness is internal/testdaemon and the raw MCP client
// internal/testmcp, both shared with test/e2e.
package adversarial
