package weir

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// block is a 64 KiB piece whose bytes say where they are, so a body made of
// copies of it shows any byte lost, doubled or moved.
func block() []byte {
	b := make([]byte, 64<<10)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return b
}

func checkBlocks(t *testing.T, body []byte, total int) {
	t.Helper()
	if len(body) != total {
		t.Fatalf("body is %d bytes, want %d", len(body), total)
	}
	b := block()
	for off := 0; off < total; off += len(b) {
		if !bytes.Equal(body[off:off+len(b)], b) {
			t.Fatalf("body differs in the block at %d", off)
		}
	}
}

// settled waits until n stops growing (two samples 200 ms apart agree),
// bounded at 10 s, and returns it.
func settled(n *atomic.Int64) int64 {
	last := n.Load()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		if v := n.Load(); v == last {
			return v
		} else {
			last = v
		}
	}
	return last
}

// A stream's writer is held back by a client that does not read: what the
// engine holds is bounded by the stream window (plus the kernel's socket
// buffers), and the body arrives whole once the client reads.
func TestStreamBackpressure(t *testing.T) {
	const total = 64 << 20
	arms := []struct {
		name    string
		window  int
		bounded bool
	}{
		{"the rule: a 64 KiB window holds the writer", 64 << 10, true},
		{"must lose: a 128 MiB window holds nothing back", 128 << 20, false},
	}
	for _, arm := range arms {
		t.Run(arm.name, func(t *testing.T) {
			var written atomic.Int64
			done := make(chan error, 1)
			e, addr := start(t, Config{Async: true, StreamWindowBytes: arm.window,
				MaxOutputBytes: max(arm.window, 4<<20), Workers: 1,
				Handler: func(r *Request, w *ResponseWriter) {
					s, err := w.Stream(200, LengthUnknown)
					if err != nil {
						done <- err
						return
					}
					piece := block()
					for written.Load() < total {
						n, err := s.Write(piece)
						written.Add(int64(n))
						if err != nil {
							done <- err
							return
						}
					}
					done <- s.End()
				}})
			c := dial(t, addr)
			c.send(get("/"))
			held := settled(&written) // the client reads nothing meanwhile
			if arm.bounded && held > 24<<20 {
				t.Fatalf("the writer got %d bytes out while the client read nothing (bound 24 MiB: the window and the socket buffers)", held)
			}
			if !arm.bounded && held != total {
				t.Fatalf("without a window the writer should have finished: %d of %d", held, total)
			}
			resp, body := c.read("GET")
			if te := resp.TransferEncoding; len(te) != 1 || te[0] != "chunked" {
				t.Fatalf("TransferEncoding %v, want chunked", te)
			}
			checkBlocks(t, []byte(body), total)
			if err := <-done; err != nil {
				t.Fatalf("handler: %v", err)
			}
			m := e.Metrics()
			t.Logf("%s: %d of %d bytes written while the client stalled; stream waits %d", arm.name, held, total, m.StreamWaits)
			if m.Streams != 1 || arm.bounded && m.StreamWaits == 0 {
				t.Fatalf("Streams %d, StreamWaits %d", m.Streams, m.StreamWaits)
			}
		})
	}
}

// Inside an inline handler a full window is an error, not a wait (the wait
// would stall the worker whose poll reports the room); the Stream handed to a
// goroutine then finishes the body.
func TestStreamInlineFullHandsOff(t *testing.T) {
	const total = 1 << 20
	done := make(chan error, 1)
	_, addr := start(t, Config{StreamWindowBytes: 64 << 10, Workers: 1,
		Handler: func(r *Request, w *ResponseWriter) {
			s, err := w.Stream(200, total)
			if err != nil {
				done <- err
				return
			}
			body := bytes.Repeat(block(), total/(64<<10))
			n, err := s.Write(body)
			if !errors.Is(err, ErrStreamFull) || n == 0 || n == total {
				done <- errors.New("inline Write: want ErrStreamFull part-way, got " + itoa(n) + " bytes, " + errString(err))
				_ = s.Abort()
				return
			}
			go func() {
				if _, err := s.Write(body[n:]); err != nil {
					done <- err
					return
				}
				done <- s.End()
			}()
		}})
	c := dial(t, addr)
	c.send(get("/"))
	resp, body := c.read("GET")
	if resp.ContentLength != total {
		t.Fatalf("Content-Length %d", resp.ContentLength)
	}
	checkBlocks(t, []byte(body), total)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}

// A writer waiting for room learns that its client went away (weir hands no
// stream back for a dead connection: the wait's recheck finds it). Without
// the recheck this test hangs until its timeout.
func TestStreamWriterLearnsDeath(t *testing.T) {
	done := make(chan error, 1)
	e, addr := start(t, Config{Async: true, StreamWindowBytes: 64 << 10, Workers: 1,
		Handler: func(r *Request, w *ResponseWriter) {
			s, err := w.Stream(200, LengthUnknown)
			if err != nil {
				done <- err
				return
			}
			for {
				if _, err := s.Write(block()); err != nil {
					done <- err
					return
				}
			}
		}})
	c := dial(t, addr)
	c.send(get("/"))
	br := bufio.NewReader(c.c)
	if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "HTTP/1.1 200") {
		t.Fatalf("status line %q, %v", line, err)
	}
	c.c.Close()
	select {
	case err := <-done:
		if !errors.Is(err, ErrGone) && !errors.Is(err, ErrStale) {
			t.Fatalf("writer ended with %v, want ErrGone or ErrStale", err)
		}
		t.Logf("the writer learnt of the death: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the writer still waits 10 s after its client went away")
	}
	if e.Metrics().Gone == 0 {
		t.Fatal("Metrics.Gone is 0")
	}
}

// A Length stream refuses bytes past its length and an end short of it, and
// leaves the stream open for the caller to put right.
func TestStreamLength(t *testing.T) {
	done := make(chan error, 1)
	_, addr := start(t, Config{Async: true, Handler: func(r *Request, w *ResponseWriter) {
		_ = w.AddHeader("Content-Type", "text/plain")
		s, err := w.Stream(200, 10)
		if err != nil {
			done <- err
			return
		}
		if _, err := s.Write([]byte("12345")); err != nil {
			done <- err
			return
		}
		if err := s.End(); err == nil {
			done <- errors.New("End short of the length was taken")
			return
		}
		if _, err := s.Write([]byte("678901")); err == nil {
			done <- errors.New("a write past the length was taken")
			return
		}
		if _, err := s.Write([]byte("67890")); err != nil {
			done <- err
			return
		}
		if err := s.End(); err != nil {
			done <- err
			return
		}
		_, err = s.Write([]byte("x"))
		if !errors.Is(err, ErrStreamOver) {
			done <- errors.New("a write after End: " + errString(err))
			return
		}
		done <- nil
	}})
	c := dial(t, addr)
	c.send(get("/"))
	resp, body := c.read("GET")
	if resp.ContentLength != 10 || body != "1234567890" || resp.Header.Get("Content-Type") != "text/plain" {
		t.Fatalf("Content-Length %d, body %q, header %v", resp.ContentLength, body, resp.Header)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A handler that panics with a stream open has it aborted: the client sees a
// cut body, never one that looks whole.
func TestStreamPanicAborts(t *testing.T) {
	e, addr := start(t, Config{Async: true, Handler: func(r *Request, w *ResponseWriter) {
		s, err := w.Stream(200, LengthUnknown)
		if err != nil {
			panic(err)
		}
		_, _ = s.Write([]byte("partial"))
		panic("boom")
	}})
	c := dial(t, addr)
	c.send(get("/"))
	resp, err := http.ReadResponse(c.br, &http.Request{Method: "GET"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) || string(b) != "partial" {
		t.Fatalf("body %q, %v: want \"partial\" cut short", b, err)
	}
	if m := e.Metrics(); m.Panics != 1 {
		t.Fatalf("Panics %d", m.Panics)
	}
}
