package weir

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Server-sent events through the net/http adapter: what the handler flushed
// reaches the client while the handler still runs, in both modes: async (the
// default) streams at once; an inline handler that flushes is handed off
// (handoff.go) and then streams, while its one worker serves another client.
// Without the hand-off the inline arm fails: its Flush could not send early
// (the event waits for the worker, which waits for the handler), and the
// other client waits for the worker too.
func TestNetHTTPFlushStreams(t *testing.T) {
	for _, inline := range []bool{false, true} {
		name := "async"
		if inline {
			name = "inline, handed off"
		}
		t.Run(name, func(t *testing.T) {
			release := make(chan struct{})
			_, addr := start(t, Config{Inline: inline, Workers: 1, HTTP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/other" {
					io.WriteString(w, "other")
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, "data: one\n\n")
				w.(http.Flusher).Flush()
				select {
				case <-release:
				case <-time.After(3 * time.Second):
				}
				fmt.Fprint(w, "data: two\n\n")
			})})
			c := dial(t, addr)
			c.send(get("/events"))
			got := make(chan string, 1)
			go func() {
				resp, err := http.ReadResponse(c.br, &http.Request{Method: "GET"})
				if err != nil {
					got <- "error: " + err.Error()
					return
				}
				line, err := bufio.NewReader(resp.Body).ReadString('\n')
				if err != nil {
					got <- "error: " + err.Error()
					return
				}
				got <- resp.Header.Get("Content-Type") + " " + strings.Join(resp.TransferEncoding, ",") + " " + line
			}()
			var first string
			select {
			case first = <-got:
			case <-time.After(1500 * time.Millisecond):
			}
			want := "text/event-stream chunked data: one\n"
			if first != want {
				close(release)
				t.Fatalf("first event while the handler runs: %q, want %q", first, want)
			}
			other := dial(t, addr)
			other.send(get("/other"))
			if _, body := other.read("GET"); body != "other" {
				t.Errorf("another client while the handler waits: %q", body)
			}
			close(release)
		})
	}
}

// An answer larger than the adapter holds streams by itself, and a client
// that reads nothing holds the handler's writes back. Inline is the arm that
// must lose: it holds the whole answer (the handler returns before the client
// read a byte).
func TestNetHTTPLargeAnswerIsBounded(t *testing.T) {
	const total = 64 << 20
	for _, inline := range []bool{false, true} {
		name := "async: bounded"
		if inline {
			name = "inline, must lose: held whole"
		}
		t.Run(name, func(t *testing.T) {
			var written atomic.Int64
			finished := make(chan struct{})
			_, addr := start(t, Config{Inline: inline, Workers: 1, StreamWindowBytes: 64 << 10,
				MaxOutputBytes: 128 << 20, HTTP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					defer close(finished)
					b := block()
					for written.Load() < total {
						n, err := w.Write(b[:32<<10])
						written.Add(int64(n))
						if err != nil {
							return
						}
					}
				})})
			c := dial(t, addr)
			c.send(get("/big"))
			if inline {
				select {
				case <-finished:
				case <-time.After(20 * time.Second):
					t.Fatalf("inline should hold the whole answer and return: %d of %d written", written.Load(), total)
				}
			}
			held := settled(&written)
			t.Logf("%s: %d of %d bytes written while the client read nothing", name, held, total)
			if !inline && held > 24<<20 {
				t.Fatalf("the handler wrote %d bytes while the client read nothing (bound 24 MiB)", held)
			}
			resp, body := c.read("GET")
			if len(body) != total {
				t.Fatalf("body %d bytes", len(body))
			}
			chunked := len(resp.TransferEncoding) == 1
			if chunked == inline {
				t.Fatalf("TransferEncoding %v, Content-Length %d", resp.TransferEncoding, resp.ContentLength)
			}
			b := block()[:32<<10]
			for off := 0; off < total; off += len(b) {
				if body[off:off+len(b)] != string(b) {
					t.Fatalf("body differs at %d", off)
				}
			}
		})
	}
}

// A handler's own Content-Length is kept on a streamed answer; a handler that
// writes past it gets http.ErrContentLength, and one that stops short has its
// answer cut (the connection closes), never padded or framed as whole.
func TestNetHTTPStreamedContentLength(t *testing.T) {
	const n = 200 << 10
	var overErr atomic.Value
	_, addr := start(t, Config{HTTP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(n))
		b := strings.Repeat("x", n)
		switch r.URL.Path {
		case "/exact":
			io.WriteString(w, b)
		case "/over":
			io.WriteString(w, b)
			w.(http.Flusher).Flush()
			_, err := io.WriteString(w, "more")
			w.(http.Flusher).Flush()
			overErr.Store(errString(err) + "|" + errString(http.NewResponseController(w).Flush()))
		case "/short":
			io.WriteString(w, b[:n-1000])
		}
	})})
	c := dial(t, addr)
	c.send(get("/exact"))
	resp, body := c.read("GET")
	if resp.ContentLength != n || len(resp.TransferEncoding) != 0 || len(body) != n {
		t.Fatalf("exact: Content-Length %d, TE %v, body %d", resp.ContentLength, resp.TransferEncoding, len(body))
	}
	c.send(get("/over"))
	resp, body = c.read("GET")
	if len(body) != n {
		t.Fatalf("over: body %d", len(body))
	}
	// The body is whole before the handler's write past it returns: wait
	// for the handler to record that write's error.
	waitFor(t, "the write past Content-Length", func() bool { return overErr.Load() != nil })
	if v, _ := overErr.Load().(string); !strings.Contains(v, http.ErrContentLength.Error()) {
		t.Fatalf("a write past Content-Length: %q, want http.ErrContentLength", v)
	}
	c2 := dial(t, addr)
	c2.send(get("/short"))
	resp, err := http.ReadResponse(c2.br, &http.Request{Method: "GET"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) || len(got) != n-1000 {
		t.Fatalf("short: %d bytes, %v: want a cut body", len(got), err)
	}
}

// runtime.Goexit in a handler: its client gets a 500 that closes, the worker
// goes on serving (an inline handler's Goexit ends the worker's goroutine,
// and another carries on), and Shutdown still completes. Without the
// replacement the second client's requests are never answered.
func TestGoexitSurvived(t *testing.T) {
	native := func(r *Request, w *ResponseWriter) {
		if r.Path() == "/exit" {
			runtime.Goexit()
		}
		hello(r, w)
	}
	nethttp := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/exit" {
			io.WriteString(w, "half")
			runtime.Goexit()
		}
		io.WriteString(w, "Hello, World!")
	})
	arms := []struct {
		name string
		cfg  Config
	}{
		{"native inline", Config{Handler: native}},
		{"native async", Config{Handler: native, Async: true}},
		{"net/http async", Config{HTTP: nethttp}},
		{"net/http inline", Config{HTTP: nethttp, Inline: true}},
	}
	for _, arm := range arms {
		t.Run(arm.name, func(t *testing.T) {
			cfg := arm.cfg
			cfg.Workers = 1
			e, addr := start(t, cfg)
			for round := 0; round < 3; round++ {
				c := dial(t, addr)
				c.send(get("/exit"))
				resp, _ := c.read("GET")
				if resp.StatusCode != 500 || !resp.Close {
					t.Fatalf("Goexit answered %d (close %v), want 500 and a close", resp.StatusCode, resp.Close)
				}
				ok := dial(t, addr)
				for i := 0; i < 5; i++ {
					ok.send(get("/"))
					if resp, body := ok.read("GET"); resp.StatusCode != 200 || body != "Hello, World!" {
						t.Fatalf("after a Goexit: %d %q", resp.StatusCode, body)
					}
				}
			}
			if m := e.Metrics(); m.Goexits != 3 {
				t.Fatalf("Goexits %d, want 3", m.Goexits)
			}
		})
	}
}
