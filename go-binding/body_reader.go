package weir

/*
#include <errno.h>
#include "weirgo.h"
*/
import "C"

import (
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// bodyReader is one streamed body's reading state (body.go has the worker's
// side). A new one for each request whose body streams: a read cancelled
// while parked may still land in buf, so buf is never another request's.
type bodyReader struct {
	wk       *worker // the exchange's worker
	buf      []byte  // what the last read gave, [off, n) not yet returned
	off, n   int
	err      error       // the body is over: io.EOF, or why not
	gone     atomic.Bool // a read found the connection dead (WEIR_E_GONE), or past MaxBody: the exchange is consumed
	tooLarge atomic.Bool // it was past MaxBody (WEIR_E_BODY_TOO_LARGE): weir answered 413
	rmu      sync.Mutex  // one read at a time (the adapter's drain must not join another goroutine's)
	mu       sync.Mutex
	inflight *bodyRead // a read waiting for its worker (ReadBody on another goroutine may be in it)
	stopped  bool
	size     int // buf's first size: the body's length when known and small
	// SetReadDeadline's (unix ns, 0: none). A read that waits past it
	// returns os.ErrDeadlineExceeded and stays posted as pending, so the
	// bytes it brings are the next read's, never lost.
	deadline atomic.Int64
	pending  *bodyRead // under rmu
}

// rcDeadline: fill's result for a wait that passed the read deadline.
const rcDeadline = math.MinInt64

// SetReadDeadline bounds the waits of ReadBody (a streamed body's reads that
// find no bytes yet): one that waits past t returns os.ErrDeadlineExceeded,
// and a later one (with the deadline moved, or none) goes on where the body
// is: no byte is lost. A read that is waiting already keeps the deadline it
// started with. The zero time: no deadline. A body weir buffered is never
// waited for; nor is a body that is not streamed (nothing to do: nil).
func (w *ResponseWriter) SetReadDeadline(t time.Time) {
	if b := w.body; b != nil {
		var d int64
		if !t.IsZero() {
			d = max(t.UnixNano(), 1)
		}
		b.deadline.Store(d)
	}
}

func newBodyReader(wk *worker, length int64) *bodyReader {
	size := bodyReadMax
	if length >= 0 && length < int64(size) {
		size = max(int(length), 1)
	} else if length < 0 {
		size = 4 << 10 // a chunked body: grown to bodyReadMax when reads fill it
	}
	return &bodyReader{wk: wk, size: size}
}

// ReadBody reads the next bytes of a streamed request body
// (Request.BodyStreamed) into p: n > 0 and a nil error, or io.EOF once the
// body is whole (a chunked body's trailer fields are then in
// Request.TrailerAt), or why it will not be: ErrBodyTimeout,
// io.ErrUnexpectedEOF (the client went mid-body, or the engine shut down),
// ErrBodyAfterAnswer, an *Error for a malformed chunked body (answer it with
// 400; the connection closes after the answer). The first read of a request
// that expects 100-continue sends the 100 Continue: a handler that answers
// without reading refuses the body, and the client never sends it. Any
// answer before io.EOF closes the connection after it (weir discards the
// rest). Call it from the handler's goroutine, before its answer; an inline
// handler that must wait for bytes hands its worker off (HandOff) and goes
// on as an async one. ErrNotStreamed for a body weir buffered (Request.Body).
func (w *ResponseWriter) ReadBody(p []byte) (int, error) {
	b := w.body
	if b == nil {
		return 0, ErrNotStreamed
	}
	return w.readBody(b, p)
}

func (w *ResponseWriter) readBody(b *bodyReader, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	b.rmu.Lock()
	defer b.rmu.Unlock()
	return w.readLocked(b, p)
}

func (w *ResponseWriter) readLocked(b *bodyReader, p []byte) (int, error) {
	if b.off == b.n {
		if b.err != nil {
			return 0, b.err
		}
		rc := w.fill(b)
		if rc == rcDeadline {
			return 0, os.ErrDeadlineExceeded // not the body's end: a later read goes on
		}
		if rc <= 0 {
			b.err = bodyErr(rc)
			if rc == int64(C.WEIR_E_GONE) || rc == int64(C.WEIR_E_BODY_TOO_LARGE) {
				b.tooLarge.Store(rc == int64(C.WEIR_E_BODY_TOO_LARGE))
				b.gone.Store(true) // either way weir consumed the exchange
			}
			return 0, b.err
		}
		b.off, b.n = 0, int(rc)
	}
	k := copy(p, b.buf[b.off:b.n])
	b.off += k
	return k, nil
}

// fill reads once into b.buf: at once on the inline worker's own goroutine,
// else through the worker's cycle.
func (w *ResponseWriter) fill(b *bodyReader) int64 {
	if r := b.pending; r != nil { // the read that outlived its deadline: its bytes land in b.buf
		b.pending = nil
		return b.wait(r)
	}
	if d := b.deadline.Load(); d != 0 && time.Now().UnixNano() >= d {
		return rcDeadline
	}
	if b.buf == nil {
		b.buf = make([]byte, b.size)
	} else if b.n == len(b.buf) && len(b.buf) < bodyReadMax {
		b.buf = make([]byte, bodyReadMax) // the last read filled it: reads come in larger pieces
	}
	if w.wk != nil && C.weirgo_on_worker() != 0 {
		w.wk.bq.runs.Add(1)
		w.wk.bq.direct.Add(1)
		rc := int64(C.weir_body_read(w.ex, unsafe.Pointer(&b.buf[0]), C.size_t(len(b.buf))))
		if rc != -C.EAGAIN {
			return rc
		}
		// Parked before the hand-off, by this worker's driver still: the
		// hand-back the new driver polls finds it.
		r := b.newRead(w.ex)
		w.wk.park(r)
		b.mu.Lock()
		b.inflight = r
		b.mu.Unlock()
		if err := w.HandOff(); err != nil {
			panic(err) // cannot happen: this is the worker's own goroutine
		}
		return b.wait(r)
	}
	r := b.newRead(w.ex)
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return int64(C.WEIR_E_STATE)
	}
	b.inflight = r
	b.mu.Unlock()
	if !b.wk.postRead(r) {
		b.mu.Lock()
		b.inflight = nil
		b.mu.Unlock()
		return int64(C.WEIR_E_SHUTDOWN)
	}
	return b.wait(r)
}

func (b *bodyReader) newRead(ex *C.weir_exchange) *bodyRead {
	return &bodyRead{ex: ex, buf: b.buf, reply: make(chan int64, 1)}
}

func (b *bodyReader) wait(r *bodyRead) int64 {
	rc, ok := b.await(r)
	if !ok {
		b.pending = r // still posted (b.inflight): stop cancels it as any other
		return rcDeadline
	}
	b.mu.Lock()
	b.inflight = nil
	b.mu.Unlock()
	return rc
}

// await waits for r's reply until the read deadline; false: it passed first.
func (b *bodyReader) await(r *bodyRead) (int64, bool) {
	d := b.deadline.Load()
	if d == 0 {
		return <-r.reply, true
	}
	wait := time.Until(time.Unix(0, d))
	if wait <= 0 {
		select {
		case rc := <-r.reply:
			return rc, true
		default:
			return 0, false
		}
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case rc := <-r.reply:
		return rc, true
	case <-t.C:
		return 0, false
	}
}

// stop, once the exchange is answered: a read another goroutine waits in
// is cancelled (it returns ErrBodyAfterAnswer), and later ones fail so.
func (b *bodyReader) stop() {
	b.mu.Lock()
	b.stopped = true
	r := b.inflight
	b.mu.Unlock()
	if r != nil {
		b.wk.cancelRead(r)
	}
}

// BodyStreamed reports whether the body streams (Config.StreamBodyBytes):
// Body is then empty and ResponseWriter.ReadBody reads it as it arrives.
func (r *Request) BodyStreamed() bool { return bodyStreams(r.r) }

// BodyLength is the body's declared length (its Content-Length), -1 for a
// chunked one, 0 when there is none.
func (r *Request) BodyLength() int64 { return bodyLength(r.r) }

func bodyStreams(r *C.weir_request) bool { return r.flags&C.WEIR_REQ_BODY_STREAM != 0 }

func bodyLength(r *C.weir_request) int64 {
	if r.body_length == C.WEIR_LENGTH_UNKNOWN {
		return -1
	}
	return int64(r.body_length)
}

// ExpectsContinue reports an "Expect: 100-continue" request: its 100 Continue
// goes with the first ReadBody (the body streams whenever StreamBodyBytes is
// set), or natively before the handler runs when bodies are buffered.
func (r *Request) ExpectsContinue() bool { return r.r.flags&C.WEIR_REQ_EXPECT_CONTINUE != 0 }
