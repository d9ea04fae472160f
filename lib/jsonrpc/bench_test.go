package jsonrpc

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testwait"
)

// BenchmarkRoundTrip: calls over a unix socket through Client and Server,
// from 1 and 10 clients, each on its own connection with one call at a
// time (as yazsesd's socket clients do).
func BenchmarkRoundTrip(b *testing.B) {
	s := NewServer(slog.New(slog.DiscardHandler))
	type result struct {
		PerHour int  `json:"per_hour"`
		Used    int  `json:"used"`
		OK      bool `json:"available"`
	}
	s.Handle("status", func(ctx context.Context, params json.RawMessage) (any, error) {
		return result{PerHour: 3, Used: 1, OK: true}, nil
	})
	path := filepath.Join(b.TempDir(), "s")
	ln, err := net.Listen("unix", path)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	defer func() { cancel(); testwait.Recv(b, done, "Serve to return after its cancel") }()

	for _, clients := range []int{1, 10} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			cs := make([]*Client, clients)
			for i := range cs {
				conn, err := net.Dial("unix", path)
				if err != nil {
					b.Fatal(err)
				}
				cs[i] = NewClient(conn)
				defer cs[i].Close()
			}
			per := max(1, b.N/clients)
			lat := make([][]time.Duration, clients)
			b.ReportAllocs()
			b.ResetTimer()
			calls := testwait.Context(b)
			var wg sync.WaitGroup
			for i, c := range cs {
				wg.Go(func() {
					var r result
					mine := make([]time.Duration, 0, per)
					for range per {
						t0 := time.Now()
						if err := c.Call(calls, "status", map[string]any{}, &r); err != nil {
							b.Error(err)
							return
						}
						mine = append(mine, time.Since(t0))
					}
					lat[i] = mine
				})
			}
			testwait.Group(b, &wg, "the clients' calls")
			b.StopTimer()
			all := slices.Concat(lat...)
			slices.Sort(all)
			if len(all) > 0 {
				b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
			}
		})
	}
}
