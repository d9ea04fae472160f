package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/daemonapi"
)

// BenchmarkDaemonRoundTrip measures calls over the daemon socket that go
// through to the gate, at 1, 10 and 100 concurrent clients, each on its own
// connection: ask_human with a cap of 0 is a full reserve round trip
// (client → daemon → yaz-gate → back, refused as disabled), budget.status
// a status round trip. It reports p50 and p99 per call.
func BenchmarkDaemonRoundTrip(b *testing.B) {
	d := startDaemonQuiet(b, baseConfig().With("budget.ask_human_per_hour", "0"))
	for _, clients := range []int{1, 10, 100} {
		for _, method := range []string{daemonapi.MethodAskHuman, daemonapi.MethodBudgetStatus} {
			b.Run(fmt.Sprintf("%s/clients=%d", method, clients), func(b *testing.B) {
				cs := make([]*daemonapi.Client, clients)
				for i := range cs {
					cs[i] = d.Client()
				}
				var mu sync.Mutex
				var lat []time.Duration
				per := max(1, b.N/clients)
				b.ResetTimer()
				var wg sync.WaitGroup
				for _, c := range cs {
					wg.Go(func() {
						ctx := context.Background()
						mine := make([]time.Duration, 0, per)
						for range per {
							t0 := time.Now()
							var err error
							if method == daemonapi.MethodAskHuman {
								var r daemonapi.AskResult
								r, err = c.AskHuman(ctx, daemonapi.AskParams{Question: "Bench?"})
								if err == nil && r.Reason != daemonapi.ReasonDisabled {
									err = fmt.Errorf("ask_human = %+v, want refused disabled", r)
								}
							} else {
								_, err = c.BudgetStatus(ctx)
							}
							if err != nil {
								b.Error(err)
								return
							}
							mine = append(mine, time.Since(t0))
						}
						mu.Lock()
						lat = append(lat, mine...)
						mu.Unlock()
					})
				}
				wg.Wait()
				b.StopTimer()
				for _, c := range cs {
					c.Close()
				}
				slices.Sort(lat)
				if len(lat) > 0 {
					b.ReportMetric(float64(lat[len(lat)*50/100].Microseconds()), "p50-µs")
					b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds()), "p99-µs")
				}
			})
		}
	}
}

// BenchmarkDaemonIdleCPU measures the CPU the daemon uses while idle with
// the microphone always open (capture.mode = "always", the real
// yaz-capture on the PulseAudio null sink's monitor), over b.N
// iterations of 250 ms of idling each (run it with the default -benchtime):
// cpu-% is the daemon's, capture-cpu-% the capture child's.
func BenchmarkDaemonIdleCPU(b *testing.B) {
	d := startDaemonQuiet(b, baseConfig().
		With("capture.mode", q("always")).
		With("children.capture", arr(bin("yaz-capture"), "--backend", "pulseaudio")))
	d.WaitRunning("capture")
	time.Sleep(time.Second)
	dpid, cpid := d.Cmd.Process.Pid, d.PidOf("capture")
	d0, c0 := cpuTicks(b, dpid), cpuTicks(b, cpid)
	t0 := time.Now()
	for b.Loop() {
		time.Sleep(250 * time.Millisecond)
	}
	el := time.Since(t0).Seconds()
	d1, c1 := cpuTicks(b, dpid), cpuTicks(b, cpid)
	b.ReportMetric(float64(d1-d0)/100/el*100, "cpu-%")
	b.ReportMetric(float64(c1-c0)/100/el*100, "capture-cpu-%")
}

// startDaemonQuiet starts a daemon that logs at info, as a user runs it.
func startDaemonQuiet(tb testing.TB, cfg toml) *daemon {
	tb.Helper()
	d := newDaemon(tb, cfg)
	d.Level = "info"
	d.Start()
	d.WaitRunning("gate", "speak", "decode")
	return d
}

// cpuTicks is utime+stime of pid in clock ticks (USER_HZ, 100 on Linux).
func cpuTicks(b *testing.B, pid int) int64 {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}
