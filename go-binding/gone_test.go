package weir

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

// Request contexts cancelled when the client goes (gone.go, weir's
// report_gone), as net/http cancels them: the client closes while the
// handler waits on r.Context(); a forced shutdown closes the connection
// under a handler that waits. Both modes (the adapter's inline too). The
// negative arm: a native engine without Config.ReportGone never tells its
// handler (NotifyGone refuses, and the handler waits out its own bound).
func TestNetHTTPContextCancelledWhenClientGoes(t *testing.T) {
	for _, inline := range []bool{false, true} {
		ended := make(chan error, 1)
		_, addr := start(t, Config{Inline: inline, HTTP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if inline {
				w.(http.Flusher).Flush() // an inline handler that waits hands off first
			}
			select {
			case <-r.Context().Done():
				ended <- r.Context().Err()
			case <-time.After(5 * time.Second):
				ended <- errors.New("the context was never cancelled")
			}
		})})
		c := dial(t, addr)
		c.send(get("/wait"))
		time.Sleep(50 * time.Millisecond) // the handler is waiting
		c.c.Close()
		if err := recvErr(t, ended); !errors.Is(err, context.Canceled) {
			t.Fatalf("inline %v: %v", inline, err)
		}
	}
}

func TestNetHTTPForcedShutdownCancelsContexts(t *testing.T) {
	ended := make(chan error, 1)
	e := newEngine(t, Config{Addr: "127.0.0.1:0", Workers: 1, HTTP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			ended <- r.Context().Err()
		case <-time.After(5 * time.Second):
			ended <- errors.New("the context was never cancelled")
		}
	})})
	go e.Listen(context.Background())
	waitFor(t, "bind", func() bool { return e.Addr() != nil })
	c := dial(t, e.Addr().String())
	c.send(get("/wait"))
	time.Sleep(50 * time.Millisecond)
	sctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_ = e.Shutdown(sctx) // its grace runs out: the connection is closed under the handler
	if err := recvErr(t, ended); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	select {
	case <-e.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the engine was not freed after its handler returned")
	}
}

func TestNotifyGoneNeedsReportGone(t *testing.T) {
	for _, report := range []bool{true, false} {
		told := make(chan bool, 1)
		_, addr := start(t, Config{ReportGone: report, Async: true, Handler: func(r *Request, w *ResponseWriter) {
			gone := make(chan struct{})
			ok := w.NotifyGone(func() { close(gone) })
			select {
			case <-gone:
				told <- true
			case <-time.After(time.Second):
				told <- false
			}
			_ = ok
			_ = w.RespondString(200, "late")
		}})
		c := dial(t, addr)
		c.send(get("/"))
		time.Sleep(50 * time.Millisecond)
		c.c.Close()
		select {
		case got := <-told:
			if got != report {
				t.Fatalf("ReportGone %v: the handler was told %v", report, got)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the handler did not report")
		}
	}
}
