package weir

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Hijack (hijack.go) on both execution modes: weir writes nothing for the
// exchange, the handler's own 101 is the first thing the client reads after
// the answers before it, the bytes sent past the request come first on the
// conn, and the worker serves other connections while the hijacked handler
// runs. With one worker, inline, that last part is the hand-off's test: a
// handler that waited on the worker's own goroutine would keep the hand-back
// (and every other request) from ever being polled.

const upgradeHead = "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n"

const myUpgrade = "HTTP/1.1 101 Mine\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n"

// echoHijack answers /ws by hijacking: its own 101, then it echoes lines
// until the client says "bye". Other paths get their path back.
func echoHijack(t *testing.T, hijacked chan<- error) Handler {
	return func(r *Request, w *ResponseWriter) {
		if r.Path() != "/ws" {
			_ = w.RespondString(200, r.Path())
			return
		}
		c, err := w.Hijack()
		hijacked <- err
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(20 * time.Second))
		if _, err := io.WriteString(c, myUpgrade); err != nil {
			t.Errorf("write 101: %v", err)
			return
		}
		br := bufio.NewReader(c)
		for {
			line, err := br.ReadString('\n')
			if err != nil || line == "bye\n" {
				return
			}
			io.WriteString(c, "echo "+line)
		}
	}
}

func TestHijackBothModes(t *testing.T) {
	for _, async := range []bool{false, true} {
		name := map[bool]string{false: "inline", true: "async"}[async]
		t.Run(name, func(t *testing.T) {
			hijacked := make(chan error, 4)
			e, addr := start(t, Config{Handler: echoHijack(t, hijacked), Async: async, Workers: 1})
			c := dial(t, addr)
			// An answer before the upgrade, and early bytes after it.
			c.send(get("/a") + upgradeHead + "early\n")
			if _, body := c.read("GET"); body != "/a" {
				t.Fatalf("before the upgrade: %q", body)
			}
			if err := recvErr(t, hijacked); err != nil {
				t.Fatalf("Hijack: %v", err)
			}
			// The rule: weir wrote no 101 of its own; the handler's is first.
			got := make([]byte, len(myUpgrade))
			if _, err := io.ReadFull(c.br, got); err != nil || string(got) != myUpgrade {
				t.Fatalf("first bytes after /a: %q (%v), want the handler's 101", got, err)
			}
			line, err := c.br.ReadString('\n')
			if err != nil || line != "echo early\n" {
				t.Fatalf("the early bytes: %q (%v)", line, err)
			}
			// The worker goes on while the hijacked handler runs (one worker).
			other := dial(t, addr)
			other.send(get("/b"))
			if _, body := other.read("GET"); body != "/b" {
				t.Fatalf("another connection during the hijack: %q", body)
			}
			c.send("ping\n")
			if line, err := c.br.ReadString('\n'); err != nil || line != "echo ping\n" {
				t.Fatalf("echo: %q (%v)", line, err)
			}
			c.send("bye\n")
			if _, err := c.br.ReadByte(); err != io.EOF {
				t.Fatalf("after bye: %v, want EOF (the handler closed it)", err)
			}
			if m := e.Metrics(); m.Closes[closeUpgraded] != 1 {
				t.Errorf("upgraded closes %d, want 1", m.Closes[closeUpgraded])
			}
		})
	}
}

// A request that did not ask to upgrade: ErrNotUpgrade, and the exchange is
// still the handler's to answer.
func TestHijackRefusedForPlainRequest(t *testing.T) {
	for _, async := range []bool{false, true} {
		errs := make(chan error, 1)
		_, addr := start(t, Config{Async: async, Handler: func(r *Request, w *ResponseWriter) {
			_, err := w.Hijack()
			errs <- err
			_ = w.RespondString(200, "plain")
		}})
		c := dial(t, addr)
		c.send(get("/"))
		if _, body := c.read("GET"); body != "plain" {
			t.Fatalf("async %v: answer %q", async, body)
		}
		if err := recvErr(t, errs); !errors.Is(err, ErrNotUpgrade) {
			t.Fatalf("async %v: Hijack of a plain request: %v", async, err)
		}
	}
}

// Shutdown does not wait for a hijacked handler (as net/http's does not),
// and the hijacked connection outlives the engine. The arm without the
// release (Hijack not counting the handler out) makes Shutdown wait out its
// context and fail this test.
func TestHijackedHandlerOutlivesShutdown(t *testing.T) {
	for _, async := range []bool{false, true} {
		hijacked := make(chan error, 1)
		e := newEngine(t, Config{Addr: "127.0.0.1:0", Workers: 1, Async: async, Handler: echoHijack(t, hijacked)})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go e.Listen(ctx)
		waitFor(t, "bind", func() bool { return e.Addr() != nil })
		c := dial(t, e.Addr().String())
		c.send(upgradeHead)
		if err := recvErr(t, hijacked); err != nil {
			t.Fatalf("Hijack: %v", err)
		}
		got := make([]byte, len(myUpgrade))
		if _, err := io.ReadFull(c.br, got); err != nil {
			t.Fatal(err)
		}
		sctx, scancel := context.WithTimeout(context.Background(), 3*time.Second)
		err := e.Shutdown(sctx)
		scancel()
		if err != nil {
			t.Fatalf("async %v: Shutdown with a hijacked handler running: %v", async, err)
		}
		c.send("still\n")
		if line, err := c.br.ReadString('\n'); err != nil || line != "echo still\n" {
			t.Fatalf("async %v: after Shutdown: %q (%v)", async, line, err)
		}
		c.send("bye\n")
	}
}

// net/http's Hijacker, the way websocket libraries use it: the 101 written
// through the bufio.Writer, the early bytes read through the bufio.Reader.
func TestNetHTTPHijack(t *testing.T) {
	for _, inline := range []bool{false, true} {
		_, addr := start(t, Config{Inline: inline, HTTP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Upgrade") != "echo" {
				http.Error(w, "not an upgrade", 400)
				return
			}
			w.WriteHeader(299) // dropped: the handler answers on the connection
			c, rw, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Errorf("inline %v: Hijack: %v", inline, err)
				return
			}
			defer c.Close()
			if _, err := w.Write([]byte("x")); !errors.Is(err, http.ErrHijacked) {
				t.Errorf("Write after Hijack: %v, want http.ErrHijacked", err)
			}
			rw.WriteString(myUpgrade)
			rw.Flush()
			line, _ := rw.ReadString('\n')
			rw.WriteString("echo " + line)
			rw.Flush()
		})})
		c := dial(t, addr)
		c.send(upgradeHead + "hello\n")
		got := make([]byte, len(myUpgrade))
		if _, err := io.ReadFull(c.br, got); err != nil || string(got) != myUpgrade {
			t.Fatalf("inline %v: %q (%v)", inline, got, err)
		}
		rest, err := io.ReadAll(c.br)
		if err != nil || strings.TrimSpace(string(rest)) != "echo hello" {
			t.Fatalf("inline %v: after the 101: %q (%v)", inline, rest, err)
		}
	}
}

var _ net.Conn = (*earlyConn)(nil)

// recvErr waits up to 5 s for a handler's report (a Hijack that never
// returns fails here, not at the suite's timeout).
func recvErr(t *testing.T, c <-chan error) error {
	t.Helper()
	select {
	case err := <-c:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("the handler did not report within 5 s")
		return nil
	}
}
