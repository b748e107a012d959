package weir

import (
	"runtime"
	"sync"
)

// Every worker spends its waits inside a cgo call (weirgo_cycle's poll),
// which the runtime treats as a system call holding its P. When no P is left
// idle, sysmon retakes a waiting worker's P after 20 µs and starts a thread
// to look for work on it (a futex wake and two context switches), then the
// worker's return from the poll has to win a P back; sysmon, finding Ps to
// retake, also never backs off from its 20 µs ticks. With one worker per CPU
// and Go's default GOMAXPROCS (one per CPU) that is every busy wait. One P
// more than the workers keeps a P idle, and sysmon then leaves a worker's P
// alone for 10 ms (docs/go.md, "Where a Go request's time goes": 0.44
// context switches a request against 0.19, and the CPU a request costs).

var procsMu sync.Mutex

// raiseProcs raises GOMAXPROCS to workers+1 when it is not above workers;
// never lowers it (another engine, or the program, may want more).
func raiseProcs(workers int) {
	procsMu.Lock()
	defer procsMu.Unlock()
	if runtime.GOMAXPROCS(0) <= workers {
		runtime.GOMAXPROCS(workers + 1)
	}
}
