package weir

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Config.Listener: weir serves the listener's own socket (no rebinding: the
// address is the listener's, and a client that connected before Listen is
// served), and the Go listener is closed once weir holds the socket.
func TestListenerAdopted(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	early := dial(t, ln.Addr().String()) // queued on the socket before weir has it
	early.send(get("/early"))
	e, addr := start(t, Config{Workers: 2, Listener: ln, Handler: hello})
	if addr != ln.Addr().String() {
		t.Errorf("Addr = %s, the listener's is %s", addr, ln.Addr())
	}
	if _, body := early.read("GET"); body != "Hello, World!" {
		t.Errorf("the client queued before Listen: %q", body)
	}
	c := dial(t, addr)
	c.send(get("/late"))
	if _, body := c.read("GET"); body != "Hello, World!" {
		t.Errorf("after Listen: %q", body)
	}
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("the Go listener after Listen: Accept = %v, want net.ErrClosed (weir took it over)", err)
	}
	_ = e
}

type fakeListener struct{ net.Listener }

// What weir cannot serve is refused with a clear error that says why,
// before weir sees anything: a wrapped listener (its Accept would be
// bypassed), a Unix socket (weir serves TCP), for native and net/http
// handlers alike; a wrapped listener's own socket is still refused by weir
// (-EINVAL) if it gets that far. The TCP listener underneath a wrapper is
// served (TestListenerAdopted).
func TestListenerRefused(t *testing.T) {
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	for _, cfg := range []Config{{Handler: hello}, {HTTP: http.NotFoundHandler()}} {
		cfg.Listener = fakeListener{tl}
		e := newEngine(t, cfg)
		if err := e.Listen(context.Background()); err == nil || !strings.Contains(err.Error(), "bypass its Accept") || e.Addr() != nil {
			t.Errorf("a wrapped listener: Listen = %v", err)
		}
		_ = e.Shutdown(context.Background())

		ul, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Listener = ul
		e = newEngine(t, cfg)
		if err := e.Listen(context.Background()); err == nil || !strings.Contains(err.Error(), "unix socket") ||
			!strings.Contains(err.Error(), "TCP sockets only") {
			t.Errorf("a Unix listener: Listen = %v", err)
		}
		_ = e.Shutdown(context.Background())
		ul.Close()
	}
	// What the Go check lets through, weir checks again: a Unix socket
	// named tcp by a wrapper that hands its socket over.
	ul, err := net.Listen("unix", filepath.Join(t.TempDir(), "s2"))
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	e := newEngine(t, Config{Listener: tcpNamed{ul.(*net.UnixListener)}, Handler: hello})
	err = e.Listen(context.Background())
	var we *Error
	if !errors.As(err, &we) || we.Op != "weir_engine_listen_fds" || we.Code != -int(syscall.EINVAL) {
		t.Errorf("a Unix socket past the Go check: Listen = %v, want weir_engine_listen_fds -EINVAL", err)
	}
	_ = e.Shutdown(context.Background())
}

// tcpNamed says its Unix socket is TCP (and hands it over): weir's own check.
type tcpNamed struct{ *net.UnixListener }

func (tcpNamed) Addr() net.Addr { return &net.TCPAddr{} }

// Listen returns once a shutdown has stopped the workers, not when the last
// handler returns (net/http's Serve does not wait for its handlers either):
// a handler stuck past a forced Shutdown does not hold Listen. The mutant
// that waits for the handlers (Listen on e.done) fails here: Listen would
// return only at the release.
func TestListenReturnsWhenWorkersStop(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{})
	e := newEngine(t, Config{Addr: "127.0.0.1:0", Workers: 1, Async: true, Handler: func(r *Request, w *ResponseWriter) {
		close(entered)
		<-release
		_ = w.RespondString(200, "late")
	}})
	listened := make(chan error, 1)
	go func() { listened <- e.Listen(context.Background()) }()
	waitFor(t, "bind", func() bool { return e.Addr() != nil })
	c := dial(t, e.Addr().String())
	c.send(get("/stuck"))
	<-entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // forced at once: the stuck request's connection closes
	shut := make(chan error, 1)
	go func() { shut <- e.Shutdown(ctx) }()
	select {
	case err := <-listened:
		if err != nil {
			t.Errorf("Listen = %v", err)
		}
	case <-time.After(5 * time.Second):
		close(release)
		t.Fatal("Listen waited for a handler after the workers stopped")
	}
	close(release)
	select {
	case <-shut:
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown did not return after the handler did")
	}
}
