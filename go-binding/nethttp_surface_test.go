package weir

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The net/http surface (issue 33): ReaderFrom's file answers, 1xx answers,
// trailers, the Hijacker only where it works, http.Server's fields. Each in
// both execution modes (async default and Inline) on the test backend.

var modes = []struct {
	name   string
	inline bool
}{{"async", false}, {"inline", true}}

func httpClient() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: 10 * time.Second}
}

// testFile writes n bytes (a pattern, so ranges are checkable) to a temp file.
func testFile(t *testing.T, name string, n int) (string, []byte) {
	t.Helper()
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, b
}

// http.ServeContent through the adapter, with net/http's own expectations:
// the whole file (200), a range (206 with Content-Range), If-None-Match on
// the ETag (304), If-Match on another (412), HEAD (the length, no body), two
// ranges (multipart: copied). The whole file and the range go out as weir's
// file answer (Metrics.FileAnswers): io.CopyN hands ReadFrom an
// io.LimitedReader over the *os.File at the range's offset. The negative
// arms: a reader that is not a file (a strings.Reader) is copied, and so is
// the multipart answer (a pipe), both still correct (Metrics.CopiedReads).
// http.FileServer and http.ServeFile take the file path too.
func TestNetHTTPServeContentFromFile(t *testing.T) {
	path, data := testFile(t, "page.txt", 200<<10)
	mod := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			mux := http.NewServeMux()
			mux.HandleFunc("/content", func(w http.ResponseWriter, r *http.Request) {
				f, err := os.Open(path)
				if err != nil {
					t.Error(err)
					return
				}
				defer f.Close() // at once: weir keeps its own duplicate
				w.Header().Set("ETag", `"v1"`)
				http.ServeContent(w, r, "page.txt", mod, f)
			})
			mux.HandleFunc("/reader", func(w http.ResponseWriter, r *http.Request) {
				http.ServeContent(w, r, "page.txt", mod, strings.NewReader(string(data)))
			})
			mux.HandleFunc("/servefile", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, path) })
			mux.Handle("/static/", http.StripPrefix("/static/", http.FileServer(http.Dir(filepath.Dir(path)))))
			e, addr := start(t, Config{Inline: m.inline, HTTP: mux})
			cl := httpClient()
			do := func(method, p string, hdr ...string) (*http.Response, []byte) {
				t.Helper()
				req, _ := http.NewRequest(method, "http://"+addr+p, nil)
				for i := 0; i+1 < len(hdr); i += 2 {
					req.Header.Set(hdr[i], hdr[i+1])
				}
				resp, err := cl.Do(req)
				if err != nil {
					t.Fatalf("%s %s %v: %v", method, p, hdr, err)
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					t.Fatalf("%s %s body: %v", method, p, err)
				}
				return resp, b
			}
			files := func() uint64 { return e.Metrics().FileAnswers }
			copied := func() uint64 { return e.Metrics().CopiedReads }

			f0 := files()
			resp, b := do("GET", "/content")
			if resp.StatusCode != 200 || !bytes.Equal(b, data) || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" ||
				resp.Header.Get("Last-Modified") != mod.Format(http.TimeFormat) || resp.Header.Get("Accept-Ranges") != "bytes" {
				t.Fatalf("whole: %d, %d bytes, %v", resp.StatusCode, len(b), resp.Header)
			}
			if files() != f0+1 {
				t.Errorf("whole file: FileAnswers %d, want %d (copied through Go instead)", files(), f0+1)
			}
			resp, b = do("GET", "/content", "Range", "bytes=1000-4999")
			if resp.StatusCode != 206 || !bytes.Equal(b, data[1000:5000]) ||
				resp.Header.Get("Content-Range") != fmt.Sprintf("bytes 1000-4999/%d", len(data)) {
				t.Fatalf("range: %d, %d bytes, %v", resp.StatusCode, len(b), resp.Header)
			}
			if files() != f0+2 {
				t.Errorf("range: FileAnswers %d, want %d", files(), f0+2)
			}
			if resp, b = do("GET", "/content", "If-None-Match", `"v1"`); resp.StatusCode != 304 || len(b) != 0 {
				t.Errorf("If-None-Match: %d %q", resp.StatusCode, b)
			}
			if resp, _ = do("GET", "/content", "If-Match", `"other"`); resp.StatusCode != 412 {
				t.Errorf("If-Match: %d", resp.StatusCode)
			}
			if resp, b = do("HEAD", "/content"); resp.StatusCode != 200 || len(b) != 0 || resp.ContentLength != int64(len(data)) {
				t.Errorf("HEAD: %d, %d bytes, length %d", resp.StatusCode, len(b), resp.ContentLength)
			}
			if files() != f0+2 {
				t.Errorf("304, 412, HEAD: FileAnswers %d, want %d", files(), f0+2)
			}
			c0 := copied()
			resp, b = do("GET", "/content", "Range", "bytes=0-9,100-109")
			if resp.StatusCode != 206 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "multipart/byteranges") ||
				!bytes.Contains(b, data[0:10]) || !bytes.Contains(b, data[100:110]) {
				t.Errorf("two ranges: %d %v", resp.StatusCode, resp.Header)
			}
			if files() != f0+2 || copied() != c0+1 {
				t.Errorf("two ranges: FileAnswers %d, CopiedReads %d; want copied", files(), copied())
			}
			// Negative arm: not a file. Copied, still correct.
			resp, b = do("GET", "/reader", "Range", "bytes=10-19")
			if resp.StatusCode != 206 || !bytes.Equal(b, data[10:20]) {
				t.Errorf("reader range: %d %q", resp.StatusCode, b)
			}
			if resp, b = do("GET", "/reader"); resp.StatusCode != 200 || !bytes.Equal(b, data) {
				t.Errorf("reader: %d, %d bytes", resp.StatusCode, len(b))
			}
			if files() != f0+2 || copied() != c0+3 {
				t.Errorf("reader: FileAnswers %d (want %d), CopiedReads %d (want %d)", files(), f0+2, copied(), c0+3)
			}
			// ServeFile and FileServer.
			if resp, b = do("GET", "/servefile"); resp.StatusCode != 200 || !bytes.Equal(b, data) {
				t.Errorf("ServeFile: %d, %d bytes", resp.StatusCode, len(b))
			}
			if resp, b = do("GET", "/static/page.txt", "Range", "bytes=-100"); resp.StatusCode != 206 || !bytes.Equal(b, data[len(data)-100:]) {
				t.Errorf("FileServer range: %d, %d bytes", resp.StatusCode, len(b))
			}
			if files() != f0+4 {
				t.Errorf("ServeFile, FileServer: FileAnswers %d, want %d", files(), f0+4)
			}
		})
	}
}

// ReadFrom's own rules: a file whose length is not the announced
// Content-Length, or after bytes were written, is copied (the answer is
// still whole and right); a file answer's writer refuses more bytes.
func TestNetHTTPReadFromFallbacks(t *testing.T) {
	path, data := testFile(t, "d.bin", 10000)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			after := make(chan error, 1)
			e, addr := start(t, Config{Inline: m.inline, HTTP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				f, _ := os.Open(path)
				defer f.Close()
				rf := w.(io.ReaderFrom)
				switch r.URL.Path {
				case "/nolength": // no Content-Length: copied
					rf.ReadFrom(f)
				case "/prefix": // bytes before: copied behind them
					w.Header().Set("Content-Length", fmt.Sprint(len(data)+3))
					io.WriteString(w, "hi:")
					rf.ReadFrom(f)
				case "/whole":
					w.Header().Set("Content-Length", fmt.Sprint(len(data)-500))
					f.Seek(500, io.SeekStart)
					rf.ReadFrom(f)
					_, err := w.Write([]byte("x"))
					after <- err
				}
			})})
			cl := httpClient()
			get := func(p string) []byte {
				resp, err := cl.Get("http://" + addr + p)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return b
			}
			if b := get("/nolength"); !bytes.Equal(b, data) {
				t.Errorf("no length: %d bytes", len(b))
			}
			if b := get("/prefix"); string(b[:3]) != "hi:" || !bytes.Equal(b[3:], data) {
				t.Errorf("prefix: %d bytes", len(b))
			}
			f0 := e.Metrics().FileAnswers
			if b := get("/whole"); !bytes.Equal(b, data[500:]) {
				t.Errorf("from the file's offset: %d bytes", len(b))
			}
			if err := <-after; !errors.Is(err, http.ErrContentLength) {
				t.Errorf("Write after the file answer: %v", err)
			}
			if m := e.Metrics(); m.FileAnswers != f0+1 || m.CopiedReads != 2 {
				t.Errorf("FileAnswers %d (want %d), CopiedReads %d (want 2)", m.FileAnswers, f0+1, m.CopiedReads)
			}
		})
	}
}

// WriteHeader(103) sends Early Hints with its Link fields before the final
// answer (net/http's Transport reports it through Got1xxResponse). Async:
// the handler waits until the client has the 103 before it answers, so the
// 103 left at once, not with the answer. Inline: it leaves with the answer
// (the handler must not wait on the worker), still first. Before
// weir_respond_interim WriteHeader(103) was dropped: no 1xx arrives.
func TestNetHTTPEarlyHints(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			got103 := make(chan struct{})
			var early atomic.Bool
			e, addr := start(t, Config{Inline: m.inline, HTTP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Add("Link", "</style.css>; rel=preload; as=style")
				w.Header().Add("Link", "</app.js>; rel=preload; as=script")
				w.WriteHeader(http.StatusEarlyHints)
				if !m.inline {
					select {
					case <-got103:
						early.Store(true)
					case <-time.After(5 * time.Second):
					}
				}
				w.Header().Set("Content-Type", "text/plain")
				w.WriteHeader(200)
				io.WriteString(w, "page")
			})})
			var links []string
			var order []int
			trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
				order = append(order, code)
				if code == 103 {
					links = h["Link"]
					close(got103)
				}
				return nil
			}}
			req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", "http://"+addr+"/", nil)
			resp, err := httpClient().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(b) != "page" || len(resp.Header["Link"]) != 2 {
				t.Errorf("final: %d %q %v", resp.StatusCode, b, resp.Header)
			}
			if len(order) != 1 || order[0] != 103 || len(links) != 2 || links[0] != "</style.css>; rel=preload; as=style" {
				t.Fatalf("1xx seen %v, Link %v", order, links)
			}
			if !m.inline && !early.Load() {
				t.Error("the 103 did not reach the client before the handler answered")
			}
			if n := e.Metrics().Interims; n != 1 {
				t.Errorf("Interims %d", n)
			}
		})
	}
}

// WriteHeader(100) sends 100 Continue at once, as net/http does, and it is
// the request's only one: the handler's first Body.Read sends no other.
func TestNetHTTPWriteHeader100(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			e, addr := start(t, Config{Inline: m.inline, HTTP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(100)
				b, _ := io.ReadAll(r.Body)
				io.WriteString(w, "got "+string(b))
			})})
			c := dial(t, addr)
			c.send("POST /up HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
			line, err := c.br.ReadString('\n')
			if err != nil || line != "HTTP/1.1 100 Continue\r\n" {
				t.Fatalf("first line %q, %v", line, err)
			}
			if blank, _ := c.br.ReadString('\n'); blank != "\r\n" {
				t.Fatalf("after the 100: %q", blank)
			}
			c.send("hello")
			resp, body := c.read("POST")
			if resp.StatusCode != 200 || body != "got hello" {
				t.Errorf("%d %q", resp.StatusCode, body)
			}
			// One 100 on the wire (a second would have been read above as the
			// answer): the handler's, or weir's when the handler's first read
			// reached weir before the posted 100 (weir then drops it).
			if m := e.Metrics(); m.Interims != 1 {
				t.Errorf("Interims %d", m.Interims)
			}
		})
	}
}

// Trailers as net/http sends them: announced with the Trailer header (the
// values set after the body), and set under http.TrailerPrefix, on a
// chunked answer, short (held whole otherwise) or streamed (flushed). The
// arm without trailers keeps its Content-Length. A large answer: async, it
// streams with its trailer; inline (held whole past the stream window, which
// the worker's goroutine cannot wait on) it is sent whole without it; the
// arm that must lose, streaming it anyway, cut it at 128 KiB.
func TestNetHTTPTrailers(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			_, addr := start(t, Config{Inline: m.inline, HTTP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/declared":
					w.Header().Set("Trailer", "X-Sum")
					w.Header().Set("Content-Length", "3") // yields: trailers need chunked
					io.WriteString(w, "abc")
					w.Header().Set("X-Sum", "294")
				case "/big":
					w.Header().Set("Trailer", "X-Sum")
					w.Write(bytes.Repeat([]byte("z"), 600<<10))
					w.Header().Set("X-Sum", "big")
				case "/prefix":
					io.WriteString(w, "abc")
					w.(http.Flusher).Flush()
					io.WriteString(w, "def")
					w.Header().Set(http.TrailerPrefix+"X-Late", "yes")
				default:
					io.WriteString(w, "plain")
				}
			})})
			cl := httpClient()
			for _, p := range []string{"/declared", "/prefix", "/plain", "/big"} {
				resp, err := cl.Get("http://" + addr + p)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				switch p {
				case "/declared":
					if string(b) != "abc" || resp.Trailer.Get("X-Sum") != "294" || resp.ContentLength != -1 {
						t.Errorf("%s: %q, trailer %v, length %d", p, b, resp.Trailer, resp.ContentLength)
					}
				case "/prefix":
					if string(b) != "abcdef" || resp.Trailer.Get("X-Late") != "yes" {
						t.Errorf("%s: %q, trailer %v", p, b, resp.Trailer)
					}
				case "/big":
					want := "big"
					if m.inline {
						want = ""
					}
					if len(b) != 600<<10 || resp.Trailer.Get("X-Sum") != want {
						t.Errorf("%s: %d bytes, trailer %v", p, len(b), resp.Trailer)
					}
				default:
					if string(b) != "plain" || resp.ContentLength != 5 || len(resp.Trailer) != 0 {
						t.Errorf("%s: %q, length %d, trailer %v", p, b, resp.ContentLength, resp.Trailer)
					}
				}
			}
		})
	}
}

// The Hijacker is offered only where weir can give the connection up: on a
// request that asks to upgrade. Any other request's writer is no
// http.Hijacker and ResponseController.Hijack says http.ErrNotSupported.
// EnableFullDuplex is refused the same way (weir reads no body once the
// answer has begun); the deadlines are kept (TestNetHTTPDeadlines).
func TestNetHTTPControllerRefusals(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			type seen struct {
				hijacker                        bool
				hijack, read, write, fullDuplex error
			}
			got := make(chan seen, 2)
			_, addr := start(t, Config{Inline: m.inline, HTTP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var s seen
				_, s.hijacker = w.(http.Hijacker)
				rc := http.NewResponseController(w)
				s.read = rc.SetReadDeadline(time.Now().Add(time.Second))
				s.write = rc.SetWriteDeadline(time.Now().Add(time.Second))
				s.fullDuplex = rc.EnableFullDuplex()
				if !s.hijacker {
					_, _, s.hijack = rc.Hijack()
				}
				got <- s
				io.WriteString(w, "ok")
			})})
			c := dial(t, addr)
			c.send(get("/plain"))
			c.read("GET")
			c.send("GET /up HTTP/1.1\r\nHost: t\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n")
			c.read("GET")
			plain, up := <-got, <-got
			if plain.hijacker || !errors.Is(plain.hijack, http.ErrNotSupported) {
				t.Errorf("plain request: Hijacker %v, Hijack %v", plain.hijacker, plain.hijack)
			}
			if !up.hijacker {
				t.Error("upgrade request: no Hijacker")
			}
			for _, s := range []seen{plain, up} {
				if s.read != nil || s.write != nil || !errors.Is(s.fullDuplex, http.ErrNotSupported) {
					t.Errorf("deadlines %v %v, full duplex %v", s.read, s.write, s.fullDuplex)
				}
			}
		})
	}
}

// Config.Server: what weir cannot do is refused at New with an error that
// wraps http.ErrNotSupported; RegisterOnShutdown's functions run when the
// shutdown begins; the request context carries the given Server; its
// MaxHeaderBytes bounds the head; left unset, the bound is net/http's 1 MiB
// (weir's own default, 16 KiB, refused the 100 KiB head below with 431).
func TestNetHTTPServerFields(t *testing.T) {
	for _, bad := range []*http.Server{
		{ConnState: func(net.Conn, http.ConnState) {}},
		{ConnContext: func(ctx context.Context, c net.Conn) context.Context { return ctx }},
		{BaseContext: func(net.Listener) context.Context { return context.Background() }},
	} {
		if _, err := New(Config{Server: bad}); !errors.Is(err, http.ErrNotSupported) {
			t.Errorf("New with %+v: %v", bad, err)
		}
	}
	if _, err := New(Config{Server: &http.Server{}, Handler: hello}); err == nil {
		t.Error("Server with a native Handler accepted")
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			big := strings.Repeat("v", 100<<10)
			srv := &http.Server{}
			srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if s, _ := r.Context().Value(http.ServerContextKey).(*http.Server); s != srv {
					t.Error("ServerContextKey is not the given Server")
				}
				io.WriteString(w, fmt.Sprint(len(r.Header.Get("X-Big"))))
			})
			shut := make(chan struct{})
			srv.RegisterOnShutdown(func() { close(shut) })
			e := newEngine(t, Config{Addr: "127.0.0.1:0", Inline: m.inline, Server: srv})
			done := make(chan error, 1)
			go func() { done <- e.Listen(context.Background()) }()
			waitFor(t, "bind", func() bool { return e.Addr() != nil })
			c := dial(t, e.Addr().String())
			c.send("GET / HTTP/1.1\r\nHost: t\r\nX-Big: " + big + "\r\n\r\n")
			if resp, body := c.read("GET"); resp.StatusCode != 200 || body != fmt.Sprint(len(big)) {
				t.Errorf("100 KiB head: %d %q", resp.StatusCode, body)
			}
			select {
			case <-shut:
				t.Fatal("RegisterOnShutdown ran before the shutdown")
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := e.Shutdown(ctx); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
			select {
			case <-shut:
			case <-time.After(5 * time.Second):
				t.Error("RegisterOnShutdown's function did not run")
			}
			<-done

			_, addr := start(t, Config{Inline: m.inline, Server: &http.Server{MaxHeaderBytes: 4096, Handler: srv.Handler}})
			c = dial(t, addr)
			c.send("GET / HTTP/1.1\r\nHost: t\r\nX-Big: " + big[:8192] + "\r\n\r\n")
			if resp, _ := c.read("GET"); resp.StatusCode != 431 {
				t.Errorf("MaxHeaderBytes 4096, an 8 KiB field: %d", resp.StatusCode)
			}
		})
	}
}

// ResponseController deadlines, kept where weir waits for the client. Read:
// a chunked body's second piece does not come; the read waits past the
// deadline and fails with os.ErrDeadlineExceeded; with the deadline lifted
// the next read goes on where the body is (no byte lost, the read that
// outlived its deadline delivers them). Write: a streaming answer to a client
// that reads nothing; the write that waits for room fails with
// os.ErrDeadlineExceeded in bounded time and the answer is cut. Both modes
// (inline: the read and the flush hand the worker off first).
func TestNetHTTPDeadlines(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			more := make(chan struct{})
			type result struct {
				body    string
				timeout error
				waited  time.Duration
			}
			res := make(chan result, 1)
			werr := make(chan result, 1)
			_, addr := start(t, Config{Inline: m.inline, HTTP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				rc := http.NewResponseController(w)
				if r.URL.Path == "/write" {
					rc.SetWriteDeadline(time.Now().Add(300 * time.Millisecond))
					rc.Flush()
					t0 := time.Now()
					piece := bytes.Repeat([]byte("w"), 64<<10)
					var err error
					for i := 0; i < 1024 && err == nil; i++ {
						_, err = w.Write(piece)
					}
					werr <- result{timeout: err, waited: time.Since(t0)}
					return
				}
				var got result
				buf := make([]byte, 64)
				n, _ := r.Body.Read(buf)
				got.body = string(buf[:n])
				rc.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
				t0 := time.Now()
				_, got.timeout = r.Body.Read(buf)
				got.waited = time.Since(t0)
				rc.SetReadDeadline(time.Time{})
				close(more)
				rest, _ := io.ReadAll(r.Body)
				got.body += string(rest)
				res <- got
				io.WriteString(w, got.body)
			})})
			c := dial(t, addr)
			c.send("POST /read HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n")
			select {
			case <-more:
			case <-time.After(5 * time.Second):
				t.Fatal("the read did not give up at its deadline")
			}
			c.send("3\r\ndef\r\n0\r\n\r\n")
			got := <-res
			if !errors.Is(got.timeout, os.ErrDeadlineExceeded) || got.waited < 250*time.Millisecond || got.waited > 3*time.Second {
				t.Errorf("read past the deadline: %v after %v", got.timeout, got.waited)
			}
			if resp, body := c.read("POST"); resp.StatusCode != 200 || body != "abcdef" || got.body != "abcdef" {
				t.Errorf("after the deadline: %d %q (handler read %q)", resp.StatusCode, body, got.body)
			}

			w := dial(t, addr)
			w.send(get("/write")) // and read nothing
			select {
			case got := <-werr:
				if !errors.Is(got.timeout, os.ErrDeadlineExceeded) || got.waited > 5*time.Second {
					t.Errorf("write past the deadline: %v after %v", got.timeout, got.waited)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the write did not give up at its deadline")
			}
		})
	}
}
