package weir

import (
	"runtime"
	"time"
)

// An inline worker's goroutine is locked to its thread and loops through its
// cycles without ever passing through the Go scheduler, so its P's schedtick
// never moves. sysmon takes that for a goroutine that has run too long
// (forcePreemptNS, 10 ms): found in the cgo poll, as it nearly always is, its
// P is retaken (handoffp, a thread started to look for work, the poll's
// return winning a P back), and each retake restarts sysmon's 20 µs tick:
// about a thousand more sysmon wake-ups a second on a busy worker, 1.35 µs of
// CPU a request in the sysmon thread alone at 1 worker, 2.2 at 2 (docs/go.md,
// "Where a Go request's time goes", 2026-12-06). A driver that passes through
// the scheduler itself more often than that leaves sysmon nothing to retake,
// and it backs off to its 10 ms sleep.
//
// The pass is a Gosched on the locked thread: the runtime hands the P to
// another thread, which gives it back (two wakes), so the turn and the thread
// stay the worker's. It costs about what one retake does, so it is made no
// more often than needed: every 8 ms (a pass every 4 ms measured worse than
// none; unlocked, the goroutine migrated between threads on every pass).
// While the P is away the worker waits for those wakes; on a loaded machine
// that doubled the tail latency, so the pass is Config.SchedPass's, off by
// default.
const schedPassEvery = 8 * time.Millisecond

// schedPassDue is checked between cycles, never inside a batch.
func (wk *worker) schedPassDue() bool {
	now := time.Now()
	if now.Sub(wk.lastPass) < schedPassEvery {
		return false
	}
	wk.lastPass = now
	return true
}

// schedPass lets the scheduler run the inline driver once.
func (wk *worker) schedPass() {
	runtime.Gosched()
	wk.passes.Add(1)
}
