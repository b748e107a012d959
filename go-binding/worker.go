package weir

/*
#include "weirgo.h"
*/
import "C"

import (
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"
)

// worker drives one native worker from one goroutine (locked to its OS
// thread in inline mode, see run): each cycle is one cgo call that hands weir the answers queued since the last
// one and returns the next batch of exchanges.
type worker struct {
	e     *Engine
	w     *C.weir_worker
	ex    []*C.weir_exchange
	reqs  []*C.weir_request
	peers []C.struct_sockaddr_storage // nil unless peer addresses are wanted
	ans   []C.weirgo_answer
	rcs   []C.int32_t
	upped []C.weirgo_taken // hand-backs of Hijacks (hijack.go)
	arena []byte

	timeoutMs int        // each poll's bound (Config.PollTimeout)
	driver    *driverTok // the goroutine driving wk now (inline: a hand-off passes it on)

	// inline handlers reuse these, one per batch slot
	rq []Request
	rw []ResponseWriter

	mb mailbox   // async handlers' answers (mailbox.go)
	bq bodyQueue // streamed bodies' reads (body.go)

	// The batch being dispatched: a replacement goroutine (runWorker, after a
	// Goexit) carries on at next.
	n, next int

	lastPass time.Time // the inline driver's last pass through the scheduler (sched_yield.go)

	polls   atomic.Uint64
	passes  atomic.Uint64
	taken   atomic.Uint64
	running atomic.Int32 // async handlers of this worker not yet returned
}

const arenaKeep = 1 << 20 // an arena grown past this is dropped after its batch

func newWorker(e *Engine, w *C.weir_worker, batch int, peers bool, timeoutMs int) *worker {
	wk := &worker{
		e:         e,
		w:         w,
		timeoutMs: timeoutMs,
		ex:        make([]*C.weir_exchange, batch),
		reqs:      make([]*C.weir_request, batch),
		ans:       make([]C.weirgo_answer, 0, batch),
		rcs:       make([]C.int32_t, batch),
		upped:     make([]C.weirgo_taken, batch),
		rq:        make([]Request, batch),
		rw:        make([]ResponseWriter, batch),
	}
	if peers {
		wk.peers = make([]C.struct_sockaddr_storage, batch)
	}
	return wk
}

// queue records an inline answer; it crosses with the next cycle.
func (wk *worker) queue(ex *C.weir_exchange, status int, flags uint32, hdr []byte, nhdr uint32, body []byte) {
	wk.ans, wk.arena = appendAnswer(wk.ans, wk.arena, ex, status, flags, hdr, nhdr, body)
}

// appendAnswer copies one answer's headers and body into arena and records
// it in ans, in the layout weirgo_cycle reads.
func appendAnswer(ans []C.weirgo_answer, arena []byte, ex *C.weir_exchange, status int, flags uint32,
	hdr []byte, nhdr uint32, body []byte) ([]C.weirgo_answer, []byte) {
	hoff := len(arena)
	arena = append(arena, hdr...)
	boff := len(arena)
	arena = append(arena, body...)
	return append(ans, C.weirgo_answer{
		ex:       ex,
		status:   C.int32_t(status),
		flags:    C.uint32_t(flags),
		nhdr:     C.uint32_t(nhdr),
		hdr_off:  C.uint32_t(hoff),
		body_off: C.uint64_t(boff),
		body_len: C.uint64_t(len(body)),
	}), arena
}

// runWorker drives wk on a goroutine of its own, counted in e.wg. An inline
// handler that calls runtime.Goexit ends that goroutine (serve's deferred
// check has answered its exchange by then); the goroutine's own deferred
// check then starts another that carries on with the rest of the batch, so a
// native worker is never left without its driver.
//
// An inline handler's hand-off (handoff.go) releases its goroutine instead: a new
// goroutine drives the worker from the next exchange of the batch, and the
// released one, no longer counted, ends when its handler returns.
func (e *Engine) runWorker(wk *worker) {
	e.wg.Add(1)
	tok := &driverTok{}
	go func() {
		wk.driver = tok
		returned := false
		defer func() {
			if tok.released { // handOff counted it out of e.wg and started the next driver
				if tok.counted { // the handler it served has returned (or exited)
					e.inflight.Done()
				}
				return
			}
			if !returned {
				if p := recover(); p != nil {
					panic(p) // the binding's own bug: not a handler's (serve recovers those)
				}
				e.runWorker(wk)
			}
			e.wg.Done()
		}()
		err := wk.run()
		returned = true
		if tok.released {
			return
		}
		wk.closeBox()
		wk.closeReads()
		if err != nil {
			e.fatal <- err
		}
	}()
}

func (wk *worker) run() error {
	e := wk.e
	var mark C.int
	if !e.cfg.Async {
		// Inline handlers run on this goroutine, and weirgo_on_worker must
		// name its thread: locked. An async worker stays unlocked, so the
		// handler goroutines it starts can run on its own thread while it
		// yields (wait below), with no thread woken for them and none for it.
		runtime.LockOSThread()
		tok := wk.driver
		defer wk.leave(tok) // also after a Goexit: the thread is not lost with the goroutine
		// The worker's turn before the first handler: after a hand-off or a
		// Goexit this driver serves the rest of a batch before it polls.
		C.weirgo_enter(wk.w)
		mark = 1
	}
	var peers *C.struct_sockaddr_storage
	if wk.peers != nil {
		peers = &wk.peers[0]
	}
	if !wk.dispatch() { // what a Goexit (or a Hijack) interrupted
		return nil
	}
	yields := 0
	for {
		timeout := wk.timeoutMs
		spin := false
		if e.cfg.Async {
			// While its handlers run, the worker polls without waiting and
			// yields between polls (at most maxYields in a row), so their
			// answers ride its next cycle with no wake: the flag stays raised
			// and posters skip the wake. Then it waits: take lowers the flag
			// first, so an answer posted from then on wakes the poll.
			spin = wk.running.Load() > 0 && yields < maxYields
			if spin {
				wk.mb.woken.Store(true)
				timeout = 0
			} else {
				yields = 0
			}
			wk.take(!spin)
		}
		reads, nreads, rarena := wk.takeReads()
		if nreads > 0 {
			timeout = 0 // their readers hear after this cycle's poll: it must not wait
		}
		var ans *C.weirgo_answer
		var arena *C.char
		nans := len(wk.ans)
		if nans > 0 {
			ans = &wk.ans[0]
		}
		if len(wk.rcs) < nans {
			wk.rcs = make([]C.int32_t, nans)
		}
		if len(wk.arena) > 0 {
			arena = (*C.char)(unsafe.Pointer(&wk.arena[0]))
		}
		wk.polls.Add(1)
		n := int(cCycle(wk.w, ans, C.uint32_t(nans), arena, &wk.rcs[0], reads, nreads, rarena, &wk.ex[0],
			&wk.reqs[0], peers, C.uint32_t(len(wk.ex)), C.int(timeout), e.watch, &wk.upped[0], mark))
		wk.e.cv.drain(wk.w) // connections opened and closed in this poll, before its requests
		wk.readsDone()
		for i := 0; i < nans; i++ {
			e.countRespond(C.int(wk.rcs[i]))
		}
		wk.ans = wk.ans[:0]
		if cap(wk.arena) > arenaKeep {
			wk.arena = nil
		} else {
			wk.arena = wk.arena[:0]
		}
		if n == int(C.WEIR_E_SHUTDOWN) {
			return nil
		}
		if n < 0 {
			return codeErr("weir_worker_poll", C.int(n))
		}
		wk.n, wk.next = n, 0
		if !wk.dispatch() {
			return nil // a Hijack released this goroutine; another drives wk
		}
		if spin {
			yields++
			runtime.Gosched()
		} else if mark != 0 && n > 0 && e.cfg.SchedPass && wk.schedPassDue() {
			// an idle worker's P is retaken in its long poll anyway: no pass for it
			wk.schedPass()
		}
	}
}

// leave ends an inline driver's turn on its thread: weir's turn and the
// flag go before the unlock, since the thread may then run any goroutine,
// and none may answer at once beside the next driver's poll. A driver its
// handler handed on left in handOff, and runs unlocked since (its thread may
// be anyone's now, its handler's own lock included): nothing to do.
func (wk *worker) leave(tok *driverTok) {
	if tok.released {
		return
	}
	C.weirgo_leave(wk.w)
	if h := testAfterLeave; h != nil {
		h(wk, C.weirgo_owned() == wk.w)
	}
	runtime.UnlockOSThread()
}

// testAfterLeave, set by handoff_test only, hears on the leaving thread
// whether it still holds the worker's turn.
var testAfterLeave func(wk *worker, holds bool)

// maxYields bounds the polls without a wait while an async worker's handlers
// run: a handler that blocks costs the worker this many empty passes, then
// the worker waits in its poll as an idle one does.
const maxYields = 4

// dispatch hands the batch's exchanges, from next on, to their handlers.
// false: an inline handler's hand-off (Hijack, HandOff) released this goroutine, and
// the batch is another's now.
func (wk *worker) dispatch() bool {
	e := wk.e
	for wk.next < wk.n {
		i := wk.next
		wk.next++
		if len(wk.bq.parked) > 0 && wk.handedBack(wk.ex[i]) { // a streamed body's read waited for it
			if wk.reqs[i] == nil && wk.upped[i].rc == goneReport {
				e.gn.report(wk.ex[i])
			}
			continue
		}
		if wk.reqs[i] == nil {
			switch wk.upped[i].rc {
			case goneReport: // its client went: cancel its work (and wake a stream's writer to learn it)
				e.gn.report(wk.ex[i])
				e.st.wake(wk.ex[i])
			case 1: // a stream handed back with room: wake its writer
				e.st.wake(wk.ex[i])
			default: // a Hijack's connection, taken in the cycle
				e.hj.deliver(wk.ex[i], &wk.upped[i])
			}
			continue
		}
		goneSeen := wk.upped[i].rc == goneAtStart && e.gn.on
		wk.taken.Add(1)
		var peer *C.struct_sockaddr_storage
		if wk.peers != nil {
			peer = &wk.peers[i]
		}
		if e.cfg.Async {
			e.dispatchAsync(wk, wk.ex[i], wk.reqs[i], peer, goneSeen)
			continue
		}
		rq, rw := &wk.rq[i], &wk.rw[i]
		rq.r, rq.peer = wk.reqs[i], peer
		rw.reset(e, wk, wk.ex[i])
		rw.streamedBody(wk, wk.reqs[i])
		e.gn.add(rw, goneSeen)
		tok := wk.driver
		e.serve(rq, rw)
		if tok.released {
			return false
		}
	}
	return true
}

// serve runs the handler; a panic, a Goexit or a missing answer becomes a 500
// that closes the connection (a stream begun is aborted instead), so no
// exchange is ever left behind.
func (e *Engine) serve(r *Request, w *ResponseWriter) {
	returned := false
	defer func() {
		if e.gn.on {
			e.gn.remove(w.ex)
		}
		p := recover()
		switch {
		case p != nil:
			e.stats.panics.Add(1)
		case !returned:
			e.stats.goexits.Add(1)
		case !w.answered:
			e.stats.unanswered.Add(1)
		}
		if p == nil && returned {
			if !w.answered {
				w.fail()
			}
		} else if s := w.stream; s != nil {
			_ = s.Abort() // ErrStreamOver when it had ended: nothing to do
		} else if !w.answered {
			w.fail()
		}
		if w.body != nil {
			w.body.stop() // after the answer: a read still waiting on another goroutine gives up
		}
	}()
	e.handler(r, w)
	returned = true
}
