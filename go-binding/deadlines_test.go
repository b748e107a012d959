package weir

import (
	"net"
	"strings"
	"testing"
	"time"
)

// Config.RequestTimeout binds (issue 32): a head trickled a byte every 20 ms
// is answered 408 at the 300 ms request deadline though the header timeout
// (20 s) would not cut it; the arm, RequestTimeout < 0 (off), is still open
// and sending at 900 ms. The close is counted as request_timeout.
func TestRequestTimeoutBinds(t *testing.T) {
	handler := func(r *Request, w *ResponseWriter) { _ = w.RespondString(200, "ok") }
	for _, on := range []bool{true, false} {
		cfg := Config{Handler: handler, Workers: 1, HeaderTimeout: 20 * time.Second, BodyTimeout: 20 * time.Second}
		if on {
			cfg.RequestTimeout = 300 * time.Millisecond
		} else {
			cfg.RequestTimeout = -1
		}
		e, addr := start(t, cfg)
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		head := "GET / HTTP/1.1\r\nHost: t\r\nX-Pad: " + strings.Repeat("a", 200) + "\r\n\r\n"
		t0 := time.Now()
		got := ""
		cut := time.Duration(-1)
		buf := make([]byte, 4096)
		for i := 0; i < len(head) && time.Since(t0) < 900*time.Millisecond; i++ {
			if _, err := c.Write([]byte{head[i]}); err != nil {
				break
			}
			_ = c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
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
			if !strings.HasPrefix(got, "HTTP/1.1 408 ") || cut < 280*time.Millisecond || cut > 900*time.Millisecond {
				t.Fatalf("deadline on: got %q, cut after %v; want a 408 at ~300ms", got, cut)
			}
			if m.Closes[closeRequestTimeout] != 1 || CloseReasonName(closeRequestTimeout) != "request_timeout" {
				t.Fatalf("closes[%s] = %d, want 1", CloseReasonName(closeRequestTimeout), m.Closes[closeRequestTimeout])
			}
		} else if cut >= 0 || got != "" || m.Closes[closeRequestTimeout] != 0 {
			t.Fatalf("arm (deadline off): got %q, cut after %v; want still open at 900ms", got, cut)
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
