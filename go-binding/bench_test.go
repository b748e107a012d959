package weir

import (
	"fmt"
	"strings"
	"testing"
)

// The crossing alone: go test -bench Crossing, then again with -tags
// weir_escape (no #cgo noescape/nocallback) to see what the directives save.
func BenchmarkCrossingCycle(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		crossCycleEmpty()
	}
}

// The crossing with a worker's own out arrays (64 slots): what cgo's
// pointer check on them costs per cycle; run with GODEBUG=cgocheck=0 to see
// the crossing without any check.
func BenchmarkCrossingCycleWorker(b *testing.B) {
	wk := newWorker(nil, nil, 64, false, 100)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		crossCycleWorker(wk)
	}
}

func BenchmarkCrossingRespond(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		crossRespondEmpty()
	}
}

// Whole round trips over loopback on one keep-alive connection, `depth`
// requests pipelined at a time; reports cgo crossings per request.
func BenchmarkRoundTrip(b *testing.B) {
	for _, async := range []bool{false, true} {
		for _, depth := range []int{1, 16} {
			b.Run(fmt.Sprintf("async=%v/depth=%d", async, depth), func(b *testing.B) {
				e, addr := start(b, Config{Workers: 1, Async: async, Handler: hello})
				c := dial(b, addr)
				burst := strings.Repeat(get("/"), depth)
				before := e.Metrics()
				b.ResetTimer()
				for i := 0; i < b.N; i += depth {
					c.send(burst)
					for j := 0; j < depth; j++ {
						if _, body := c.read("GET"); body != "Hello, World!" {
							b.Fatalf("body %q", body)
						}
					}
				}
				b.StopTimer()
				m := e.Metrics()
				calls := m.CgoCalls() - before.CgoCalls()
				reqs := m.Exchanges - before.Exchanges
				if reqs > 0 {
					b.ReportMetric(float64(calls)/float64(reqs), "cgo-calls/req")
				}
			})
		}
	}
}
