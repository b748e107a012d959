package weir

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The adapter's streamed bodies (nethttp_body.go, body.go), in both
// execution modes: an inline handler that must wait for body bytes hands its
// worker off.
var bodyModes = []struct {
	name   string
	inline bool
}{{"async", false}, {"inline", true}}

// The rule: 100 Continue is sent on the first Body.Read, so a handler that
// answers without reading refuses the body (net/http's behaviour). The arm
// that shows the loss: bodies buffered (StreamBodyBytes -1, the adapter
// before streaming), where weir sends the 100 before the handler runs and
// the client is told to send a body nobody wants.
func TestNetHTTPContinueOnFirstRead(t *testing.T) {
	for _, m := range bodyModes {
		for _, streamed := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/streamed=%v", m.name, streamed), func(t *testing.T) {
				cfg := Config{Inline: m.inline, HTTP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path == "/refuse" {
						w.WriteHeader(http.StatusUnauthorized)
						return
					}
					b, err := io.ReadAll(r.Body)
					if err != nil {
						t.Errorf("read: %v", err)
					}
					w.Write(bytes.ToUpper(b))
				})}
				if !streamed {
					cfg.StreamBodyBytes = -1
				}
				e, addr := start(t, cfg)
				c := dial(t, addr)
				c.send("POST /refuse HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
				resp, _ := c.read("POST")
				if streamed {
					if resp.StatusCode != 401 || !resp.Close {
						t.Fatalf("refused: %d close=%v (want 401 with no 100 before it, then a close)", resp.StatusCode, resp.Close)
					}
				} else if resp.StatusCode != 100 {
					t.Fatalf("buffered: %d, want the 100 weir sends before the handler runs", resp.StatusCode)
				}
				// A handler that reads gets the 100 with its first Read.
				c = dial(t, addr)
				c.send("POST /read HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
				line, err := c.br.ReadString('\n')
				if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100") {
					t.Fatalf("interim answer %q %v", line, err)
				}
				if blank, _ := c.br.ReadString('\n'); blank != "\r\n" {
					t.Fatalf("after 100: %q", blank)
				}
				c.send("hello")
				if resp, body := c.read("POST"); resp.StatusCode != 200 || body != "HELLO" {
					t.Fatalf("answer %d %q", resp.StatusCode, body)
				}
				if m := e.Metrics(); m.ContinuesSent != 2-boolInt(streamed) {
					t.Errorf("ContinuesSent %d", m.ContinuesSent)
				}
			})
		}
	}
}

func boolInt(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// A chunked body reaches the handler as it arrives: the client sends the
// rest only after the handler has read the first piece (buffered, the
// handler would not run before the whole body, and the test would time
// out). r.Trailer names the announced field from the start and has its
// value at io.EOF; the connection then carries the next request.
func TestNetHTTPChunkedBodyStreams(t *testing.T) {
	for _, m := range bodyModes {
		t.Run(m.name, func(t *testing.T) {
			first := make(chan string, 1)
			_, addr := start(t, Config{Workers: 1, Inline: m.inline, HTTP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == "GET" {
					io.WriteString(w, "next")
					return
				}
				if _, ok := r.Trailer["X-Sum"]; !ok || r.Trailer.Get("X-Sum") != "" {
					t.Errorf("before the body: Trailer %v", r.Trailer)
				}
				p := make([]byte, 100)
				n, err := r.Body.Read(p)
				first <- string(p[:n])
				if err != nil {
					t.Errorf("first read: %v", err)
				}
				rest, err := io.ReadAll(r.Body)
				fmt.Fprintf(w, "%s|%s|%s|%v", p[:n], rest, r.Trailer.Get("X-Sum"), err)
			})})
			c := dial(t, addr)
			c.send("POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n5\r\nabcde\r\n")
			select {
			case got := <-first:
				if got != "abcde" {
					t.Fatalf("first piece %q", got)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the handler did not see the first piece before the rest was sent")
			}
			// Another client is served while the handler waits for the rest.
			c2 := dial(t, addr)
			c2.send(get("/"))
			if _, body := c2.read("GET"); body != "next" {
				t.Fatalf("other client: %q", body)
			}
			c.send("3\r\nfgh\r\n0\r\nX-Sum: 8\r\n\r\n")
			if resp, body := c.read("POST"); resp.StatusCode != 200 || body != "abcde|fgh|8|<nil>" {
				t.Fatalf("answer %d %q", resp.StatusCode, body)
			}
			c.send(get("/"))
			if resp, body := c.read("GET"); body != "next" || resp.Close {
				t.Fatalf("next request: %q close=%v", body, resp.Close)
			}
		})
	}
}

// A large body streams whole when its length is at least the threshold
// (no MaxBody: net/http's none); the smaller one still comes buffered, and a
// body the handler leaves unread is drained up to 256 KiB so the connection
// stays open, and closes the connection past it.
func TestNetHTTPLargeBodyStreamsAndDrains(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB
	for _, m := range bodyModes {
		t.Run(m.name, func(t *testing.T) {
			e, addr := start(t, Config{Inline: m.inline, StreamBodyBytes: 64 << 10,
				HTTP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path == "/ignore" {
						io.WriteString(w, "ignored")
						return
					}
					b, err := io.ReadAll(r.Body)
					fmt.Fprintf(w, "%d %d %v %v", r.ContentLength, len(b), bytes.Equal(b, []byte(big[:len(b)])), err)
				})})
			c := dial(t, addr)
			c.send(post("/read", big))
			if _, body := c.read("POST"); body != fmt.Sprintf("%d %d true <nil>", len(big), len(big)) {
				t.Fatalf("1 MiB: %q", body)
			}
			c.send(post("/read", big[:1000])) // below the threshold: buffered
			if _, body := c.read("POST"); body != "1000 1000 true <nil>" {
				t.Fatalf("small: %q", body)
			}
			c.send(post("/ignore", big[:200<<10])) // streamed, unread, under 256 KiB: drained
			if resp, body := c.read("POST"); body != "ignored" || resp.Close {
				t.Fatalf("ignored 200 KiB: %q close=%v", body, resp.Close)
			}
			c.send(get("/read"))
			if _, body := c.read("GET"); body != "0 0 true <nil>" {
				t.Fatalf("after the drain: %q", body)
			}
			c.send(post("/ignore", big)) // past the drain: the answer closes
			if resp, body := c.read("POST"); body != "ignored" || !resp.Close {
				t.Fatalf("ignored 1 MiB: %q close=%v", body, resp.Close)
			}
			if m := e.Metrics(); m.Unanswered != 0 || m.Refused != 0 {
				t.Errorf("metrics %+v", m)
			}
		})
	}
}

// A Read waiting on another goroutine when the handler answers and returns
// gives up (it would otherwise wait for a body nobody reads, and its worker
// would keep the read); the engine goes on serving.
func TestNetHTTPBodyReadOutlivingHandler(t *testing.T) {
	for _, m := range bodyModes {
		t.Run(m.name, func(t *testing.T) {
			done := make(chan error, 1)
			started := make(chan struct{})
			_, addr := start(t, Config{Workers: 1, Inline: m.inline, HTTP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == "GET" {
					io.WriteString(w, "ok")
					return
				}
				go func() {
					close(started)
					_, err := io.ReadAll(r.Body)
					done <- err
				}()
				<-started
				time.Sleep(20 * time.Millisecond) // the read is posted and parked by now (most runs)
				io.WriteString(w, "answered")
			})})
			c := dial(t, addr)
			c.send("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabcde\r\n")
			if resp, body := c.read("POST"); body != "answered" || !resp.Close {
				t.Fatalf("answer %q close=%v", body, resp.Close)
			}
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("the read after the answer succeeded")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("a read outliving its handler never returned")
			}
			c2 := dial(t, addr)
			c2.send(get("/"))
			if _, body := c2.read("GET"); body != "ok" {
				t.Fatalf("after: %q", body)
			}
		})
	}
}

// The native API: ReadBody in an inline handler (it hands off when it must
// wait) and an async one; ErrNotStreamed for a buffered body; a client that
// goes mid-body gives io.ErrUnexpectedEOF.
func TestReadBodyNative(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(fmt.Sprintf("async=%v", async), func(t *testing.T) {
			errs := make(chan error, 4)
			e, addr := start(t, Config{Async: async, StreamBodyBytes: 16, Handler: func(r *Request, w *ResponseWriter) {
				if !r.BodyStreamed() {
					_, err := w.ReadBody(make([]byte, 8))
					w.RespondString(200, fmt.Sprintf("buffered %q %v", r.Body(), errors.Is(err, ErrNotStreamed)))
					return
				}
				var got []byte
				p := make([]byte, 7)
				for {
					n, err := w.ReadBody(p)
					got = append(got, p[:n]...)
					if err == io.EOF {
						break
					}
					if err != nil {
						errs <- err
						w.RespondString(400, "")
						return
					}
				}
				w.RespondString(200, fmt.Sprintf("%d %s", r.BodyLength(), got))
			}})
			c := dial(t, addr)
			c.send(post("/", "short"))
			if _, body := c.read("POST"); body != `buffered "short" true` {
				t.Fatalf("buffered: %q", body)
			}
			body := strings.Repeat("x", 40)
			c.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\n\r\n" + body[:10])
			time.Sleep(30 * time.Millisecond)
			c.send(body[10:])
			if _, got := c.read("POST"); got != "40 "+body {
				t.Fatalf("streamed: %q", got)
			}
			// Counted: the reads (the first found 10 bytes, one waited for
			// the rest), and an inline handler's own crossings.
			if m := e.Metrics(); m.BodyReads < 3 || m.BodyWaits < 1 || (m.DirectReads > 0) == async {
				t.Errorf("BodyReads %d BodyWaits %d DirectReads %d", m.BodyReads, m.BodyWaits, m.DirectReads)
			}
			c2 := dial(t, addr)
			c2.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\n\r\n" + body[:10])
			time.Sleep(30 * time.Millisecond)
			c2.c.Close()
			select {
			case err := <-errs:
				if err != io.ErrUnexpectedEOF {
					t.Fatalf("client gone mid-body: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the read of a body whose client went never returned")
			}
		})
	}
}

// MaxBody holds for streamed bodies (weir 0.4): a declared length past it is
// answered 413 before the handler runs and without a 100 Continue; a
// chunked body whose chunks cross it ends the handler's r.Body with an
// *http.MaxBytesError (net/http's own error for http.MaxBytesReader) while
// weir answers 413 and closes. The arm that must lose: the same requests
// with no MaxBody (an HTTP handler's default) reach the handler whole.
func TestNetHTTPMaxBody(t *testing.T) {
	big := strings.Repeat("x", 600<<10)
	chunked := "POST /read HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
		"40000\r\n" + big[:256<<10] + "\r\n" + "40000\r\n" + big[:256<<10] + "\r\n0\r\n\r\n" // 512 KiB in two chunks
	for _, m := range bodyModes {
		for _, limit := range []int64{300 << 10, 0} {
			t.Run(fmt.Sprintf("%s/max%d", m.name, limit), func(t *testing.T) {
				var ran atomic.Int32
				readErr := make(chan error, 1)
				_, addr := start(t, Config{Inline: m.inline, MaxBody: limit, HTTP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					ran.Add(1)
					b, err := io.ReadAll(r.Body)
					readErr <- err
					if err != nil {
						return // weir answered 413; whatever the handler writes is dropped
					}
					fmt.Fprintf(w, "%d", len(b))
				})})
				c := dial(t, addr)
				c.send(post("/read", big))
				resp, body := c.read("POST")
				if limit > 0 {
					if resp.StatusCode != 413 || ran.Load() != 0 {
						t.Fatalf("declared past MaxBody: %d %q, handler ran %d times", resp.StatusCode, body, ran.Load())
					}
					c = dial(t, addr) // the 413 closed that connection
				} else if err := <-readErr; resp.StatusCode != 200 || body != itoa(len(big)) || err != nil {
					t.Fatalf("no MaxBody: %d %q %v", resp.StatusCode, body, err)
				}
				c.send(chunked)
				resp, body = c.read("POST")
				err := <-readErr
				if limit > 0 {
					var mbe *http.MaxBytesError
					if resp.StatusCode != 413 || !errors.As(err, &mbe) || mbe.Limit != limit {
						t.Fatalf("chunked past MaxBody: %d %q, handler's read error %v", resp.StatusCode, body, err)
					}
				} else if resp.StatusCode != 200 || body != itoa(512<<10) || err != nil {
					t.Fatalf("chunked, no MaxBody: %d %q %v", resp.StatusCode, body, err)
				}
			})
		}
	}
}
