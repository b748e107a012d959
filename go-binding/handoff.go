package weir

/*
#include "weirgo.h"
*/
import "C"

import (
	"errors"
	"runtime"
)

// The hand-off: an inline handler that must wait (a Hijack waiting for its
// connection, a Flush that streams, anything HandOff is called for) stops
// being its worker's driver. A new goroutine drives the worker from the
// batch's next exchange; the handler's goroutine, unlocked from the worker's
// thread, goes on as an async handler would: its answers cross on their own
// (posted to the worker, which its next poll applies), and it may wait.

// errHandOffThread: HandOff or an inline Hijack called off the handler's own
// goroutine (the worker's), which alone can hand the worker on.
var errHandOffThread = errors.New("weir: an inline handler must hand off (HandOff, Hijack) from its own goroutine")

// driverTok is one goroutine's turn at driving a worker.
type driverTok struct {
	released bool // handed on: this goroutine drives the worker no more
	counted  bool // and still holds an exchange: counted as an async handler until it returns
}

// HandOff lets an inline handler wait: its worker goes on serving on another
// goroutine, and this handler is from then on like an async one (it may
// block, and its streams wait for room instead of failing with
// ErrStreamFull). A no-op for async handlers. Call it from the handler's own
// goroutine; it costs a goroutine and the batch's slots, so it is for the
// handler that waits, not for every request.
func (w *ResponseWriter) HandOff() error {
	wk := w.wk
	if wk == nil {
		return nil
	}
	if C.weirgo_on_worker() == 0 {
		return errHandOffThread
	}
	wk.handOff(true)
	w.wk = nil // answers cross on their own now (the mailbox is async mode's)
	return nil
}

// handOff, on the inline worker's goroutine inside a handler: this goroutine
// stops driving wk. counted: the handler still has its exchange to answer,
// so it is counted as an async one (Shutdown waits for it); a Hijack's holds
// none. The batch's request and writer slots are replaced, since the handler
// keeps the ones it holds. The thread gives up the worker's turn first: until
// the new driver takes it (weirgo_enter, on its own locked thread, before it
// serves the rest of the batch), every answer is posted, so none is given
// beside that driver from this thread (weir_worker_own).
func (wk *worker) handOff(counted bool) {
	e := wk.e
	tok := wk.driver
	tok.released, tok.counted = true, counted
	if counted {
		e.inflight.Add(1)
	}
	e.stats.handOffs.Add(1)
	wk.rq = make([]Request, len(wk.rq))
	wk.rw = make([]ResponseWriter, len(wk.rw))
	C.weirgo_leave(wk.w) // the turn and the flag, before the unlock: the thread may serve any goroutine after it
	runtime.UnlockOSThread()
	e.runWorker(wk)
	e.wg.Done() // this goroutine's count: the new driver has its own
}

// The tests' switches for the hand-off's negative arms (handoff_test.go):
// the mode of a driver's entry (0 whole, 1 none, 2 the flag without weir's
// turn) and a leave that keeps the turn (the flag only).
func testEnterMode(mode int) { C.weirgo_test_enter_mode(C.int(mode)) }

func testLeaveKeepsTurn(on bool) {
	v := 0
	if on {
		v = 1
	}
	C.weirgo_test_leave_keeps_turn(C.int(v))
}
