package detect

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/yazses/yazses/cmd/yazsesd/internal/hold"
	"github.com/yazses/yazses/cmd/yazsesd/internal/question"
	"github.com/yazses/yazses/cmd/yazsesd/internal/vadlink"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/config"
	"github.com/yazses/yazses/lib/vadspan"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A Use is a hold's detector and a question's as it is.
var (
	_ hold.Detector      = (*Use)(nil)
	_ question.Detection = (*Use)(nil)
)

// fakeChild is the detector child: its Link (the test's; an energy Link
// stands in for the child's) and how often it was restarted.
type fakeChild struct {
	link     *vadlink.Link
	restarts int
}

func (c *fakeChild) Link() *vadlink.Link { return c.link }
func (c *fakeChild) Restart()            { c.restarts++ }

// TestUseChild: [vad] selects the child for engine silero, or for auto
// when the model file is there; never for energy.
func TestUseChild(t *testing.T) {
	model := filepath.Join(t.TempDir(), "ggml-silero.bin")
	if err := os.WriteFile(model, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "none.bin")
	for _, c := range []struct {
		engine, model string
		want          bool
	}{
		{config.VADEnergy, model, false},
		{config.VADSilero, missing, true}, // its vad_model_missing is the child's to report
		{config.VADSilero, model, true},
		{config.VADAuto, model, true},
		{config.VADAuto, missing, false},
	} {
		if got := UseChild(config.VAD{Engine: c.engine, Model: c.model}); got != c.want {
			t.Errorf("UseChild(%s, %s) = %v, want %v", c.engine, filepath.Base(c.model), got, c.want)
		}
	}
}

// TestBegin: a use goes on the child's Link when it is up and free, else
// on an energy Link of its own: while the child is down (no Link), busy
// with another use, or when there is no child at all. Releasing a use on
// the child's Link frees it for the next; releasing an energy use closes
// its own Link.
func TestBegin(t *testing.T) {
	ctx := context.Background()
	childLink := vadlink.NewEnergy(ctx) // stands in for the child's Link
	defer childLink.Close()
	c := &fakeChild{link: childLink}
	s := New(c, nil)
	p := vadspan.DefaultParams()

	first := s.Begin(ctx, p)
	if first.Engine() != Silero || first.Energy() {
		t.Fatalf("a use with the child up and free: %s (energy %v), want silero", first.Engine(), first.Energy())
	}
	busy := s.Begin(ctx, p)
	if busy.Engine() != Energy || !busy.Energy() {
		t.Errorf("a use while the child has one: %s, want energy", busy.Engine())
	}
	busy.Release()
	testwait.Closed(t, busy.own.Done(), "the energy use's own Link to close on Release")

	first.Release()
	again := s.Begin(ctx, p)
	if again.Engine() != Silero {
		t.Errorf("a use once the child's was released: %s, want silero", again.Engine())
	}
	again.Release()
	select {
	case <-childLink.Done():
		t.Error("releasing a use closed the child's Link")
	default:
	}

	c.link = nil // down, restarting
	if u := s.Begin(ctx, p); u.Engine() != Energy {
		t.Errorf("a use with the child down: %s, want energy", u.Engine())
	} else {
		u.Release()
	}
	if u := New(nil, nil).Begin(ctx, p); u.Engine() != Energy {
		t.Errorf("a use with no child: %s, want energy", u.Engine())
	} else {
		u.Release()
	}
}

// TestBeginAfterTheEnd: once the daemon's life has ended no use begins:
// Begin and BeginEnergy return nil.
func TestBeginAfterTheEnd(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := New(nil, nil)
	if u := s.Begin(ctx, vadspan.Params{}); u != nil {
		t.Errorf("Begin after the end = %v, want nil", u)
	}
	if u := s.BeginEnergy(ctx, vadspan.Params{}); u != nil {
		t.Errorf("BeginEnergy after the end = %v, want nil", u)
	}
}

// TestRestart: a use that did not answer restarts the child only while the
// child still runs that use's Link; an energy use, or a use of an earlier
// start, restarts nothing.
func TestRestart(t *testing.T) {
	ctx := context.Background()
	l1, l2 := vadlink.NewEnergy(ctx), vadlink.NewEnergy(ctx)
	defer l1.Close()
	defer l2.Close()
	c := &fakeChild{link: l1}
	s := New(c, nil)
	u := s.Begin(ctx, vadspan.Params{})
	e := s.BeginEnergy(ctx, vadspan.Params{})
	defer e.Release()
	e.Restart()
	if c.restarts != 0 {
		t.Errorf("an energy use restarted the child (%d)", c.restarts)
	}
	u.Restart()
	if c.restarts != 1 {
		t.Errorf("%d restarts by a silent use of the running child, want 1", c.restarts)
	}
	c.link = l2 // restarted since
	u.Restart()
	if c.restarts != 1 {
		t.Errorf("%d restarts after the child had been restarted since, want still 1", c.restarts)
	}
	u.Release()
}

// TestUseDecides: a use feeds, ends and reports as its Link does: speech
// in a burst, then Ended with Said, and the state at the end.
func TestUseDecides(t *testing.T) {
	s := New(nil, nil)
	p := vadspan.DefaultParams()
	u := s.Begin(context.Background(), p)
	defer u.Release()
	quiet := make([]int16, 16000)
	loud := make([]int16, 16000)
	for i := range loud {
		loud[i] = int16((i%40 - 20) * 1000) // a buzz well above the room
	}
	u.Feed(quiet)
	u.Feed(loud)
	u.Feed(quiet)
	u.End()
	said := false
	for e := range u.Events() {
		if e.Kind == vadlink.Ended {
			said = e.Said
		}
	}
	if !said {
		t.Error("a second of a loud buzz between quiet seconds: Ended without Said")
	}
	if st := u.State(); st.Pos != 3*16000 {
		t.Errorf("State().Pos = %d at the end, want %d", st.Pos, 3*16000)
	}
}
