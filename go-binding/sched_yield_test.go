package weir

import (
	"testing"
	"time"
)

// An inline driver kept busy passes through the Go scheduler about every
// schedPassEvery (sched_yield.go), and no more often: the rule's arm counts
// at least a few passes over ~150 ms of back-to-back requests and at most
// one per 8 ms window (a pass every cycle, or every 4 ms, measured worse than
// none). Without Config.SchedPass (the default) none. Async workers never
// pass (they are not locked, and yield on their own). What the pass saves is
// sysmon's CPU (docs/go.md, 2026-12-06), a timing on a shared machine, so
// no assertion here; mutants: schedPassDue always false fails the first
// arm, always true fails its upper bound, the SchedPass check dropped
// fails the second.
func TestInlineSchedPass(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   Config
		wantN bool
	}{
		{"SchedPass: inline passes (the rule)", Config{Workers: 1, Handler: hello, SchedPass: true}, true},
		{"default: none", Config{Workers: 1, Handler: hello}, false},
		{"SchedPass, async: none", Config{Workers: 1, Handler: hello, Async: true, SchedPass: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, addr := start(t, tc.cfg)
			c := dial(t, addr)
			t0 := time.Now()
			for time.Since(t0) < 150*time.Millisecond {
				c.send(get("/"))
				if _, body := c.read("GET"); body != "Hello, World!" {
					t.Fatalf("body %q", body)
				}
			}
			elapsed := time.Since(t0)
			n := e.Metrics().SchedPasses
			max := uint64(elapsed/schedPassEvery) + 2
			t.Logf("%d passes in %v (%d requests' cycles: %d polls)", n, elapsed, e.Metrics().Exchanges, e.Metrics().Polls)
			switch {
			case tc.wantN && n < 3:
				t.Fatalf("%d passes in %v of back-to-back requests, want >= 3", n, elapsed)
			case tc.wantN && n > max:
				t.Fatalf("%d passes in %v, want <= %d (one per %v)", n, elapsed, max, schedPassEvery)
			case !tc.wantN && n != 0:
				t.Fatalf("%d passes, want none", n)
			}
		})
	}
}
