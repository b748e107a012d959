package weirceleris

import (
	"errors"
	"net"
	"os"
	"strings"

	"github.com/goceleris/celeris/protocol/h2/stream"
	weir "github.com/weir-http/weir/go-binding"
)

// responseWriter is stream.ResponseWriter and stream.Streamer over one weir
// answer. Streamed writes are gathered and leave whole, with Content-Length,
// at Close (or when the handler returns), unless the handler flushes: Flush
// starts a weir.Stream (chunked) with what was gathered, and the writes after
// it go straight to that stream, so server-sent events leave as written.
type responseWriter struct {
	w        *weir.ResponseWriter
	started  bool // status and headers given
	sent     bool // the answer has crossed to weir
	status   int
	body     []byte
	st       *weir.Stream // after a Flush
	hijacked bool         // the handler took the connection
	whole    bool         // WriteResponse gave the answer: it leaves with finish
}

var (
	_ stream.ResponseWriter = (*responseWriter)(nil)
	_ stream.Streamer       = (*responseWriter)(nil)
	_ stream.Hijacker       = (*responseWriter)(nil)
	_ stream.FileResponder  = (*responseWriter)(nil)
)

// WriteFileResponse is celeris's zero-copy file answer (Context.File,
// FileFromDir, middleware/static, ranges included) over
// weir.ResponseWriter.RespondFile: the body goes from the file to the socket
// without passing through Go (sendfile on epoll, splice on io_uring), and
// weir keeps its own duplicate of the descriptor, so celeris may close the
// file at once. What weir refuses (not a regular file, a range past its
// end) is declined before anything is given, so celeris's buffered path
// answers instead, as its contract asks.
//
// celeris's engine-level engine.SendfileCapable is not implemented: it
// writes to the connection's raw descriptor, which is weir's, not the
// handler's; this is the path celeris's own epoll engine serves files by.
func (rw *responseWriter) WriteFileResponse(_ *stream.Stream, status int, headers [][2]string, file *os.File,
	offset, length int64) (bool, error) {
	if rw.started || rw.sent || file == nil || offset < 0 || length < 0 {
		return false, nil
	}
	if fi, err := file.Stat(); err != nil || !fi.Mode().IsRegular() || offset+length > fi.Size() {
		return false, nil // checked first: a refusal after the headers were given would send them twice
	}
	rw.headers(status, headers)
	ioRelease()
	err := rw.w.RespondFile(status, file, offset, length)
	rw.sent = true
	if errors.Is(err, weir.ErrNotRegular) {
		// Raced with a change to the file; nothing was sent. The headers
		// given stay on the writer, so answer here rather than decline: a
		// 500 that says so.
		_ = rw.w.RespondString(500, "file changed while it was answered")
	}
	return true, err
}

// Hijack is celeris's connection takeover (Context.Hijack, the websocket
// middleware's path on engines without celeris's own detach) over
// weir.ResponseWriter.Hijack: for a request that asked to upgrade, weir
// writes nothing and the conn is the handler's, which writes its own 101.
// Other requests: weir.ErrNotUpgrade, and the exchange is answered as usual.
// An inline handler (AsyncHandlers off) may hijack too: its worker goes on
// on another goroutine.
func (rw *responseWriter) Hijack(*stream.Stream) (net.Conn, error) {
	if rw.started || rw.sent {
		return nil, weir.ErrAnswered
	}
	c, err := rw.w.Hijack()
	if err != nil {
		return nil, err
	}
	rw.sent, rw.hijacked = true, true
	return c, nil
}

func (rw *responseWriter) reset() {
	rw.started, rw.whole, rw.body, rw.st = false, false, rw.body[:0], nil
}

func (rw *responseWriter) headers(status int, headers [][2]string) {
	rw.started = true
	rw.status = status
	for _, h := range headers {
		name := h[0]
		if strings.EqualFold(name, "connection") {
			if strings.EqualFold(h[1], "close") {
				rw.w.SetClose()
			}
			continue
		}
		// Content-Length, Transfer-Encoding and Date are weir's; other
		// refused fields (bad bytes) are dropped.
		_ = rw.w.AddHeader(name, h[1])
	}
}

func (rw *responseWriter) finish(status int) {
	if !rw.started {
		rw.status = status
	}
	rw.sent = true
	_ = rw.w.Respond(rw.status, rw.body)
}

// WriteResponse gives a whole answer (celeris's hot path). It leaves when
// HandleStream returns (serve's finish), as on celeris's own engines, whose
// event loop writes after the handler: celeris's router times the handler
// after it wrote (adaptive routes), and an async handler's answer crossing at
// once could reach the client before that (TestAdaptiveImmediatePromote_Epoll
// failed 1 run in 20 so). The body is copied: celeris reuses its buffer.
func (rw *responseWriter) WriteResponse(_ *stream.Stream, status int, headers [][2]string, body []byte) error {
	if rw.sent || rw.whole {
		return weir.ErrAnswered
	}
	rw.headers(status, headers)
	rw.whole = true
	rw.body = append(rw.body[:0], body...)
	return nil
}

// WriteHeader starts a streamed answer.
func (rw *responseWriter) WriteHeader(_ *stream.Stream, status int, headers [][2]string) error {
	if rw.started {
		return weir.ErrAnswered
	}
	rw.headers(status, headers)
	return nil
}

// Write gathers a chunk of a streamed answer, or after a Flush writes it to
// the stream.
func (rw *responseWriter) Write(_ *stream.Stream, data []byte) error {
	if rw.st != nil {
		ioRelease()
		_, err := rw.st.Write(data)
		return err
	}
	if rw.sent || rw.whole {
		return weir.ErrAnswered
	}
	if !rw.started {
		rw.headers(200, nil)
	}
	rw.body = append(rw.body, data...)
	return nil
}

// Flush sends what was given so far: the status and headers, then what was
// gathered, as the start of a chunked weir.Stream (once; a stream flushes
// itself, each write leaves with the worker's next pass). In either
// execution mode.
func (rw *responseWriter) Flush(*stream.Stream) error {
	if rw.st != nil {
		return nil
	}
	if rw.sent {
		return weir.ErrAnswered
	}
	ioRelease()
	if rw.whole { // a whole answer given: it leaves now
		rw.finish(rw.status)
		return nil
	}
	if !rw.started {
		rw.headers(200, nil)
	}
	// An inline handler (AsyncHandlers off) that flushes is about to wait
	// between its writes: hand its worker on, so what it flushes leaves now
	// and the worker's other connections go on (weir.ResponseWriter.HandOff).
	if err := rw.w.HandOff(); err != nil {
		return err
	}
	st, err := rw.w.Stream(rw.status, weir.LengthUnknown)
	if err != nil {
		return err
	}
	rw.st, rw.sent = st, true
	if len(rw.body) > 0 {
		_, err = st.Write(rw.body)
		rw.body = rw.body[:0]
	}
	return err
}

// Close ends a streamed answer: sends it whole, or ends the stream a Flush
// began.
func (rw *responseWriter) Close(*stream.Stream) error {
	if rw.st != nil {
		err := rw.st.End()
		if errors.Is(err, weir.ErrStreamOver) {
			return nil // ended already
		}
		return err
	}
	if rw.sent {
		return nil
	}
	rw.finish(200)
	return nil
}
