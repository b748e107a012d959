package weir

/*
#include <errno.h>
#include "weirgo.h"
*/
import "C"

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Streamed request bodies (Config.StreamBodyBytes; weir's stream_body_bytes):
// a request whose body streams reaches its handler at its head, and the body
// is read with ResponseWriter.ReadBody as it arrives. weir_body_read must run
// on the worker's thread, so a read from a handler goroutine is posted to its
// worker (bodyQueue) and runs in the worker's next cycle, between the answers
// and the poll (weirgo_cycle); one that finds nothing (-EAGAIN) is parked
// until weir hands the exchange back in a poll batch, and runs again in the
// cycle after. An inline handler on the worker's own goroutine reads at once;
// when it must wait, it hands its worker off (handoff.go) and waits as an
// async one. A read asks weir for up to bodyReadMax bytes, whatever the
// caller's buffer: the rest waits in the reader (bodyReader), so small reads
// (io.ReadAll starts at 512 bytes) cost no crossing each.

const bodyReadMax = 64 << 10

// Errors of a streamed body's reads.
var (
	// ErrNotStreamed: ReadBody on a request whose body weir buffered (read
	// Request.Body instead).
	ErrNotStreamed = errors.New("weir: the request body is not streamed")
	// ErrBodyTimeout: no byte of the body came for Config.BodyTimeout.
	ErrBodyTimeout = errors.New("weir: request body timed out")
	// ErrBodyAfterAnswer: the answer began (or the handler returned) before
	// the body was read; weir closes the connection after the answer.
	ErrBodyAfterAnswer = errors.New("weir: request body read after the answer began")
)

// bodyRead is one read of a streamed body, the worker's from its post until
// its reply.
type bodyRead struct {
	ex     *C.weir_exchange
	buf    []byte     // the worker copies the bytes weir gave here
	reply  chan int64 // weir_body_read's result, once
	cancel bool       // under the queue's lock: the reader gave up waiting
	state  uint8      // the worker's: readPosted, readParked, readDone
	tomb   bool       // the worker's: cancelled while parked (see takeReads)
}

const (
	readPosted = iota
	readParked
	readDone
)

// bodyQueue is a worker's side of the reads: posted from any goroutine,
// taken into fresh by the cycle's goroutine, which alone touches the rest.
type bodyQueue struct {
	mu     sync.Mutex
	posted []*bodyRead
	closed bool
	npost  atomic.Int32  // len(posted), read without the lock by each cycle
	runs   atomic.Uint64 // reads weir ran (Metrics.BodyReads)
	waits  atomic.Uint64 // reads that found nothing and waited for a hand-back (Metrics.BodyWaits)
	wakes  atomic.Uint64 // weir_worker_wake crossings of posted reads (in Metrics.Wakes)
	direct atomic.Uint64 // reads an inline handler made itself, a crossing each (Metrics.DirectReads)

	fresh  []*bodyRead                    // run in the next cycle
	parked map[*C.weir_exchange]*bodyRead // told -EAGAIN: waiting for a hand-back
	tombs  []*bodyRead                    // cancelled while parked: run every cycle until weir says more than -EAGAIN
	reads  []C.weirgo_read
	arena  []byte
}

// postRead hands r to the worker and wakes its poll; false when the worker
// has stopped.
func (wk *worker) postRead(r *bodyRead) bool { return wk.enqueue(r, false) }

// cancelRead: the reader of r gives up (its handler answered): the worker
// drops it if it is parked, and replies to it if it has not.
func (wk *worker) cancelRead(r *bodyRead) { wk.enqueue(r, true) }

// enqueue posts r (again, with cancel: r.cancel is set under the same lock
// the cycle takes them with) and wakes the worker's poll.
func (wk *worker) enqueue(r *bodyRead, cancel bool) bool {
	q := &wk.bq
	q.mu.Lock()
	if cancel {
		r.cancel = true
	}
	if q.closed {
		q.mu.Unlock()
		return false
	}
	q.posted = append(q.posted, r)
	q.npost.Store(int32(len(q.posted)))
	q.mu.Unlock()
	q.wakes.Add(1)
	C.weir_worker_wake(wk.w)
	return true
}

// takeReads moves the posted reads to fresh and lays them out for the
// cycle. Returns the cycle's reads, their count and arena.
//
// A read cancelled while parked (its handler answered while another
// goroutine waited in ReadBody) is replied to now, but stays parked as a
// tomb: a hand-back of its exchange may still be on its way, and must not
// be taken for a new request. The answer was given before the cancel, so
// the tomb's own reads, run every cycle, soon find the exchange over
// (WEIR_E_STATE or WEIR_E_STALE) and it goes.
func (wk *worker) takeReads() (*C.weirgo_read, C.uint32_t, *C.char) {
	q := &wk.bq
	if q.npost.Load() == 0 && len(q.fresh) == 0 && len(q.tombs) == 0 {
		return nil, 0, nil // the usual cycle: no body is being read
	}
	q.mu.Lock()
	for _, r := range q.posted {
		switch {
		case !r.cancel:
			q.fresh = append(q.fresh, r)
		case r.state == readParked && !r.tomb:
			r.tomb = true
			r.reply <- int64(C.WEIR_E_STATE)
			q.tombs = append(q.tombs, r)
		case r.state == readPosted: // not run yet (or in fresh after a hand-back: readsDone sees it done)
			r.state = readDone
			r.reply <- int64(C.WEIR_E_STATE)
		}
	}
	clear(q.posted)
	q.posted = q.posted[:0]
	q.npost.Store(0)
	q.mu.Unlock()
	q.fresh = append(q.fresh, q.tombs...)
	if len(q.fresh) == 0 {
		return nil, 0, nil
	}
	q.reads = q.reads[:0]
	need := len(q.fresh) * bodyReadMax
	if cap(q.arena) < need {
		q.arena = make([]byte, need)
	}
	q.arena = q.arena[:need]
	for i, r := range q.fresh {
		q.reads = append(q.reads, C.weirgo_read{ex: r.ex, off: C.uint64_t(i * bodyReadMax),
			cap: C.uint64_t(min(len(r.buf), bodyReadMax))})
	}
	return &q.reads[0], C.uint32_t(len(q.reads)), (*C.char)(unsafe.Pointer(&q.arena[0]))
}

// readsDone delivers the cycle's results; a read told -EAGAIN is parked.
// Before the batch is dispatched: a hand-back in it may be for one parked now.
func (wk *worker) readsDone() {
	q := &wk.bq
	if len(q.fresh) == 0 {
		return
	}
	q.runs.Add(uint64(len(q.fresh)))
	tombs := q.tombs[:0]
	for i, r := range q.fresh {
		rc := int64(q.reads[i].rc)
		if r.tomb {
			if rc == -C.EAGAIN || rc > 0 {
				tombs = append(tombs, r) // its answer has not landed yet
			} else {
				delete(q.parked, r.ex)
			}
			continue
		}
		if r.state == readDone { // cancelled after it was put in fresh: replied to already
			if rc == -C.EAGAIN { // weir will hand ex back: a tomb takes it
				wk.park(r)
				r.tomb = true
				tombs = append(tombs, r)
			}
			continue
		}
		if rc == -C.EAGAIN {
			wk.park(r)
			continue
		}
		if rc > 0 {
			off := i * bodyReadMax
			copy(r.buf, q.arena[off:off+int(rc)])
		}
		r.state = readDone
		r.reply <- rc
	}
	clear(q.tombs[len(tombs):])
	q.tombs = tombs
	clear(q.fresh)
	q.fresh = q.fresh[:0]
	if cap(q.arena) > arenaKeep {
		q.arena = nil
	}
}

func (wk *worker) park(r *bodyRead) {
	q := &wk.bq
	if q.parked == nil {
		q.parked = make(map[*C.weir_exchange]*bodyRead)
	}
	r.state = readParked
	q.parked[r.ex] = r
	q.waits.Add(1)
}

// handedBack: ex came back in a poll batch; true when a parked read waited
// for it (it runs in the next cycle, and ex is no new request).
func (wk *worker) handedBack(ex *C.weir_exchange) bool {
	q := &wk.bq
	r, ok := q.parked[ex]
	if !ok {
		return false
	}
	if r.tomb {
		return true // runs every cycle anyway
	}
	delete(q.parked, ex)
	r.state = readPosted
	q.fresh = append(q.fresh, r)
	return true
}

// closeReads, once the worker stopped polling: every read waiting gets
// WEIR_E_SHUTDOWN, and later posts are refused.
func (wk *worker) closeReads() {
	q := &wk.bq
	q.mu.Lock()
	q.closed = true
	posted := q.posted
	q.posted = nil
	q.mu.Unlock()
	shut := int64(C.WEIR_E_SHUTDOWN)
	for _, r := range append(q.fresh, posted...) {
		if r.state == readPosted {
			r.state = readDone
			r.reply <- shut
		}
	}
	for ex, r := range q.parked {
		delete(q.parked, ex)
		if !r.tomb {
			r.state = readDone
			r.reply <- shut
		}
	}
	q.fresh, q.tombs = nil, nil
}

// bodyErr turns a weir_body_read result into ReadBody's error.
func bodyErr(rc int64) error {
	switch {
	case rc == 0:
		return io.EOF
	case rc == -C.ETIMEDOUT:
		return ErrBodyTimeout
	case rc == -C.ECONNABORTED || rc == int64(C.WEIR_E_GONE) || rc == int64(C.WEIR_E_SHUTDOWN):
		return io.ErrUnexpectedEOF
	case rc == int64(C.WEIR_E_STATE) || rc == int64(C.WEIR_E_STALE):
		return ErrBodyAfterAnswer
	case rc == int64(C.WEIR_E_BODY_TOO_LARGE):
		return ErrBodyTooLarge
	}
	return &Error{Op: "weir_body_read", Code: int(rc)}
}
