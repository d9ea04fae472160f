package testdaemon

import "testing"

// With and Without leave the configuration they start from alone, and
// String writes tables and keys in order.
func TestConfig(t *testing.T) {
	base := Config{"ask": {"guard_ms": "100"}, "mcp": {"ask_human": "true"}}
	c := base.With("ask.max_answer_s", "3").With("speak.device", Q(`a "b"`)).Without("ask.guard_ms")
	if got, want := base.String(), "[ask]\nguard_ms = 100\n[mcp]\nask_human = true\n"; got != want {
		t.Errorf("base after With/Without = %q, want %q (unchanged)", got, want)
	}
	want := "[ask]\nmax_answer_s = 3\n[mcp]\nask_human = true\n[speak]\ndevice = \"a \\\"b\\\"\"\n"
	if got := c.String(); got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	if got := Arr("x", `y"`); got != `["x", "y\""]` {
		t.Errorf("Arr = %s", got)
	}
}
