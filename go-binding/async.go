package weir

/*
#include "weirgo.h"
*/
import "C"

import "sync"

// Async handlers run on goroutines kept between requests: one that has
// served waits for the next exchange (idle), so the stack it grew stays grown
// and no goroutine is created per request. A dispatch hands the exchange to
// an idle goroutine if one waits, else starts one; at most maxIdleHandlers
// wait at a time (memory), and they end with the engine. One handler that
// blocks holds only its own goroutine.

// asyncPair carries one exchange to its goroutine. The peer address is
// copied: the worker's peers array is rewritten by its next poll.
type asyncPair struct {
	rq   Request
	rw   ResponseWriter
	peer C.struct_sockaddr_storage
	wk   *worker
}

var asyncPairs = sync.Pool{New: func() any { return new(asyncPair) }}

const maxIdleHandlers = 256

func (e *Engine) dispatchAsync(wk *worker, ex *C.weir_exchange, r *C.weir_request, peer *C.struct_sockaddr_storage,
	goneSeen bool) {
	p := asyncPairs.Get().(*asyncPair)
	p.rq.r, p.rq.peer = r, nil
	if peer != nil {
		p.peer = *peer
		p.rq.peer = &p.peer
	}
	p.rw.reset(e, nil, ex)
	p.rw.home = wk
	p.rw.streamedBody(wk, r)
	e.gn.add(&p.rw, goneSeen)
	p.wk = wk
	e.inflight.Add(1)
	wk.running.Add(1)
	select {
	case e.idle <- p: // an idle handler goroutine takes it
	default:
		go e.handlerLoop(p)
	}
}

// handlerLoop serves p, then waits for the next exchange while fewer than
// maxIdleHandlers wait. A Goexit in a handler ends the goroutine (runAsync's
// accounting runs all the same); the next dispatch starts another.
func (e *Engine) handlerLoop(p *asyncPair) {
	for {
		e.runAsync(p)
		if e.idleCount.Add(1) > maxIdleHandlers {
			e.idleCount.Add(-1)
			return
		}
		select {
		case p = <-e.idle:
			e.idleCount.Add(-1)
		case <-e.done:
			e.idleCount.Add(-1)
			return
		}
	}
}

// asyncDone counts an async handler out: it no longer holds its worker's
// spin (running) nor the engine's destruction (inflight).
func (e *Engine) asyncDone(wk *worker) {
	wk.running.Add(-1)
	e.inflight.Done()
}

// A handler that hijacked was counted out by its Hijack (asyncDone), so a
// shutdown does not wait for it (net/http's Shutdown does not wait for
// hijacked connections either).
func (e *Engine) runAsync(p *asyncPair) {
	wk := p.wk
	hijacked := false
	defer func() { // also after a Goexit
		if !hijacked {
			e.asyncDone(wk)
		}
	}()
	func() {
		defer func() { hijacked = p.rw.hijacked }() // read before p can go back to the pool
		e.serve(&p.rq, &p.rw)
	}()
	if hijacked {
		return // not pooled: the handler's goroutines may still hold it
	}
	p.rq.r, p.rw.ex, p.rw.stream, p.wk = nil, nil, nil, nil
	asyncPairs.Put(p)
}
