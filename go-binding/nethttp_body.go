package weir

import (
	"io"
	"net/http"
	"sync/atomic"
)

// httpStreamBody is r.Body for a request whose body streams (the adapter
// runs with Config.StreamBodyBytes, 256 KiB by default): each Read is a
// ResponseWriter.ReadBody, so the 100 Continue of a request that expects it
// leaves with the first Read, as net/http sends it. At io.EOF a chunked
// body's trailer fields are merged into r.Trailer (net/http's way: the
// announced names are there from the start, their values at the end).
type httpStreamBody struct {
	w      *ResponseWriter
	b      *bodyReader
	req    *http.Request
	rq     *Request
	read   atomic.Bool // a Read reached weir (the 100 Continue, if owed, is sent)
	eof    atomic.Bool
	closed atomic.Bool // the handler returned: later reads fail, as net/http's
}

func (s *httpStreamBody) Read(p []byte) (int, error) {
	if s.closed.Load() {
		return 0, errBodyClosed
	}
	s.read.Store(true)
	n, err := s.w.readBody(s.b, p)
	if err == ErrBodyTooLarge { // what http.MaxBytesReader gives a net/http handler
		err = &http.MaxBytesError{Limit: s.w.e.cfg.MaxBody}
	}
	if err == io.EOF && !s.eof.Swap(true) {
		s.trailers()
	}
	return n, err
}

func (s *httpStreamBody) Close() error { return nil }

func (s *httpStreamBody) trailers() {
	if s.rq.NumTrailers() == 0 {
		return
	}
	if s.req.Trailer == nil {
		s.req.Trailer = make(http.Header, s.rq.NumTrailers())
	}
	mergeTrailers(s.req.Trailer, s.rq)
}

// mergeTrailers adds r's trailer fields to dst, copied out of weir's buffer
// (names too: CanonicalHeaderKey returns a canonical name as it is), since a
// handler may keep r.Trailer past its answer.
func mergeTrailers(dst http.Header, r *Request) {
	for i := 0; i < r.NumTrailers(); i++ {
		n, v := r.TrailerAt(i)
		key := http.CanonicalHeaderKey(string([]byte(n)))
		dst[key] = append(dst[key], string([]byte(v)))
	}
}

// drainMax: after its handler returns, a streamed body not read to its end
// is read on up to this many bytes (net/http's own bound), so the connection
// can carry the next request; past it, or for a request that expected
// 100-continue whose body was never asked for, weir closes the connection
// after the answer (WEIR_CLOSE_BODY_UNREAD) and discards the rest.
const drainMax = 256 << 10

// drain reads what is left of the body, up to drainMax; not while another
// goroutine the handler left behind is reading it.
func (s *httpStreamBody) drain() {
	if !s.b.rmu.TryLock() {
		return
	}
	defer s.b.rmu.Unlock()
	if s.eof.Load() || (s.rq.ExpectsContinue() && !s.read.Load()) {
		return
	}
	var scratch [4 << 10]byte
	for left := drainMax; left > 0; {
		n, err := s.w.readLocked(s.b, scratch[:min(left, len(scratch))])
		left -= n
		if err != nil {
			return
		}
	}
}

// httpStreamBodyBytes: the adapter's default Config.StreamBodyBytes. Bodies
// below it (with a Content-Length) come whole, as before the handler runs;
// larger ones, chunked ones and those behind an Expect: 100-continue stream.
const httpStreamBodyBytes = 256 << 10
