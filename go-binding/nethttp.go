package weir

/*
#include <weir.h>
*/
import "C"

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// ServeHTTP returns a Handler that runs a standard net/http handler on the
// native engine: Config{Handler: weir.ServeHTTP(h), PeerAddrs: true} is what
// Config{HTTP: h} sets up. The *http.Request carries the method, URL, proto,
// headers (copied; Host, Transfer-Encoding and Trailer taken out of them as
// net/http does), Host, TransferEncoding (["chunked"], with ContentLength -1),
// Trailer (the announced names at once, a chunked body's trailer fields once
// Body has read to io.EOF), a Body (valid until the handler returns, as
// net/http's is), ContentLength, RemoteAddr, and a context that is
// cancelled when the handler returns or its client goes (its FIN, a reset, a
// Shutdown whose context ended: Config.ReportGone, gone.go) and carries
// http.ServerContextKey (an *http.Server naming the handler and the address) and
// http.LocalAddrContextKey (the listener's address).
//
// The http.ResponseWriter holds an answer whole and sends it with
// Content-Length, until the handler calls Flush or has written more than
// 64 KiB: the answer then streams (weir_stream_*: chunked, or the handler's
// own Content-Length), and a Write waits while the client is a stream window
// behind, so memory stays bounded. Inline handlers (Config.Inline) never
// stream: their Flush only marks the answer flushed, and they see their
// output leave at the end. Otherwise Content-Length, Transfer-Encoding and
// Date set by the handler are replaced by weir's (a HEAD answer keeps the
// length of the body written, which weir does not send); "Connection: close"
// closes after the answer. As with
// net/http, the header map is taken when the status is written (WriteHeader,
// or the first Write): later changes to it are not sent.
//
// Bodies (Config.StreamBodyBytes, 256 KiB unless set): one with a
// Content-Length under it comes whole before the handler runs; a larger one,
// a chunked one and one behind Expect: 100-continue stream, each Body.Read a
// read of the worker's (nethttp_body.go). The 100 Continue leaves with the
// first Read, so a handler that answers without reading refuses the body. A
// body left unread is drained after the handler, up to 256 KiB, to keep the
// connection; past that (or when the 100 was never sent) the connection
// closes after the answer, as net/http's does. The writer is an
// http.Hijacker only for requests that ask to upgrade (websockets: see
// httpUpgradeWriter.Hijack); other requests' writers have no Hijack. It is an
// io.ReaderFrom that answers from a file without copying it
// (nethttp_file.go), sends 1xx answers (WriteHeader(103), 100) at once, and
// sends trailers (declared with the Trailer header, or set under
// http.TrailerPrefix) on a chunked answer. A panic is treated as net/http
// treats it: logged (http.Server.ErrorLog, else log's standard logger;
// http.ErrAbortHandler silently), no answer (the connection closes after the
// answers before it: WEIR_RESPOND_ABORT; a streamed answer begun is cut),
// and counted in Metrics.Panics.
func ServeHTTP(h http.Handler) Handler { return httpHandler(h, nil) }

func httpHandler(h http.Handler, given *http.Server) Handler {
	var srvOnce sync.Once
	srv := given
	return func(r *Request, w *ResponseWriter) {
		srvOnce.Do(func() {
			if srv == nil {
				srv = &http.Server{Handler: h}
			}
			if a := w.e.Addr(); a != nil && srv.Addr == "" && given == nil {
				srv.Addr = a.String()
			}
		})
		req, hw, cancel := newHTTPRequest(r, w, srv)
		var rw http.ResponseWriter = hw
		if upgradable(r) {
			rw = &httpUpgradeWriter{hw}
		}
		completed := false
		defer func() {
			cancel()
			if hw.body != nil {
				hw.body.closed.Store(true)
			}
			if sb := hw.sbody; sb != nil {
				if completed && !hw.hijack {
					sb.drain() // before the answer: the connection can stay open
				}
				sb.closed.Store(true)
			}
			if p := recover(); p != nil {
				if p != http.ErrAbortHandler {
					logf(srv, "http: panic serving %v: %v\n%s", req.RemoteAddr, p, debug.Stack())
				}
				if !w.answered {
					w.abortAnswer() // no answer, and the connection closes, as net/http's
				}
				putHTTPWriter(hw)
				panic(p) // serve counts it (and cuts a stream begun)
			}
			if completed {
				hw.finish()
			} // else runtime.Goexit: serve answers as for a panic
			putHTTPWriter(hw)
		}()
		h.ServeHTTP(rw, req)
		completed = true
	}
}

// upgradable: weir can give r's connection up (weir_upgrade_raw): it asked
// to upgrade on a keep-alive connection, with no body still to read.
func upgradable(r *Request) bool {
	f := r.r.flags
	return f&C.WEIR_REQ_UPGRADE != 0 && f&C.WEIR_REQ_KEEP_ALIVE != 0 && f&C.WEIR_REQ_BODY_STREAM == 0
}

// logf logs as net/http's server does: on srv.ErrorLog, else log's standard logger.
func logf(srv *http.Server, format string, args ...any) {
	if srv != nil && srv.ErrorLog != nil {
		srv.ErrorLog.Printf(format, args...)
		return
	}
	log.Printf(format, args...)
}

func newHTTPRequest(r *Request, w *ResponseWriter, srv *http.Server) (*http.Request, *httpWriter, context.CancelFunc) {
	hw := httpWriters.Get().(*httpWriter)
	hw.w = w
	hw.header = make(http.Header)
	hw.status = 0
	hw.buf.Reset()
	hw.flushed = false
	method := r.Method()
	hw.head = method == "HEAD"

	// One copy of all header text, then strings over it.
	size := len(method) + len(r.Target()) + len(r.Host())
	for i := 0; i < r.NumHeaders(); i++ {
		n, v := r.HeaderAt(i)
		size += len(n) + len(v)
	}
	text := make([]byte, 0, size)
	keep := func(s string) string {
		if s == "" {
			return ""
		}
		off := len(text)
		text = append(text, s...)
		return unsafe.String(&text[off], len(s))
	}
	method = keep(method)
	target := keep(r.Target())
	host := keep(r.Host())
	hdr := make(http.Header, r.NumHeaders())
	// Every field's first value in one backing array, as net/textproto
	// reads them: capped at one, so a repeated field's append copies out
	// rather than over its neighbour.
	vals := make([]string, r.NumHeaders())
	for i := 0; i < r.NumHeaders(); i++ {
		n, v := r.HeaderAt(i)
		key := http.CanonicalHeaderKey(keep(n))
		if prev, ok := hdr[key]; ok {
			hdr[key] = append(prev, keep(v))
			continue
		}
		vals[i] = keep(v)
		hdr[key] = vals[i : i+1 : i+1]
	}
	// As net/http's server: Host is r.Host, the framing and the trailer's
	// announcement are fields of their own.
	delete(hdr, "Host")
	_, chunked := hdr["Transfer-Encoding"] // weir admits chunked as the only coding
	delete(hdr, "Transfer-Encoding")
	var trailer http.Header
	if names, announced := hdr["Trailer"]; announced || r.NumTrailers() > 0 {
		trailer = make(http.Header, r.NumTrailers())
		if r.BodyStreamed() { // the names now, their values at the body's end (httpStreamBody)
			for _, v := range names {
				for _, n := range strings.Split(v, ",") {
					if n = textproto.TrimString(n); n != "" {
						trailer[http.CanonicalHeaderKey(n)] = nil
					}
				}
			}
		}
		mergeTrailers(trailer, r)
		delete(hdr, "Trailer")
	}

	u, err := url.ParseRequestURI(target)
	if err != nil {
		u = &url.URL{Path: r.Path(), RawQuery: r.Query()}
		u.Path = string([]byte(u.Path))
		u.RawQuery = string([]byte(u.RawQuery))
	}
	ctx, cancel := context.WithCancel(w.e.httpContext(srv))
	w.NotifyGone(cancel) // the client went (FIN, reset, forced shutdown): as net/http cancels it
	body := r.Body()
	// Built on the stack and copied once by WithContext (the context is
	// unexported): one Request on the heap, not two.
	req := (&http.Request{
		Method:        method,
		URL:           u,
		Proto:         httpProto(r.ProtoMajor(), r.ProtoMinor()),
		ProtoMajor:    r.ProtoMajor(),
		ProtoMinor:    r.ProtoMinor(),
		Header:        hdr,
		Host:          host,
		RequestURI:    target,
		ContentLength: int64(len(body)),
		Close:         !r.KeepAlive(),
		Body:          http.NoBody,
		Trailer:       trailer,
	}).WithContext(ctx)
	if chunked {
		req.TransferEncoding = []string{"chunked"}
		req.ContentLength = -1
	}
	if r.BodyStreamed() {
		req.ContentLength = r.BodyLength() // -1: chunked
		hw.sbody = &httpStreamBody{w: w, b: w.body, req: req, rq: r}
		req.Body = hw.sbody
	} else if len(body) > 0 {
		hw.body = &nativeBody{b: body}
		req.Body = hw.body
	}
	req.RemoteAddr = r.remoteAddrString()
	return req, hw, cancel
}

// httpProto is r.Proto without a concatenation per request.
func httpProto(major, minor int) string {
	if major == 2 {
		return "HTTP/2.0" // as net/http's own HTTP/2 server sets it
	}
	switch minor {
	case 1:
		return "HTTP/1.1"
	case 0:
		return "HTTP/1.0"
	}
	return "HTTP/1." + strconv.Itoa(minor)
}

// httpValues is the part of every request's context that is the same for
// all of an engine's requests: Listen's base (its values, without its
// cancellation: cancelling Listen's context begins a graceful shutdown, and
// the requests in flight are what it lets finish) with net/http's server and
// local-address values, built once per base (Listen stores a new one).
type httpValues struct {
	base *context.Context
	srv  *http.Server
	ctx  context.Context
}

func (e *Engine) httpContext(srv *http.Server) context.Context {
	base := e.ctx.Load()
	if v := e.hctx.Load(); v != nil && v.base == base && v.srv == srv {
		return v.ctx
	}
	ctx := context.Background()
	if base != nil {
		ctx = *base
	}
	ctx = context.WithValue(ctx, http.ServerContextKey, srv)
	if a := e.Addr(); a != nil {
		ctx = context.WithValue(ctx, http.LocalAddrContextKey, net.Addr(a))
	}
	e.hctx.Store(&httpValues{base: base, srv: srv, ctx: ctx})
	return ctx
}

// nativeBody reads the request body in place; reads after the handler
// returned fail, as net/http's do.
type nativeBody struct {
	b      []byte
	off    int
	closed atomic.Bool
}

var errBodyClosed = errors.New("weir: read on a request body after its handler returned")

func (b *nativeBody) Read(p []byte) (int, error) {
	if b.closed.Load() {
		return 0, errBodyClosed
	}
	if b.off >= len(b.b) {
		return 0, io.EOF
	}
	n := copy(p, b.b[b.off:])
	b.off += n
	return n, nil
}

func (b *nativeBody) Close() error { return nil }

