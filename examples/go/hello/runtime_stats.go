package main

import (
	"fmt"
	"runtime/metrics"
)

// runtimeStats is the Go runtime's side of a run, per request, for the
// profile in docs/go.md ("Where a Go request's time goes"): heap objects and
// bytes allocated, GC cycles and the GC's share of the process's CPU, and the
// goroutine scheduling events (each time a goroutine went from runnable to
// running: a hand-off or a wake-up, the scheduler's cost that perf spreads
// over runtime functions).
func runtimeStats(requests uint64) string {
	names := []string{
		"/gc/heap/allocs:objects",
		"/gc/heap/allocs:bytes",
		"/gc/cycles/total:gc-cycles",
		"/cpu/classes/gc/total:cpu-seconds",
		"/cpu/classes/total:cpu-seconds",
		"/sched/latencies:seconds",
	}
	s := make([]metrics.Sample, len(names))
	for i, n := range names {
		s[i].Name = n
	}
	metrics.Read(s)
	r := float64(max(requests, 1))
	var sched uint64
	if s[5].Value.Kind() == metrics.KindFloat64Histogram {
		for _, c := range s[5].Value.Float64Histogram().Counts {
			sched += c
		}
	}
	gcShare := 0.0
	if tot := s[4].Value.Float64(); tot > 0 {
		gcShare = s[3].Value.Float64() / tot
	}
	return fmt.Sprintf("runtime allocs/request %.3f bytes/request %.1f gc-cycles %d gc-cpu-share %.4f sched-events/request %.3f",
		float64(s[0].Value.Uint64())/r, float64(s[1].Value.Uint64())/r, s[2].Value.Uint64(), gcShare, float64(sched)/r)
}
