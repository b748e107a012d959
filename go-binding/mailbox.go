package weir

/*
#cgo nocallback weir_worker_wake
#include "weirgo.h"
*/
import "C"

import (
	"sync"
	"sync/atomic"
)

// mailbox carries async handlers' answers to their worker, so they cross to
// weir with its next cycle (weirgo_cycle) instead of one weir_respond each.
// The first answer after a cycle took the box wakes the worker's poll
// (weir_worker_wake, one crossing); the answers that follow before the next
// cycle ride along free. Under load most cycles carry several.
type mailbox struct {
	mu     sync.Mutex
	ans    []C.weirgo_answer
	arena  []byte
	closed bool        // the worker has stopped: answers go straight to weir
	woken  atomic.Bool // a wake is owed or under way since the last take
	wakes  atomic.Uint64
	posted atomic.Uint64
}

// post queues one answer; false when the worker has stopped (the caller
// answers at once instead).
func (wk *worker) post(ex *C.weir_exchange, status int, flags uint32, hdr []byte, nhdr uint32, body []byte) bool {
	mb := &wk.mb
	mb.mu.Lock()
	if mb.closed {
		mb.mu.Unlock()
		return false
	}
	mb.ans, mb.arena = appendAnswer(mb.ans, mb.arena, ex, status, flags, hdr, nhdr, body)
	mb.mu.Unlock()
	mb.posted.Add(1)
	if !mb.woken.Swap(true) {
		mb.wakes.Add(1)
		C.weir_worker_wake(wk.w)
	}
	return true
}

// take moves the posted answers into the worker's own queue. Only async
// mode posts and only inline mode queues (the modes are exclusive), so the
// queue is empty here and the two swap buffers. Before a poll that may wait,
// lower is set and the flag is lowered first: an answer posted after it wakes
// the poll, and none is left behind. Before one that does not wait the flag
// stays raised, so posters skip a wake the worker does not need.
func (wk *worker) take(lower bool) {
	mb := &wk.mb
	if lower {
		mb.woken.Store(false)
	}
	mb.mu.Lock()
	if len(mb.ans) > 0 {
		wk.ans, mb.ans = mb.ans, wk.ans[:0]
		wk.arena, mb.arena = mb.arena, wk.arena[:0]
	}
	mb.mu.Unlock()
}

// closeBox ends posting once the worker has stopped polling; what was posted
// and not taken is answered now.
func (wk *worker) closeBox() {
	mb := &wk.mb
	mb.mu.Lock()
	mb.closed = true
	ans, arena := mb.ans, mb.arena
	mb.ans, mb.arena = nil, nil
	mb.mu.Unlock()
	for _, a := range ans {
		var hdr []byte
		if a.nhdr > 0 {
			hdr = arena[a.hdr_off:]
		}
		body := arena[a.body_off : a.body_off+a.body_len]
		var p *byte
		if len(body) > 0 {
			p = &body[0]
		}
		_ = wk.e.respondNow(a.ex, int(a.status), uint32(a.flags), hdr, uint32(a.nhdr), unsafeByte(p), len(body))
	}
}
