package weir

/*
#include <errno.h>
#include <weir.h>
*/
import "C"

import "unsafe"

// Transplant: libweir's weir_engine_transplant and weir_engine_switch
// (docs/transplant.md). Live connections move between two Engines — epoll
// to io_uring, back, or between two of one backend — each at its next
// request boundary, with its unread pipelined bytes, without a close. The
// ledger is in Metrics: TransplantDetached == TransplantAdopted +
// TransplantRefused + TransplantInFlight on the source, always, and
// TransplantInFlight is 0 once nothing is on its way.

// Transplant moves every connection of e to `to` and returns at once; each
// moves at its next request boundary (answers flushed, no handler running).
// The transplant stays active until EndTransplant, a transplant from `to`
// back to e, or e's shutdown: what e accepts meanwhile moves too. A target
// that refuses a connection (over MaxConnections, shutting down) gives it
// back and e closes it with a FIN (counted in TransplantRefused and
// Closes[13], CloseReasonName(13)). Both engines must be listening; `to` must not be shut
// down while connections are in flight to it. Errors: ErrState (not
// listening, or e already transplanting elsewhere), ErrShutdown, and -EINVAL
// for e == to or a nil `to`.
func (e *Engine) Transplant(to *Engine) error {
	if to == nil || to == e {
		return &Error{Op: "weir_engine_transplant", Code: -int(C.EINVAL)}
	}
	return withBoth(e, to, func(from, into *C.weir_engine) error {
		return codeErr("weir_engine_transplant", C.weir_engine_transplant(from, into, 0))
	})
}

// EndTransplant ends e's transplant: connections it holds and has not yet
// detached are served by e again; those already on their way arrive at
// their target. nil also when nothing was transplanting.
func (e *Engine) EndTransplant() error {
	e.life.RLock()
	defer e.life.RUnlock()
	if e.ce == nil {
		return ErrShutdown
	}
	return codeErr("weir_engine_transplant", C.weir_engine_transplant(e.ce, nil, C.WEIR_TRANSPLANT_END))
}

// SwitchTo is the adaptive switch: `to`, listening on e's address (created
// with e's port) and usually paused, takes over. It resumes `to`'s
// listeners, transplants e to `to` (ending a transplant the other way) and
// begins e's pause: e's listeners linger for Config.Linger and what they
// accept moves too; PauseAccept on e waits for the linger. A switch back
// inside the linger resumes e's same listeners. A switch whose transplant
// fails is undone (`to` pauses again and hands back what it accepted) and
// returns the error. Adaptive runs this for you.
func (e *Engine) SwitchTo(to *Engine) error {
	if to == nil || to == e {
		return &Error{Op: "weir_engine_switch", Code: -int(C.EINVAL)}
	}
	return withBoth(e, to, func(from, into *C.weir_engine) error {
		return codeErr("weir_engine_switch", C.weir_engine_switch(from, into))
	})
}

// withBoth keeps both native engines alive across f (read locks taken in
// one global order, so two calls in opposite directions cannot deadlock
// against the destroys).
func withBoth(a, b *Engine, f func(a, b *C.weir_engine) error) error {
	first, second := &a.life, &b.life
	if uintptr(unsafe.Pointer(a)) > uintptr(unsafe.Pointer(b)) {
		first, second = second, first
	}
	first.RLock()
	second.RLock()
	defer first.RUnlock()
	defer second.RUnlock()
	if a.ce == nil || b.ce == nil {
		return ErrShutdown
	}
	return f(a.ce, b.ce)
}
