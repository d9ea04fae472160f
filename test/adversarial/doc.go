// Package adversarial attacks the real daemon the way a hostile or broken
// client of the same user would: connection floods, slow clients, lenient
// or malformed parameters. Each test names the defect it guards against
// (issue 11) and failed on the code before the fix.
//
// The tests run alone with
//
//	go test -race -count=1 ./test/adversarial
//
// (after `eval "$(make -s env)"`), and in `make test`. They build the
// binaries once, generate a random-weight model, and run yazsesd with
// the null audio backend: no sound server is needed.
//
// The harness here (harness_test.go) is a small copy of what test/e2e's
// daemon harness does (start, stop, ctl); a later refactor will share it.
package adversarial
