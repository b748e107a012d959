package weirceleris

import (
	"errors"
	"io"

	weir "github.com/weir-http/weir/go-binding"
)

// streamedBody reads a body weir streams (Factory sets StreamBodyBytes only
// for OnExpectContinue: "Expect: 100-continue" requests, and chunked ones,
// reach the handler at their head) and gives it whole, as celeris's engines
// give every body. For an Expect: 100-continue request celeris's
// OnExpectContinue decides first: false answers 417 without reading, so
// weir never sends the 100 Continue and the client never sends the body
// (weir closes the connection after the answer); true reads, and the first
// read sends the 100. ok false: the exchange was answered here.
func (e *Engine) streamedBody(r *weir.Request, w *weir.ResponseWriter, hdrs [][2]string) (body []byte, ok bool) {
	if f := e.opts.onExpect; f != nil && r.ExpectsContinue() && !f(hdrs[0][1], hdrs[1][1], hdrs) {
		_ = w.AddHeader("content-type", "text/plain; charset=utf-8")
		_ = w.RespondString(417, "Expectation Failed")
		return nil, false
	}
	// ReadBody hands an inline handler's worker on itself when a read
	// must wait for the client.
	buf := make([]byte, 32<<10)
	for {
		n, err := w.ReadBody(buf)
		body = append(body, buf[:n]...)
		if errors.Is(err, io.EOF) {
			return body, true
		}
		if err != nil {
			// weir answered a body past MaxBody itself (413); a malformed,
			// cut or stalled body is the client's fault. The connection
			// closes after this answer.
			status := 400
			if errors.Is(err, weir.ErrBodyTimeout) {
				status = 408
			}
			_ = w.RespondString(status, "bad request body: "+err.Error())
			return nil, false
		}
	}
}
