package weir

import (
	"bufio"
	"bytes"
	"errors"
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The net/http adapter's http.ResponseWriter (see ServeHTTP for what it
// promises).

const (
	// streamAfter: an answer whose body passes this before the handler
	// returns streams instead of being held whole (net/http switches to
	// chunked at its own buffer's size the same way).
	streamAfter = 64 << 10
	// streamGather: a streaming answer's writes gather up to this before
	// they cross to weir as one piece (and at every Flush).
	streamGather = 32 << 10
)

type httpWriter struct {
	w       *ResponseWriter
	header  http.Header // the handler's
	sent    http.Header // taken at WriteHeader: what is sent
	sentMap http.Header // sent's map and values, kept with the pooled writer
	sentVal []string
	status  int
	buf     bytes.Buffer
	flushed bool
	body    *nativeBody     // not pooled: a handler may keep r.Body past its return
	sbody   *httpStreamBody // the same, for a body that streams
	stream  *Stream         // once the answer streams
	err     error           // the stream's failure: later writes report it
	hijack  bool            // Hijack took the connection
	filed   bool            // ReadFrom answered from a file (nethttp_file.go): the answer is sent
	head    bool            // the request is HEAD
	wdl     time.Time       // SetWriteDeadline's, given to the stream when it begins
	chunked bool            // the stream is framed chunked (trailers can follow)
}

// httpUpgradeWriter is the writer of a request that asked to upgrade: the
// only one that is an http.Hijacker, since weir can give the connection up
// only after such a request (hijack.go). Every other request's writer has
// no Hijack method, so w.(http.Hijacker) fails and
// http.ResponseController.Hijack returns http.ErrNotSupported.
type httpUpgradeWriter struct{ *httpWriter }

var httpWriters = sync.Pool{New: func() any { return &httpWriter{} }}

func putHTTPWriter(hw *httpWriter) {
	hw.w = nil
	hw.header = nil
	hw.sent = nil
	hw.body = nil
	hw.sbody = nil
	hw.stream = nil
	hw.err = nil
	hw.hijack = false
	hw.filed = false
	hw.chunked = false
	hw.head = false
	hw.wdl = time.Time{}
	if hw.buf.Cap() > 64<<10 {
		hw.buf = bytes.Buffer{}
	}
	httpWriters.Put(hw)
}

func (hw *httpWriter) Header() http.Header { return hw.header }

func (hw *httpWriter) WriteHeader(code int) {
	if hw.status != 0 {
		return
	}
	if code >= 100 && code < 200 {
		if code != 101 && !hw.hijack {
			hw.interim(code)
		}
		return // 101 is a Hijack's to write
	}
	if code < 200 || code > 999 {
		panic("weir: invalid WriteHeader code " + strconv.Itoa(code))
	}
	hw.status = code
	hw.sent = hw.snapshot()
}

// snapshot is hw.header.Clone() into the writer's own map and value array,
// reused from request to request: what WriteHeader freezes must not follow
// the handler's later changes (net/http's rule), and the copy need not cost
// three allocations an answer. The values are copied, not shared, so a
// handler that edits a slice in place after WriteHeader changes nothing sent.
func (hw *httpWriter) snapshot() http.Header {
	if hw.header == nil {
		return nil
	}
	n := 0
	for _, vs := range hw.header {
		n += len(vs)
	}
	if hw.sentMap == nil || len(hw.sentMap) > 64 || cap(hw.sentVal) > 1024 {
		hw.sentMap = make(http.Header, len(hw.header))
		hw.sentVal = nil
	}
	clear(hw.sentMap)
	if cap(hw.sentVal) < n {
		hw.sentVal = make([]string, 0, n)
	}
	vals := hw.sentVal[:0]
	for k, vs := range hw.header {
		if vs == nil { // Clone keeps a nil value nil (net/http: the field is suppressed)
			hw.sentMap[k] = nil
			continue
		}
		off := len(vals)
		vals = append(vals, vs...)
		hw.sentMap[k] = vals[off:len(vals):len(vals)]
	}
	clear(vals[len(vals):cap(vals)]) // no string kept alive past its answer
	hw.sentVal = vals
	return hw.sentMap
}

func (hw *httpWriter) Write(p []byte) (int, error) {
	if err := hw.writable(); err != nil {
		return 0, err
	}
	hw.buf.Write(p)
	return len(p), hw.gathered()
}

func (hw *httpWriter) WriteString(s string) (int, error) {
	if err := hw.writable(); err != nil {
		return 0, err
	}
	hw.buf.WriteString(s)
	return len(s), hw.gathered()
}

func (hw *httpWriter) writable() error {
	if hw.hijack {
		return http.ErrHijacked
	}
	if hw.filed {
		return http.ErrContentLength // the file was the whole body its Content-Length announced
	}
	if hw.status == 0 {
		hw.WriteHeader(http.StatusOK)
	}
	if !bodyAllowed(hw.status) {
		return http.ErrBodyNotAllowed
	}
	return hw.err
}

// gathered pushes what was written once there is enough of it.
func (hw *httpWriter) gathered() error {
	switch {
	case hw.stream != nil && hw.buf.Len() >= streamGather:
		return hw.push()
	case hw.stream == nil && hw.canStream() && hw.buf.Len() > streamAfter:
		return hw.push()
	}
	return nil
}

// canStream: only a handler off the worker's goroutine may wait for the
// client (an inline one would stall its worker, and the room it waits for is
// reported by that worker's own poll).
func (hw *httpWriter) canStream() bool { return hw.w.wk == nil }

// Flush sends the head and what was written so far (see ServeHTTP). An
// inline handler that flushes is handed off first (ResponseWriter.HandOff):
// it streams, and may wait, while its worker goes on without it.
func (hw *httpWriter) Flush() { _ = hw.FlushError() }

// FlushError is Flush for http.ResponseController.
func (hw *httpWriter) FlushError() error {
	if hw.hijack {
		return http.ErrHijacked
	}
	if hw.status == 0 {
		hw.WriteHeader(http.StatusOK)
	}
	hw.flushed = true
	if hw.filed {
		return nil // on its way
	}
	if !hw.canStream() && hw.w.HandOff() != nil {
		return nil // not the handler's goroutine: the answer leaves whole at its end
	}
	if hw.err != nil {
		return hw.err
	}
	return hw.push()
}

// Hijack is http.Hijacker over ResponseWriter.Hijack: it works for a request
// that asked to upgrade (weir parses nothing after one until it is
// answered), and returns weir.ErrNotUpgrade for any other, which is then
// answered as usual. A status given with WriteHeader is dropped, as the
// handler answers on the connection; once the answer has begun streaming it
// is too late (ErrAnswered). r.Body must not be read after it.
func (hw *httpUpgradeWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if hw.hijack {
		return nil, nil, http.ErrHijacked
	}
	if hw.stream != nil || hw.filed {
		return nil, nil, ErrAnswered
	}
	c, err := hw.w.Hijack()
	if err != nil {
		return nil, nil, err
	}
	hw.hijack = true
	if hw.body != nil {
		hw.body.closed.Store(true)
	}
	return c, bufio.NewReadWriter(bufio.NewReader(c), bufio.NewWriter(c)), nil
}

func bodyAllowed(status int) bool { return status != 204 && status != 304 }

// push begins the stream if it has not begun, then sends what is gathered.
func (hw *httpWriter) push() error {
	if hw.stream == nil {
		hw.addHeaders()
		length := LengthUnknown
		if _, declared := hw.sent["Trailer"]; declared || hw.hasTrailers() {
			// trailers need chunked framing: the handler's Content-Length yields
		} else if v := hw.sent.Get("Content-Length"); v != "" {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
				length = n // the handler's promise: kept, as net/http keeps it
			}
		}
		s, err := hw.w.Stream(hw.status, length)
		if err != nil {
			hw.err = err
			return err
		}
		hw.stream = s
		hw.chunked = length == LengthUnknown
		s.SetWriteDeadline(hw.wdl)
	}
	if hw.buf.Len() == 0 {
		return nil
	}
	_, err := hw.stream.Write(hw.buf.Bytes())
	hw.buf.Reset()
	var we *Error
	if errors.As(err, &we) && we.Code == -int(syscall.EINVAL) {
		err = http.ErrContentLength // past the handler's Content-Length
	}
	if err != nil {
		hw.err = err
	}
	return err
}

// addHeaders hands the header map taken at WriteHeader to the native writer.
func (hw *httpWriter) addHeaders() {
	w := hw.w
	body := hw.buf.Bytes()
	if _, ok := hw.sent["Content-Type"]; !ok && len(body) > 0 && bodyAllowed(hw.status) {
		hw.sent.Set("Content-Type", http.DetectContentType(body))
	}
	for k, vs := range hw.sent {
		switch {
		case k == "Connection":
			for _, v := range vs {
				if asciiEqualFold(v, "close") && len(v) == 5 {
					w.SetClose()
				}
			}
			continue
		case isReserved(k), strings.HasPrefix(k, http.TrailerPrefix):
			continue
		}
		for _, v := range vs {
			if w.AddHeader(k, v) != nil {
				continue // invalid fields are dropped, as net/http does
			}
		}
	}
}

// finish answers once the handler has returned: the whole answer, or the
// stream's rest and its end. A stream short of its Content-Length (or
// failed) is aborted, so the client sees a cut body, never a whole-looking one.
func (hw *httpWriter) finish() {
	if hw.hijack || hw.filed {
		return // the handler answered on the connection itself, or the file is on its way
	}
	if hw.status == 0 {
		hw.WriteHeader(http.StatusOK)
	}
	tr := hw.trailers()
	if len(tr) > 0 && hw.stream == nil && !hw.canStream() && hw.buf.Len() > 2*hw.w.e.st.chunk {
		// An inline handler's answer held whole past the stream window
		// cannot go chunked from the worker's goroutine (it would find the
		// window full and could not wait): sent whole, without its trailers.
		tr = nil
	}
	// A HEAD answer with the handler's Content-Length and no body written
	// (http.ServeContent's) keeps that length, as net/http's does: a stream
	// of that length, whose head weir sends alone for HEAD.
	headLength := hw.head && hw.buf.Len() == 0 && hw.sent.Get("Content-Length") != ""
	if hw.stream == nil && len(tr) == 0 && !headLength {
		hw.addHeaders()
		_ = hw.w.Respond(hw.status, hw.buf.Bytes())
		return
	}
	if hw.err == nil {
		_ = hw.push() // with trailers, a chunked stream even for a short answer, as net/http's
	}
	if hw.err == nil && hw.end(tr) == nil {
		return
	}
	_ = hw.stream.Abort() // ErrStreamOver when the connection already died
}

// interim sends a 1xx (WriteHeader(103), WriteHeader(100)) at once, with
// the header map as it is (RFC 8297: the map is not cleared, and the final
// answer sends it again), minus the fields weir owns, as net/http writes it.
func (hw *httpWriter) interim(code int) {
	var kv []string
	for k, vs := range hw.header {
		if isReserved(k) || strings.HasPrefix(k, http.TrailerPrefix) || k == "Trailer" {
			continue
		}
		for _, v := range vs {
			if checkHeader(k, v) == nil {
				kv = append(kv, k, v)
			}
		}
	}
	_ = hw.w.Interim(code, kv...)
}

// hasTrailers: a field set under http.TrailerPrefix.
func (hw *httpWriter) hasTrailers() bool {
	for k := range hw.header {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			return true
		}
	}
	return false
}

// trailers are the answer's trailer fields as name, value pairs, as net/http
// sends them: the fields the Trailer header announced (taken from the map at
// the end), and every field set under http.TrailerPrefix.
func (hw *httpWriter) trailers() []string {
	var kv []string
	add := func(name string, vs []string) {
		for _, v := range vs {
			if checkHeader(name, v) == nil {
				kv = append(kv, name, v)
			}
		}
	}
	for _, v := range hw.sent["Trailer"] {
		for _, name := range strings.Split(v, ",") {
			if name = http.CanonicalHeaderKey(textproto.TrimString(name)); name != "" {
				add(name, hw.header[name])
			}
		}
	}
	for k, vs := range hw.header {
		if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok && name != "" {
			add(name, vs)
		}
	}
	return kv
}

// end ends the stream with its trailers where its framing can carry them
// (chunked): a Content-Length, HEAD, 204/304 or HTTP/1.0 answer ends without.
func (hw *httpWriter) end(tr []string) error {
	if len(tr) > 0 && hw.chunked {
		if err := hw.stream.EndTrailers(tr...); !errors.Is(err, syscall.EINVAL) {
			return err
		}
	}
	return hw.stream.End()
}

// SetReadDeadline is http.ResponseController's: it bounds the waits of a
// streamed body's reads (ResponseWriter.SetReadDeadline): one that waits
// past t returns os.ErrDeadlineExceeded, no byte lost. A body weir buffered
// whole is never waited for, so the promise holds for it too.
func (hw *httpWriter) SetReadDeadline(t time.Time) error {
	if hw.hijack {
		return http.ErrHijacked
	}
	hw.w.SetReadDeadline(t)
	return nil
}

// SetWriteDeadline is http.ResponseController's: it bounds a streaming
// answer's writes that wait for the client (Stream.SetWriteDeadline): one
// that waits past t fails with os.ErrDeadlineExceeded and the answer is cut
// (the connection closes), as net/http's. Writes that do not wait (an answer
// held whole, an inline handler's) never fail for it; what weir sends after
// the handler returned is bounded by Config.WriteTimeout instead.
func (hw *httpWriter) SetWriteDeadline(t time.Time) error {
	if hw.hijack {
		return http.ErrHijacked
	}
	hw.wdl = t
	if hw.stream != nil {
		hw.stream.SetWriteDeadline(t)
	}
	return nil
}
