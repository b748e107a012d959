package weir

/*
#include "weirgo.h"
*/
import "C"

import "sync"

// Gone clients (Config.ReportGone, weir's report_gone): weir hands an
// exchange a handler holds back in a poll batch once its client goes (its
// FIN, a reset, a forced shutdown), and weirgo_cycle marks it with
// weir_exchange_gone's answer: 2, a report (never a new request), or 1, a
// request whose client had gone before any poll handed it out. A report
// runs the callback the handler registered with NotifyGone; a request born
// gone runs it at registration. Registrations end when the handler returns
// (serve), so a report that comes later finds nothing to do.

// Marks weirgo_cycle leaves in weirgo_taken.rc (beside 0/WEIR_E_GONE for a
// Hijack's hand-back and 1 for a stream's wake-up).
const (
	goneReport  = 2 // reqs[i] nil: a report
	goneAtStart = 3 // a request whose client has gone already
)

// The table holds every exchange whose handler runs (added at dispatch,
// removed when the handler returns), so a report that comes before the
// handler registers is kept as its writer's flag, and one that comes after
// the handler finds nothing. One map insert and delete a request, only with
// ReportGone.
type goneTable struct {
	on bool // Config.ReportGone (or HTTP)
	mu sync.Mutex
	m  map[*C.weir_exchange]*ResponseWriter
}

func (t *goneTable) add(w *ResponseWriter, gone bool) {
	if !t.on {
		return
	}
	w.goneFlag = gone
	t.mu.Lock()
	t.m[w.ex] = w
	t.mu.Unlock()
}

func (t *goneTable) report(ex *C.weir_exchange) {
	t.mu.Lock()
	w := t.m[ex]
	if w == nil {
		t.mu.Unlock()
		return
	}
	f := w.goneFn
	w.goneFn, w.goneFlag = nil, true
	t.mu.Unlock()
	if f != nil {
		f()
	}
}

func (t *goneTable) remove(ex *C.weir_exchange) {
	t.mu.Lock()
	delete(t.m, ex)
	t.mu.Unlock()
}

// NotifyGone registers f to run, once, when this exchange's client goes
// while the handler runs (its FIN, a reset, a forced shutdown): at once if it
// has gone already. f may run on the worker's goroutine: it must not block
// (cancelling a context is what it is for). Needs Config.ReportGone (on for
// HTTP); without it NotifyGone returns false and f never runs. Call it from
// the handler before it returns; the registration ends when the handler
// returns. An answer still reaches a client that only half-closed.
func (w *ResponseWriter) NotifyGone(f func()) bool {
	e := w.e
	if !e.gn.on || f == nil {
		return false
	}
	e.gn.mu.Lock()
	if w.goneFlag {
		e.gn.mu.Unlock()
		f()
		return true
	}
	w.goneFn = f
	e.gn.mu.Unlock()
	return true
}
