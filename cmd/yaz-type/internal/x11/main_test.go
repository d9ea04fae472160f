package x11

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/yazses/yazses/cmd/yaz-type/internal/xconn"
)

func TestMain(m *testing.M) {
	xconn.Quiet() // before any test's own X connection reads xgb.Logger
	goleak.VerifyTestMain(m)
}
