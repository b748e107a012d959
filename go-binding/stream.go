package weir

/*
#include <errno.h>
#include <stdlib.h>
#include "weirgo.h"
*/
import "C"

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Streamed answers (weir_stream_*): the head leaves now, the body in pieces,
// with weir's stream window as backpressure. A piece the window cannot take
// is refused with -EAGAIN, and weir hands the exchange back through the
// worker's poll once half the window has left; the worker then wakes the
// writer (streamTable.wake). Pieces are cut to half the window, so one
// hand-back always makes room for the next piece.

// ErrStreamFull is Stream.Write's answer on a worker's own goroutine (an
// inline handler) when the window is full: that goroutine cannot wait for
// room, which its own next poll reports. Hand the Stream to a goroutine
// instead; there Write waits.
var ErrStreamFull = errors.New("weir: stream window full inside an inline handler")

// ErrStreamOver is returned by calls on a Stream that has ended (End, Abort,
// or its connection died).
var ErrStreamOver = errors.New("weir: stream is over")

// LengthUnknown, as Stream's length, frames the body chunked (HTTP/1.1) or
// by closing the connection (HTTP/1.0).
const LengthUnknown int64 = -1

// streamRecheck bounds a writer's wait for a hand-back: weir does not hand a
// stream back when its connection dies, so a waiting writer retries at this
// pace and then learns the death from weir_stream_write.
const streamRecheck = 50 * time.Millisecond

// streamTable maps open streams to their writers' wake-up channels. open is
// counted (in C memory, which weirgo_cycle reads after each poll) before
// weir_stream_start, so every hand-back finds the stream counted.
type streamTable struct {
	open  *C.int32_t
	wakes sync.Map // *C.weir_exchange -> chan struct{}
	chunk int      // the largest piece: half the stream window

	started atomic.Uint64
	waits   atomic.Uint64
}

// init: open is the engine's watch[0] (Engine.watch), counted here.
func (t *streamTable) init(cfg *Config, open *C.int32_t) {
	t.open = open
	window := 256 << 10
	if cfg.StreamWindowBytes > 0 {
		window = cfg.StreamWindowBytes
	}
	out := 4 << 20
	if cfg.MaxOutputBytes > 0 {
		out = cfg.MaxOutputBytes
	}
	window = min(window, out)
	t.chunk = max(window/2, 1)
}

func (t *streamTable) add(s *Stream) {
	t.wakes.Store(s.ex, s.wake)
	atomic.AddInt32((*int32)(unsafe.Pointer(t.open)), 1)
}

func (t *streamTable) remove(s *Stream) {
	t.wakes.Delete(s.ex)
	atomic.AddInt32((*int32)(unsafe.Pointer(t.open)), -1)
}

// wake is the worker's: ex came back from its poll with room. A hand-back
// that finds no writer (the stream ended meanwhile) needs nothing.
func (t *streamTable) wake(ex *C.weir_exchange) {
	if c, ok := t.wakes.Load(ex); ok {
		select {
		case c.(chan struct{}) <- struct{}{}:
		default:
		}
	}
}

// Stream is a streamed answer, begun by ResponseWriter.Stream. It is owned by
// its caller, independently of the ResponseWriter, and may be written from any
// goroutine, one at a time, also after the handler returned. It must end with
// End or Abort (or its connection's death, which a call reports); a handler
// that panics with an open stream has it aborted.
type Stream struct {
	e     *Engine
	ex    *C.weir_exchange
	wake  chan struct{}
	timer *time.Timer
	over  atomic.Bool
	// SetWriteDeadline's (unix ns, 0: none): a Write that would wait past it
	// for room returns os.ErrDeadlineExceeded.
	deadline atomic.Int64
}

// SetWriteDeadline bounds Write's waits for the client to make room: a
// Write that is still waiting at t (or finds t passed when it must wait)
// returns os.ErrDeadlineExceeded with what it had sent; the stream stays
// open (Abort it: the client then sees a cut body). The zero time: none.
// Writes that find room never fail for it.
func (s *Stream) SetWriteDeadline(t time.Time) {
	var d int64
	if !t.IsZero() {
		d = max(t.UnixNano(), 1)
	}
	s.deadline.Store(d)
}

// Stream answers with status and the added headers now and returns the
// Stream that carries the body. length is the body's exact length
// (Content-Length) or LengthUnknown. For HEAD, 204 and 304 weir sends no body
// (pieces are accepted and dropped). Errors: ErrAnswered, ErrBadStatus,
// ErrShutdown, and weir's (ErrGone: the connection died; the exchange is
// consumed either way but for -EINVAL and WEIR_E_STATE).
func (w *ResponseWriter) Stream(status int, length int64) (*Stream, error) {
	if w.answered {
		return nil, ErrAnswered
	}
	if status < 200 || status > 999 {
		return nil, ErrBadStatus
	}
	e := w.e
	s := &Stream{e: e, ex: w.ex, wake: make(chan struct{}, 1)}
	hp, flags := w.encoded()
	n := C.uint64_t(C.WEIR_LENGTH_UNKNOWN)
	if length >= 0 {
		n = C.uint64_t(length)
	}
	e.life.RLock()
	defer e.life.RUnlock()
	if e.ce == nil {
		return nil, ErrShutdown
	}
	e.st.add(s) // before the start: weirgo_cycle must see every hand-back counted
	rc := C.weirgo_stream_start(w.ex, C.int(status), hp, C.uint32_t(w.nhdr), n, C.uint32_t(flags))
	if rc != 0 {
		e.st.remove(s)
		if rc != -C.EINVAL && rc != C.WEIR_E_STATE {
			w.answered = true // consumed
			e.countRespond(rc)
		}
		return nil, codeErr("weir_stream_start", rc)
	}
	w.answered = true
	w.stream = s
	e.st.started.Add(1)
	return s, nil
}

// Write sends p as one or more pieces. Off the workers' goroutines it waits
// while the window is full (the client reads slowly): memory stays bounded
// by the window. On one (an inline handler) it returns ErrStreamFull with
// what was taken.
// An error other than ErrStreamFull and weir's -EINVAL (past the announced
// length) ends the stream.
func (s *Stream) Write(p []byte) (int, error) {
	if s.over.Load() {
		return 0, ErrStreamOver
	}
	done := 0
	for len(p) > 0 {
		piece := p[:min(len(p), s.e.st.chunk)]
		rc := s.call(func() C.int {
			return C.weir_stream_write(s.ex, unsafe.Pointer(unsafe.SliceData(piece)), C.size_t(len(piece)))
		})
		switch {
		case rc == 0:
			done += len(piece)
			p = p[len(piece):]
		case rc == -C.EAGAIN:
			// Asked of the thread, not of the handler's mode: a goroutine
			// an inline handler started may write before that handler
			// has returned, and it may wait; the worker's may not.
			if C.weirgo_on_worker() != 0 {
				return done, ErrStreamFull
			}
			if !s.waitRoom() {
				return done, os.ErrDeadlineExceeded
			}
		case rc == -C.EINVAL:
			return done, codeErr("weir_stream_write", rc)
		default:
			s.finish(rc)
			return done, codeErr("weir_stream_write", rc)
		}
	}
	return done, nil
}

// End ends the body (a Length body must have had every byte: weir's -EINVAL
// otherwise, and the stream stays open).
func (s *Stream) End() error {
	if s.over.Load() {
		return ErrStreamOver
	}
	rc := s.call(func() C.int { return C.weir_stream_end(s.ex, nil, 0) })
	if rc == -C.EINVAL {
		return codeErr("weir_stream_end", rc)
	}
	s.finish(rc)
	return codeErr("weir_stream_end", rc)
}

// Abort ends the stream short: what was written still leaves, then the
// connection closes, so the client sees a cut body, never a whole-looking one.
func (s *Stream) Abort() error {
	if s.over.Load() {
		return ErrStreamOver
	}
	rc := s.call(func() C.int { return C.weir_stream_abort(s.ex) })
	s.finish(rc)
	return codeErr("weir_stream_abort", rc)
}

// call runs one native stream call while the engine is alive.
func (s *Stream) call(f func() C.int) C.int {
	e := s.e
	e.life.RLock()
	defer e.life.RUnlock()
	if e.ce == nil {
		return C.WEIR_E_SHUTDOWN
	}
	return f()
}

func (s *Stream) finish(rc C.int) {
	if s.over.Swap(true) {
		return
	}
	s.e.st.remove(s)
	if rc == C.WEIR_E_GONE || rc == C.WEIR_E_STALE {
		s.e.stats.gone.Add(1)
	}
}

// waitRoom waits for a hand-back (or streamRecheck); false: the write
// deadline passed.
func (s *Stream) waitRoom() bool {
	wait := streamRecheck
	if d := s.deadline.Load(); d != 0 {
		left := time.Until(time.Unix(0, d))
		if left <= 0 {
			return false
		}
		wait = min(wait, left)
	}
	s.e.st.waits.Add(1)
	if s.timer == nil {
		s.timer = time.NewTimer(wait)
	} else {
		s.timer.Reset(wait)
	}
	select {
	case <-s.wake:
	case <-s.timer.C:
	}
	return true
}
