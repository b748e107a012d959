package weir

import (
	"net"
	"strings"
	"testing"
	"time"
)

// unit is 40ms, or four times the worst lateness of ten 5ms sleeps measured
// now: a loaded machine stretches every time the test judges.
func unit() time.Duration {
	worst := time.Duration(0)
	for i := 0; i < 10; i++ {
		t0 := time.Now()
		time.Sleep(5 * time.Millisecond)
		worst = max(worst, time.Since(t0)-5*time.Millisecond)
	}
	return max(40*time.Millisecond, 4*worst)
}

// Config.RequestTimeout binds (issue 32): a head trickled a byte every half
// unit is answered 408 at the 8-unit request deadline though the header
// timeout (max(20s, 40 units)) would not cut it; the arm, RequestTimeout < 0
// (off), is still open and sending at three deadlines. The close is counted
// as request_timeout.
func TestRequestTimeoutBinds(t *testing.T) {
	handler := func(r *Request, w *ResponseWriter) { _ = w.RespondString(200, "ok") }
	u := unit()
	deadline := 8 * u
	for _, on := range []bool{true, false} {
		long := max(20*time.Second, 40*u)
		cfg := Config{Handler: handler, Workers: 1, HeaderTimeout: long, BodyTimeout: long}
		if on {
			cfg.RequestTimeout = deadline
		} else {
			cfg.RequestTimeout = -1
		}
		e, addr := start(t, cfg)
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		head := "GET / HTTP/1.1\r\nHost: t\r\nX-Pad: " + strings.Repeat("a", 400) + "\r\n\r\n"
		t0 := time.Now()
		got := ""
		cut := time.Duration(-1)
		buf := make([]byte, 4096)
		for i := 0; i < len(head) && time.Since(t0) < 3*deadline; i++ {
			if _, err := c.Write([]byte{head[i]}); err != nil {
				break
			}
			_ = c.SetReadDeadline(time.Now().Add(u / 2))
			n, err := c.Read(buf)
			got += string(buf[:n])
			if err != nil && !isTimeout(err) {
				cut = time.Since(t0)
				break
			}
		}
		c.Close()
		m := e.Metrics()
		if on {
			if !strings.HasPrefix(got, "HTTP/1.1 408 ") || cut < deadline-u/4 || cut >= 2*deadline {
				t.Fatalf("deadline on: got %q, cut after %v; want a 408 at ~%v", got, cut, deadline)
			}
			if m.Closes[closeRequestTimeout] != 1 || CloseReasonName(closeRequestTimeout) != "request_timeout" {
				t.Fatalf("closes[%s] = %d, want 1", CloseReasonName(closeRequestTimeout), m.Closes[closeRequestTimeout])
			}
		} else if cut >= 0 || got != "" || m.Closes[closeRequestTimeout] != 0 {
			t.Fatalf("arm (deadline off): got %q, cut after %v; want still open at %v", got, cut, 3*deadline)
		}
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// RateWindow below 10ms is refused before the engine is made.
func TestRateWindowValidated(t *testing.T) {
	handler := func(r *Request, w *ResponseWriter) {}
	if _, err := New(Config{Handler: handler, RateWindow: time.Millisecond}); err == nil {
		t.Fatal("RateWindow 1ms accepted")
	}
	_ = closeSlowBody
	_ = closeSlowReader
}
