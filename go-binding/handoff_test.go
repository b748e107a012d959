package weir

import (
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The hand-off's rules (handoff.go, worker.go's run and leave), each with a
// rule arm and a negative arm that switches the rule off through weirgo's
// test switches and shows what is lost.

// batchAfterHandOff makes one batch of two POSTs on one worker: a gate
// request holds the worker (inline) while the two arrive on connections
// already open, so its next poll returns both. The first handler to run
// hands off and waits; the second then runs on the new driver before that
// driver's first poll, and reads its streamed body (5 bytes) directly. It
// answers what it read, or the read's error. batched: the two shared a batch.
func batchAfterHandOff(t *testing.T) (answer string, batched bool) {
	t.Helper()
	gate, release := make(chan struct{}), make(chan struct{})
	var order atomic.Int32
	var inBatch atomic.Bool
	_, addr := start(t, Config{Workers: 1, StreamBodyBytes: 1, Handler: func(r *Request, w *ResponseWriter) {
		switch r.Target() {
		case "/gate":
			<-gate
			_ = w.RespondString(200, "gate")
			return
		case "/warm":
			_ = w.RespondString(200, "warm")
			return
		}
		if order.Add(1) == 1 {
			inBatch.Store(w.wk.n-w.wk.next >= 1) // the other is still to come in this batch
			if err := w.HandOff(); err != nil {
				_ = w.RespondString(500, err.Error())
				return
			}
			<-release
			_ = w.RespondString(200, "handed")
			return
		}
		w.SetReadDeadline(time.Now().Add(time.Second)) // the negative arm's stall ends here
		buf := make([]byte, 16)
		n, err := w.ReadBody(buf)
		if err != nil && n == 0 {
			_ = w.RespondString(500, "read: "+err.Error())
			return
		}
		_ = w.RespondString(200, "read "+string(buf[:n]))
	}})
	a, b, g := dial(t, addr), dial(t, addr), dial(t, addr)
	for _, c := range []*client{a, b, g} {
		c.send("GET /warm HTTP/1.1\r\nHost: h\r\n\r\n")
		statusOf(c)
	}
	g.send("GET /gate HTTP/1.1\r\nHost: h\r\n\r\n")
	time.Sleep(5 * time.Millisecond) // the gate's handler holds the worker (if not yet, the batch has three)
	post := "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello"
	a.send(post)
	b.send(post)
	time.Sleep(20 * time.Millisecond) // both requests wait in the kernel for the worker's next poll
	close(gate)
	statusOf(g)
	replies := make(chan string, 2)
	for _, c := range []*client{a, b} {
		go func(c *client) {
			resp, err := http.ReadResponse(c.br, nil)
			if err != nil {
				replies <- "error " + err.Error()
				return
			}
			var sb strings.Builder
			_, _ = fmt.Fprintf(&sb, "%d ", resp.StatusCode)
			buf := make([]byte, 256)
			n, _ := resp.Body.Read(buf)
			sb.Write(buf[:n])
			resp.Body.Close()
			replies <- sb.String()
		}(c)
	}
	first := <-replies // the reader's: the hand-off's waits for release
	close(release)
	if second := <-replies; !strings.HasPrefix(second, "200 handed") {
		first, second = second, first
		if !strings.HasPrefix(second, "200 handed") {
			t.Fatalf("hand-off's answer: %q (other %q)", second, first)
		}
	}
	return first, inBatch.Load()
}

// Rule: a driver that starts after a hand-off enters (weirgo_enter) before
// it serves the rest of the batch: the flag, so the handler's body read runs
// directly instead of waiting on the driver's own next poll, and weir's turn,
// so weir_body_read is on the worker's thread. Negative arms: without the
// entry, the read waits for a poll its own driver cannot make until the
// handler returns (the worker stalls until the read's deadline); with the
// flag but not the turn, weir refuses the read (WEIR_E_STATE).
func TestHandOffNextDriverEnters(t *testing.T) {
	arms := []struct {
		name string
		mode int
		want string
	}{
		{"rule", 0, "200 read hello"},
		{"negative: no entry", 1, "500 read: " + errDeadlineText},
		{"negative: flag without the turn", 2, "500 read: "},
	}
	for _, arm := range arms {
		t.Run(arm.name, func(t *testing.T) {
			testEnterMode(arm.mode)
			defer testEnterMode(0)
			for try := 0; ; try++ {
				got, batched := batchAfterHandOff(t)
				if !batched {
					if try == 5 {
						t.Fatal("the two requests never shared a batch")
					}
					continue
				}
				if !strings.HasPrefix(got, arm.want) {
					t.Fatalf("answer %q, want %q...", got, arm.want)
				}
				return
			}
		})
	}
}

var errDeadlineText = "i/o timeout"

// Rule: a driver's goroutine that ends (a handler's Goexit) gives up weir's
// turn with the flag before it unlocks its thread (weirgo_leave), so no
// goroutine that thread runs next answers at once beside the new driver.
// The worker goes on serving on a new driver. Negative arm: the old leave
// (the flag only) leaves the thread holding the turn.
func TestHandOffGoexitLeavesTurn(t *testing.T) {
	for _, keeps := range []bool{false, true} {
		name := "rule"
		if keeps {
			name = "negative: leave keeps the turn"
		}
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			var held []bool
			testAfterLeave = func(_ *worker, holds bool) {
				mu.Lock()
				held = append(held, holds)
				mu.Unlock()
			}
			defer func() { testAfterLeave = nil }()
			if keeps {
				testLeaveKeepsTurn(true)
				defer testLeaveKeepsTurn(false)
			}
			e, addr := start(t, Config{Workers: 1, Handler: func(r *Request, w *ResponseWriter) {
				if r.Target() == "/exit" {
					runtime.Goexit()
				}
				_ = w.RespondString(200, "ok")
			}})
			c := dial(t, addr)
			c.send("GET /exit HTTP/1.1\r\nHost: h\r\n\r\n")
			if s := statusOf(c); s != 500 {
				t.Fatalf("Goexit: status %d, want 500", s)
			}
			c = dial(t, addr) // the 500 closed the first
			c.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
			if s := statusOf(c); s != 200 {
				t.Fatalf("after the Goexit: status %d", s)
			}
			mu.Lock()
			got := append([]bool(nil), held...)
			mu.Unlock()
			if len(got) != 1 {
				t.Fatalf("leaves heard %v, want one", got)
			}
			if got[0] != keeps {
				t.Fatalf("the exiting thread holds the turn: %v, want %v", got[0], keeps)
			}
			if m := e.Metrics(); m.Goexits != 1 {
				t.Fatalf("Goexits %d", m.Goexits)
			}
		})
	}
}

// Rule: a handler that hands off and then calls runtime.Goexit is answered
// (500, its exchange closed) and the worker goes on, driven by the one
// goroutine the hand-off started: the released goroutine's exit leaves
// nothing (it left in handOff; its thread is no longer the worker's) and
// starts no other driver. Run on many requests at once, so that a second
// driver (two polling one worker) or none (a stall) would show.
func TestHandOffThenGoexit(t *testing.T) {
	var leaves atomic.Int32
	testAfterLeave = func(*worker, bool) { leaves.Add(1) }
	defer func() { testAfterLeave = nil }()
	e, addr := start(t, Config{Workers: 1, Handler: func(r *Request, w *ResponseWriter) {
		if r.Target() == "/exit" {
			if err := w.HandOff(); err != nil {
				_ = w.RespondString(500, err.Error())
				return
			}
			runtime.Goexit()
		}
		_ = w.RespondString(200, "ok")
	}})
	const conns, rounds = 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for i := 0; i < conns; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for j := 0; j < rounds; j++ {
				c := dial(t, addr)
				path := "/"
				if (i+j)%2 == 0 {
					path = "/exit"
				}
				c.send("GET " + path + " HTTP/1.1\r\nHost: h\r\n\r\n")
				want := 200
				if path == "/exit" {
					want = 500
				}
				if s := statusOf(c); s != want {
					errs <- fmt.Errorf("%s: status %d, want %d", path, s, want)
					return
				}
				c.c.Close()
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	m := e.Metrics()
	if want := uint64(conns * rounds / 2); m.Goexits != want || m.HandOffs != want {
		t.Fatalf("Goexits %d, HandOffs %d, want %d each", m.Goexits, m.HandOffs, want)
	}
	if n := leaves.Load(); n != 0 {
		t.Fatalf("%d released drivers left again", n)
	}
}

// statusOf reads one answer's status (-1: none came); safe off the test's
// goroutine.
func statusOf(c *client) int {
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return -1
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// Rule: a handler that hands off and then reads its streamed body (an
// "Expect: 100-continue" request, so no byte came before the first read)
// gets it: the read is posted to the worker, whose new driver runs it in its
// first cycle, before its first poll, on the thread that holds the worker's
// turn (weirgo_enter). Negative arm: the entry without the turn, the read
// runs on a thread weir does not count as the worker's and is refused.
func TestHandOffThenReadBodyExpect(t *testing.T) {
	for _, mode := range []int{0, 2} {
		name := "rule"
		if mode != 0 {
			name = "negative: entry without the turn"
		}
		t.Run(name, func(t *testing.T) {
			testEnterMode(mode)
			defer testEnterMode(0)
			_, addr := start(t, Config{Workers: 1, StreamBodyBytes: 1, Handler: func(r *Request, w *ResponseWriter) {
				if err := w.HandOff(); err != nil {
					_ = w.RespondString(500, err.Error())
					return
				}
				w.SetReadDeadline(time.Now().Add(2 * time.Second))
				b, err := io.ReadAll(bodyOf(w))
				if err != nil {
					_ = w.RespondString(500, "read: "+err.Error())
					return
				}
				_ = w.RespondString(200, string(b))
			}})
			c := dial(t, addr)
			fails := 0
			const n = 10
			for i := 0; i < n; i++ {
				c.send("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
				line, err := c.br.ReadString('\n')
				if err != nil {
					t.Fatalf("no interim: %v", err)
				}
				if strings.HasPrefix(line, "HTTP/1.1 100") {
					_, _ = c.br.ReadString('\n') // its blank line
					c.send("hello")
				} else {
					// answered at once (the read failed before the 100): the final answer
					for l := ""; l != "\r\n"; l, _ = c.br.ReadString('\n') {
					}
					fails++
					c = dial(t, addr)
					continue
				}
				resp, body := c.read("POST")
				if resp.StatusCode != 200 || body != "hello" {
					fails++
					c = dial(t, addr)
				}
			}
			if mode == 0 && fails != 0 {
				t.Fatalf("%d of %d reads after a hand-off failed", fails, n)
			}
			if mode != 0 && fails == 0 {
				t.Fatalf("negative arm: every read after a hand-off succeeded")
			}
		})
	}
}

type bodyFunc func([]byte) (int, error)

func (f bodyFunc) Read(p []byte) (int, error) { return f(p) }

func bodyOf(w *ResponseWriter) io.Reader { return bodyFunc(w.ReadBody) }
