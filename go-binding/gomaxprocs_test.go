package weir

import (
	"runtime"
	"testing"
)

// Listen raises GOMAXPROCS to Workers+1 when it is not above Workers
// (gomaxprocs.go): the rule's arm. KeepGOMAXPROCS leaves it (the opt-out
// arm), and a GOMAXPROCS already above Workers is never lowered. What the
// rule saves (sysmon's retakes of a waiting worker's P, about half the
// context switches a request at 2 workers on 2 CPUs) is measured by
// bench/goprofile.py and written in docs/go.md; it is no assertion here,
// being a timing on a shared machine.
func TestGOMAXPROCSAboveWorkers(t *testing.T) {
	saved := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(saved)
	for _, tc := range []struct {
		name      string
		procs     int
		keep      bool
		wantAfter int
	}{
		{"raised to Workers+1 (the rule)", 2, false, 3},
		{"KeepGOMAXPROCS leaves it (opt-out)", 2, true, 2},
		{"already above Workers: left", 5, false, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runtime.GOMAXPROCS(tc.procs)
			_, addr := start(t, Config{Workers: 2, KeepGOMAXPROCS: tc.keep, Handler: hello})
			c := dial(t, addr)
			c.send(get("/"))
			if _, body := c.read("GET"); body != "Hello, World!" {
				t.Fatalf("body %q", body)
			}
			if got := runtime.GOMAXPROCS(0); got != tc.wantAfter {
				t.Fatalf("GOMAXPROCS %d with 2 workers from %d, want %d", got, tc.procs, tc.wantAfter)
			}
		})
	}
}
