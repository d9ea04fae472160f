package xconn

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	Quiet() // before any test's own X connection reads xgb.Logger
	goleak.VerifyTestMain(m)
}
