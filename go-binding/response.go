package weir

/*
#include "weirgo.h"
*/
import "C"

import (
	"encoding/binary"
	"unsafe"
)

// Handler answers one request through the zero-copy API. It must answer
// (w.Respond) before it returns; a handler that returns without answering, or
// panics, gets a 500 sent for it and is counted in Metrics.
type Handler func(r *Request, w *ResponseWriter)

// inlineBodyCopy: answers with bodies up to this size are copied into the
// worker's arena (inline) or mailbox (async) and leave with its next poll
// (one crossing per batch); larger ones are answered at once with their own
// crossing, without the copy.
const inlineBodyCopy = 32 << 10

// ResponseWriter answers one exchange. Inline handlers' answers are queued on
// the worker and handed to weir with its next poll; async handlers' answers
// go to the worker's mailbox and ride its next cycle, which the first of them
// wakes (weir_worker_wake). Not safe for concurrent use.
type ResponseWriter struct {
	ex       *C.weir_exchange
	wk       *worker // inline: answers queue on the worker; nil for async handlers
	home     *worker // async: the worker whose mailbox carries small answers
	e        *Engine
	hdr      []byte // [u32 name_len][u32 value_len][name][value]...
	nhdr     uint32
	close    bool
	answered bool
	hijacked bool        // Hijack took the connection (hijack.go)
	abortAns bool        // the answer is no answer: WEIR_RESPOND_ABORT (abortAnswer)
	goneFlag bool        // the client has gone (gone.go; under e.gn.mu once dispatched)
	goneFn   func()      // NotifyGone's callback, not yet run
	stream   *Stream     // begun by Stream: aborted if the handler panics
	body     *bodyReader // a streamed request body's reads (body_reader.go), else nil
}

func (w *ResponseWriter) reset(e *Engine, wk *worker, ex *C.weir_exchange) {
	w.ex, w.wk, w.e, w.home = ex, wk, e, nil
	w.hdr = w.hdr[:0]
	w.nhdr = 0
	w.close = false
	w.answered = false
	w.hijacked = false
	w.abortAns = false
	w.goneFlag, w.goneFn = false, nil
	w.stream = nil
	w.body = nil
}

// streamedBody readies ReadBody for a request whose body streams.
func (w *ResponseWriter) streamedBody(wk *worker, r *C.weir_request) {
	if bodyStreams(r) {
		w.body = newBodyReader(wk, bodyLength(r))
	}
}

// AddHeader adds a response header field. Content-Length, Transfer-Encoding,
// Connection and Date are weir's (ErrReservedHeader); use SetClose to close.
func (w *ResponseWriter) AddHeader(name, value string) error {
	if w.answered {
		return ErrAnswered
	}
	if err := checkHeader(name, value); err != nil {
		return err
	}
	var n [8]byte
	binary.NativeEndian.PutUint32(n[0:4], uint32(len(name)))
	binary.NativeEndian.PutUint32(n[4:8], uint32(len(value)))
	w.hdr = append(w.hdr, n[:]...)
	w.hdr = append(w.hdr, name...)
	w.hdr = append(w.hdr, value...)
	w.nhdr++
	return nil
}

// SetClose closes the connection after this answer.
func (w *ResponseWriter) SetClose() { w.close = true }

// Answered reports whether Respond was called.
func (w *ResponseWriter) Answered() bool { return w.answered }

// Respond sends the answer: status (200..999), the added headers, body. weir
// adds Content-Length and Date and frames it. body is copied before Respond
// returns (or into an arena that crosses with the worker's next cycle), so
// the caller may reuse it. After Respond the Request's views are no longer
// valid. ErrGone reports a connection that died first, for answers that
// cross at once (bodies over 32 KiB); the others learn it after the cycle
// that carried them, where it is counted in Metrics.Gone.
func (w *ResponseWriter) Respond(status int, body []byte) error {
	return w.respond(status, unsafe.Pointer(unsafe.SliceData(body)), len(body))
}

// RespondString is Respond with a string body, without converting it.
func (w *ResponseWriter) RespondString(status int, body string) error {
	return w.respond(status, unsafe.Pointer(unsafe.StringData(body)), len(body))
}

func (w *ResponseWriter) respond(status int, body unsafe.Pointer, n int) error {
	if w.answered {
		return ErrAnswered
	}
	if status < 200 || status > 999 {
		return ErrBadStatus
	}
	w.answered = true
	if w.body != nil && w.body.gone.Load() {
		if w.body.tooLarge.Load() {
			return ErrBodyTooLarge // weir answered 413 and consumed the exchange
		}
		return ErrGone // a body read found the connection dead: weir consumed the exchange
	}
	var flags uint32
	if w.close {
		flags |= C.WEIR_RESPOND_CLOSE
	}
	if w.abortAns {
		flags |= C.WEIR_RESPOND_ABORT
	}
	if wk := w.wk; wk != nil && n <= inlineBodyCopy {
		wk.queue(w.ex, status, flags, w.hdr, w.nhdr, unsafe.Slice((*byte)(body), n))
		return nil
	}
	if h := w.home; h != nil && n <= inlineBodyCopy && h.post(w.ex, status, flags, w.hdr, w.nhdr, unsafe.Slice((*byte)(body), n)) {
		return nil // crosses with the worker's next cycle (mailbox.go)
	}
	return w.e.respondNow(w.ex, status, flags, w.hdr, w.nhdr, body, n)
}

// encoded is the added headers as weirgo's C helpers take them, and the
// answer's flags, for the answers that cross at once (streams, files).
func (w *ResponseWriter) encoded() (*C.char, uint32) {
	var flags uint32
	if w.close {
		flags |= C.WEIR_RESPOND_CLOSE
	}
	var hp *C.char
	if w.nhdr > 0 {
		hp = (*C.char)(unsafe.Pointer(&w.hdr[0]))
	}
	return hp, flags
}

// abortAnswer answers nothing: the answers before this one leave, then the
// connection closes (WEIR_RESPOND_ABORT), as net/http treats a handler that
// panicked before its answer began.
func (w *ResponseWriter) abortAnswer() {
	w.hdr = w.hdr[:0]
	w.nhdr = 0
	w.close = true
	w.abortAns = true
	_ = w.respond(500, nil, 0)
}

// resetHeaders drops the added headers (an answer attempt that was refused
// and is made again otherwise).
func (w *ResponseWriter) resetHeaders() {
	w.hdr = w.hdr[:0]
	w.nhdr = 0
}

// fail answers 500 with Connection: close for a handler that panicked or
// returned without answering.
func (w *ResponseWriter) fail() {
	w.hdr = w.hdr[:0]
	w.nhdr = 0
	w.close = true
	w.answered = false
	_ = w.respond(500, nil, 0)
}

func (e *Engine) respondNow(ex *C.weir_exchange, status int, flags uint32, hdr []byte, nhdr uint32,
	body unsafe.Pointer, n int) error {
	var hp *C.char
	if nhdr > 0 {
		hp = (*C.char)(unsafe.Pointer(&hdr[0]))
	}
	if n == 0 {
		body = nil
	}
	e.stats.responds.Add(1)
	rc := cRespond(ex, C.int(status), hp, C.uint32_t(nhdr), body, C.size_t(n), C.uint32_t(flags))
	e.countRespond(rc)
	return codeErr("weir_respond", rc)
}

func (e *Engine) countRespond(rc C.int) {
	switch {
	case rc == 0:
	case rc == C.WEIR_E_GONE:
		e.stats.gone.Add(1)
	default:
		e.stats.refused.Add(1)
	}
}

// checkHeader refuses what weir owns and what would break the framing.
func checkHeader(name, value string) error {
	if len(name) == 0 {
		return ErrBadHeader
	}
	for i := 0; i < len(name); i++ {
		if !isToken(name[i]) {
			return ErrBadHeader
		}
	}
	for i := 0; i < len(value); i++ {
		if c := value[i]; c == '\r' || c == '\n' || c == 0 {
			return ErrBadHeader
		}
	}
	if isReserved(name) {
		return ErrReservedHeader
	}
	return nil
}

func isReserved(name string) bool {
	switch len(name) {
	case 4:
		return asciiEqualFold(name, "date")
	case 10:
		return asciiEqualFold(name, "connection")
	case 14:
		return asciiEqualFold(name, "content-length")
	case 17:
		return asciiEqualFold(name, "transfer-encoding")
	}
	return false
}

func asciiEqualFold(s, lower string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

func isToken(c byte) bool {
	if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}
