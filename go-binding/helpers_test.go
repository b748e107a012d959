package weir

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testBackend is the backend the tests run on: WEIR_TEST_BACKEND, a name in
// the library's list (tests/scripts/go_binding.sh runs the suite once per
// backend), else epoll. A name no backend has stops the run: as epoll it
// would pass under another backend's label (tests/scripts/runner_backends.sh).
func testBackend() Backend {
	name := os.Getenv("WEIR_TEST_BACKEND")
	if name == "" {
		return BackendEpoll
	}
	b, err := BackendByName(name)
	if err != nil {
		panic("WEIR_TEST_BACKEND: " + err.Error())
	}
	return b
}

// newEngine is New on the test backend; a backend this kernel refuses skips
// the test.
func newEngine(t testing.TB, cfg Config) *Engine {
	t.Helper()
	if cfg.Backend == BackendEpoll {
		cfg.Backend = testBackend()
	}
	e, err := New(cfg)
	if errors.Is(err, ErrUnavailable) {
		t.Skipf("%v: %v", cfg.Backend, err)
	}
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return e
}

// start runs an engine on 127.0.0.1 (ephemeral port) and shuts it down at
// the end of the test, checking that Listen returned cleanly.
func start(t testing.TB, cfg Config) (*Engine, string) {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.Workers == 0 {
		cfg.Workers = 2
	}
	e := newEngine(t, cfg)
	if e.Addr() != nil {
		t.Fatalf("Addr before Listen = %v, want nil", e.Addr())
	}
	ctx, cancel := context.WithCancel(context.Background())
	listened := make(chan error, 1)
	go func() { listened <- e.Listen(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for e.Addr() == nil {
		select {
		case err := <-listened:
			cancel()
			t.Fatalf("Listen: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatal("engine did not bind within 5s")
		}
		time.Sleep(time.Millisecond)
	}
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		if err := e.Shutdown(sctx); err != nil && !errors.Is(err, syscallETIMEDOUT) {
			t.Errorf("Shutdown: %v", err)
		}
		cancel()
		select {
		case err := <-listened:
			if err != nil {
				t.Errorf("Listen returned %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Listen did not return after Shutdown")
		}
	})
	return e, e.Addr().String()
}

// client is one raw keep-alive connection: requests out as bytes, answers
// read with net/http's parser, so pipelining is under the test's control.
type client struct {
	t  testing.TB
	c  net.Conn
	br *bufio.Reader
}

func dial(t testing.TB, addr string) *client {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	t.Cleanup(func() { c.Close() })
	return &client{t: t, c: c, br: bufio.NewReader(c)}
}

func (c *client) send(raw string) {
	c.t.Helper()
	if _, err := io.WriteString(c.c, raw); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// read reads one answer (to a request of method) and its whole body.
func (c *client) read(method string) (*http.Response, string) {
	c.t.Helper()
	resp, err := http.ReadResponse(c.br, &http.Request{Method: method})
	if err != nil {
		c.t.Fatalf("read response: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("read body: %v", err)
	}
	resp.Body.Close()
	return resp, string(b)
}

func get(path string) string {
	return "GET " + path + " HTTP/1.1\r\nHost: test\r\n\r\n"
}

func post(path, body string) string {
	return "POST " + path + " HTTP/1.1\r\nHost: test\r\nContent-Length: " + itoa(len(body)) + "\r\n\r\n" + body
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// waitFor polls cond for up to 5s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func hello(r *Request, w *ResponseWriter) {
	_ = w.AddHeader("Content-Type", "text/plain")
	_ = w.RespondString(200, "Hello, World!")
}

var _ = strings.Repeat

const syscallETIMEDOUT = syscall.ETIMEDOUT

func httpReadResponse(br *bufio.Reader) (string, error) {
	resp, err := http.ReadResponse(br, &http.Request{Method: "GET"})
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
