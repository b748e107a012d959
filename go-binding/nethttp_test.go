package weir

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestNetHTTPHandler(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		w.Header().Set("X-Method", r.Method)
		w.Header().Set("X-Query", r.URL.Query().Get("q"))
		w.Header().Set("X-Agent", r.Header.Get("User-Agent"))
		w.Header().Set("X-Remote-Loopback", fmt.Sprint(strings.HasPrefix(r.RemoteAddr, "127.0.0.1:")))
		w.Header().Set("X-Len", fmt.Sprint(r.ContentLength))
		w.Header().Set("X-Host", r.Host)
		w.Header().Set("X-Ctx", fmt.Sprint(r.Context().Err() == nil))
		w.WriteHeader(http.StatusAccepted)
		w.Write(b)
	})
	mux.HandleFunc("/flush", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "part1,")
		w.(http.Flusher).Flush()
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("ResponseController.Flush: %v", err)
		}
		io.WriteString(w, "part2")
	})
	mux.HandleFunc("/sniff", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("<html><body>hi</body></html>"))
	})
	mux.HandleFunc("/reserved", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "999")
		w.Header().Set("Date", "yesterday")
		w.Header().Set("Transfer-Encoding", "chunked")
		w.Header().Add("X-Multi", "a")
		w.Header().Add("X-Multi", "b")
		w.Write([]byte("12345"))
	})
	mux.HandleFunc("/close", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		w.Write([]byte("bye"))
	})
	mux.HandleFunc("/nocontent", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
		if _, err := w.Write([]byte("x")); err != http.ErrBodyNotAllowed {
			t.Errorf("write on 204 = %v", err)
		}
	})
	for _, inline := range []bool{false, true} {
		t.Run(fmt.Sprintf("inline=%v", inline), func(t *testing.T) {
			_, addr := start(t, Config{Inline: inline, HTTP: mux})
			hc := &http.Client{Timeout: 10 * time.Second}
			defer hc.CloseIdleConnections()
			base := "http://" + addr

			body := strings.Repeat("payload!", 5000)
			req, _ := http.NewRequest("PUT", base+"/echo?q=hello%20world", strings.NewReader(body))
			req.Header.Set("User-Agent", "weir-test")
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 202 || string(got) != body {
				t.Fatalf("echo: %d, %d bytes", resp.StatusCode, len(got))
			}
			for k, v := range map[string]string{"X-Method": "PUT", "X-Query": "hello world", "X-Agent": "weir-test",
				"X-Remote-Loopback": "true", "X-Len": fmt.Sprint(len(body)), "X-Host": addr, "X-Ctx": "true"} {
				if resp.Header.Get(k) != v {
					t.Errorf("%s = %q, want %q", k, resp.Header.Get(k), v)
				}
			}

			check := func(path, wantBody string, wantStatus int) *http.Response {
				t.Helper()
				resp, err := hc.Get(base + path)
				if err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != wantStatus || string(got) != wantBody {
					t.Fatalf("%s: %d %q, want %d %q", path, resp.StatusCode, got, wantStatus, wantBody)
				}
				return resp
			}
			if r := check("/flush", "part1,part2", 200); r.Header.Get("Content-Type") != "text/plain" {
				t.Errorf("flush content type %q", r.Header.Get("Content-Type"))
			}
			if r := check("/sniff", "<html><body>hi</body></html>", 200); !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
				t.Errorf("sniffed content type %q", r.Header.Get("Content-Type"))
			}
			r := check("/reserved", "12345", 200)
			if r.ContentLength != 5 || r.Header.Get("Date") == "yesterday" || len(r.TransferEncoding) != 0 {
				t.Errorf("reserved headers leaked: CL=%d Date=%q TE=%v", r.ContentLength, r.Header.Get("Date"), r.TransferEncoding)
			}
			if v := r.Header.Values("X-Multi"); len(v) != 2 || v[0] != "a" || v[1] != "b" {
				t.Errorf("X-Multi = %v", v)
			}
			if r := check("/close", "bye", 200); !r.Close {
				t.Error("Connection: close not honoured")
			}
			check("/nocontent", "", 204)
			check("/missing", "404 page not found\n", 404)

			// HEAD: the length of the body the handler wrote, no body bytes.
			c := dial(t, addr)
			c.send("HEAD /sniff HTTP/1.1\r\nHost: x\r\n\r\n" + get("/sniff"))
			head, hb := c.read("HEAD")
			if head.ContentLength != int64(len("<html><body>hi</body></html>")) || hb != "" {
				t.Errorf("HEAD: CL=%d body %q", head.ContentLength, hb)
			}
			if _, gb := c.read("GET"); gb != "<html><body>hi</body></html>" {
				t.Errorf("GET after HEAD: %q", gb)
			}
		})
	}
}

// Expect: 100-continue: TestNetHTTPContinueOnFirstRead (nethttp_body_test.go).

// A panic is treated as net/http treats it: logged (http.Server.ErrorLog
// when given, else log's standard logger; http.ErrAbortHandler silently), no
// answer at all (what the handler wrote is not sent), the connection closed;
// both modes. The answer before it on a pipelined connection still leaves.
// Before WEIR_RESPOND_ABORT the adapter answered 500 (the arm that fails
// here: a status where net/http sends nothing).
func TestNetHTTPPanic(t *testing.T) {
	for _, inline := range []bool{false, true} {
		for _, errorLog := range []bool{false, true} {
			logs := captureLog(t)
			var own strings.Builder
			var mu sync.Mutex
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/ok":
					io.WriteString(w, "fine")
					return
				case "/abort":
					panic(http.ErrAbortHandler)
				}
				w.Header().Set("X-Partial", "1")
				w.Write([]byte("half"))
				panic(errors.New("handler bug"))
			})}
			if errorLog {
				srv.ErrorLog = log.New(lockedWriter{&mu, &own}, "", 0)
			}
			e, addr := start(t, Config{Inline: inline, Server: srv})
			for _, p := range []string{"/bug", "/abort"} {
				c := dial(t, addr)
				c.send(get("/ok") + get(p))
				if _, body := c.read("GET"); body != "fine" {
					t.Fatalf("%s: the answer before it: %q", p, body)
				}
				rest, err := io.ReadAll(c.br)
				if err != nil || len(rest) != 0 {
					t.Fatalf("inline %v %s: after the panic the client read %q, %v; want nothing and a close", inline, p, rest, err)
				}
			}
			// Counted as the panic unwinds, which may be after the client saw the close.
			waitFor(t, "Panics = 2", func() bool { return e.Metrics().Panics == 2 })
			logged := logs.String()
			if errorLog {
				mu.Lock()
				if strings.Contains(logs.String(), "handler bug") {
					t.Errorf("logged on the standard logger with ErrorLog set: %q", logs.String())
				}
				logged = own.String()
				mu.Unlock()
			}
			// Logged as net/http logs it, once: http.ErrAbortHandler is silent.
			if strings.Count(logged, "http: panic serving 127.0.0.1:") != 1 || !strings.Contains(logged, "handler bug") ||
				strings.Contains(logged, "abort Handler") {
				t.Errorf("inline %v, ErrorLog %v: log = %q", inline, errorLog, logged)
			}
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// A blocking net/http handler stalls nothing else by default: on one worker,
// a fast request on another connection is answered while the first blocks.
// The arm that shows the loss: Inline, where the fast one waits for it.
func TestNetHTTPBlockingHandlerStallsNothing(t *testing.T) {
	for _, inline := range []bool{false, true} {
		release := make(chan struct{})
		blocked := make(chan struct{})
		_, addr := start(t, Config{Workers: 1, Inline: inline, HTTP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/block" {
				close(blocked)
				<-release
			}
			io.WriteString(w, "ok")
		})})
		slow := dial(t, addr)
		slow.send(get("/block"))
		<-blocked
		fast := dial(t, addr)
		fast.send(get("/fast"))
		got := make(chan string, 1)
		go func() {
			_ = fast.c.SetReadDeadline(time.Now().Add(10 * time.Second))
			b, err := readResponse(fast)
			if err != nil {
				b = err.Error()
			}
			got <- b
		}()
		var answer string
		select {
		case answer = <-got:
		case <-time.After(500 * time.Millisecond):
		}
		close(release)
		if !inline && answer != "ok" {
			t.Errorf("default: the fast request waited behind the blocked one (%q)", answer)
		}
		if inline && answer != "" {
			t.Errorf("inline: the fast request was answered (%q) while its worker was blocked: the arm shows nothing", answer)
		}
		if inline {
			if b := <-got; b != "ok" {
				t.Errorf("inline: after the release: %q", b)
			}
		}
		if b, err := readResponse(slow); err != nil || b != "ok" {
			t.Errorf("the blocked request: %q %v", b, err)
		}
	}
}

// lockedBuffer is a log output the handlers' goroutines and the test share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func captureLog(t *testing.T) *lockedBuffer {
	buf := &lockedBuffer{}
	log.SetOutput(buf)
	t.Cleanup(func() { log.SetOutput(os.Stderr) })
	return buf
}

// The *http.Request and the writer as net/http's server makes them: Host out
// of the header map, a chunked body's framing and trailer in their fields,
// the context keys, no Hijacker for a request that did not ask to upgrade
// (ResponseController.Hijack: http.ErrNotSupported; the request is then
// answered as usual), the header map taken at WriteHeader.
func TestNetHTTPRequestAsNetHTTPMakesIt(t *testing.T) {
	type seen struct {
		hostHeader, te, trailer      []string
		host                         string
		length                       int64
		body, trailerValue, localStr string
		server                       bool
		hijacker                     bool
		hijackErr                    error
	}
	got := make(chan seen, 2)
	e, addr := start(t, Config{HTTP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s := seen{hostHeader: r.Header["Host"], te: r.TransferEncoding, trailer: r.Header["Trailer"], host: r.Host,
			length: r.ContentLength, body: string(b), trailerValue: r.Trailer.Get("X-Sum")}
		srv, _ := r.Context().Value(http.ServerContextKey).(*http.Server)
		s.server = srv != nil && srv.Handler != nil
		if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			s.localStr = a.String()
		}
		if _, ok := w.(http.Hijacker); ok {
			s.hijacker = true
		}
		_, _, s.hijackErr = http.NewResponseController(w).Hijack()
		got <- s
		w.Header().Set("X-Before", "1")
		w.WriteHeader(201)
		w.Header().Set("X-After", "1") // too late, as with net/http
		io.WriteString(w, "ok")
	})})
	c := dial(t, addr)
	c.send("POST /c HTTP/1.1\r\nHost: example.test\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n" +
		"3\r\nabc\r\n2\r\nde\r\n0\r\nX-Sum: 5\r\n\r\n")
	resp, body := c.read("POST")
	if resp.StatusCode != 201 || body != "ok" || resp.Header.Get("X-Before") != "1" || resp.Header.Get("X-After") != "" {
		t.Errorf("answer %d %q %v", resp.StatusCode, body, resp.Header)
	}
	s := <-got
	if s.hostHeader != nil || s.host != "example.test" {
		t.Errorf("Host: header %v, r.Host %q", s.hostHeader, s.host)
	}
	if len(s.te) != 1 || s.te[0] != "chunked" || s.length != -1 || s.body != "abcde" {
		t.Errorf("TransferEncoding %v, ContentLength %d, body %q", s.te, s.length, s.body)
	}
	if s.trailer != nil || s.trailerValue != "5" {
		t.Errorf("Trailer header %v, r.Trailer X-Sum %q", s.trailer, s.trailerValue)
	}
	if !s.server || s.localStr != e.Addr().String() {
		t.Errorf("context: server %v, local addr %q (listening on %v)", s.server, s.localStr, e.Addr())
	}
	// Not offered where it cannot work (a request that did not ask to
	// upgrade): no Hijacker, and ResponseController says so.
	if s.hijacker || !errors.Is(s.hijackErr, http.ErrNotSupported) {
		t.Errorf("Hijacker %v, ResponseController.Hijack of a plain request: %v", s.hijacker, s.hijackErr)
	}
	// A plain request: its length, no TransferEncoding, no Trailer.
	plain := make(chan *http.Request, 1)
	_, addr2 := start(t, Config{HTTP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plain <- r
		io.WriteString(w, "ok")
	})})
	c2 := dial(t, addr2)
	c2.send(post("/p", "hello"))
	c2.read("POST")
	if r := <-plain; r.ContentLength != 5 || r.TransferEncoding != nil || r.Trailer != nil {
		t.Errorf("plain: ContentLength %d, TransferEncoding %v, Trailer %v", r.ContentLength, r.TransferEncoding, r.Trailer)
	}
}

// A body read after the handler returned fails instead of reading freed memory.
func TestNetHTTPBodyAfterReturn(t *testing.T) {
	kept := make(chan io.Reader, 1)
	_, addr := start(t, Config{HTTP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kept <- r.Body
		w.Write([]byte("ok"))
	})})
	c := dial(t, addr)
	c.send(post("/", "abc"))
	c.read("POST")
	body := <-kept
	if _, err := body.Read(make([]byte, 3)); err == nil {
		t.Fatal("read of a finished request's body succeeded")
	}
}

func TestNetHTTPContextCancelledAfterReturn(t *testing.T) {
	ctxs := make(chan context.Context, 1)
	_, addr := start(t, Config{HTTP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctxs <- r.Context()
	})})
	c := dial(t, addr)
	c.send(get("/"))
	if resp, _ := c.read("GET"); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	select {
	case <-(<-ctxs).Done():
	case <-time.After(5 * time.Second):
		t.Fatal("request context not cancelled after the handler returned")
	}
}

var _ = net.Dial
