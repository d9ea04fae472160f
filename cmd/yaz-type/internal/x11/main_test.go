package x11

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	quietXGB() // before any test's own X connection reads xgb.Logger
	goleak.VerifyTestMain(m)
}
