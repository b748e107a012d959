package weirceleris

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goceleris/celeris"
	weir "github.com/weir-http/weir/go-binding"
)

// The celeris Config fields weir honours, each against a server on weir,
// each with the arm that shows what the field changes.

func onWeir(t *testing.T, cfg celeris.Config, routes func(*celeris.Server)) string {
	t.Helper()
	cfg.Addr, cfg.Protocol, cfg.Engine = "127.0.0.1:0", celeris.HTTP1, testEngine()
	if cfg.Logger == nil {
		cfg.Logger = quietLog()
	}
	// One weir worker (celeris's own minimum is 2): base's, as Workers is unset.
	cfg.EngineFactory = Factory(weir.Config{Backend: testBackend(), Workers: 1})
	srv := celeris.New(cfg)
	srv.GET("/", func(c *celeris.Context) error { return c.String(200, "root") })
	if routes != nil {
		routes(srv)
	}
	return strings.TrimPrefix(run(t, srv), "http://")
}

func dial(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return c, bufio.NewReader(c)
}

func send(t *testing.T, c net.Conn, s string) {
	t.Helper()
	if _, err := io.WriteString(c, s); err != nil {
		t.Fatal(err)
	}
}

func reply1(t *testing.T, br *bufio.Reader) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// DisableKeepAlive: each answer says Connection: close and the connection
// ends after it. Off (the control arm): a second request on it is served.
func TestServedDisableKeepAlive(t *testing.T) {
	for _, off := range []bool{true, false} {
		c, br := dial(t, onWeir(t, celeris.Config{DisableKeepAlive: off}, nil))
		send(t, c, "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
		resp, _ := reply1(t, br)
		if resp.Close != off {
			t.Fatalf("DisableKeepAlive %v: answer's close %v", off, resp.Close)
		}
		send(t, c, "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
		_, err := http.ReadResponse(br, nil)
		if off && err == nil {
			t.Fatal("DisableKeepAlive: a second request on the connection was served")
		}
		if !off && err != nil {
			t.Fatalf("keep-alive: second request: %v", err)
		}
	}
}

// OnExpectContinue decides before the body is read: false answers 417 and
// sends no 100 Continue; true sends the 100, then the body reaches the
// route. Without it (the control arm) every such request gets its 100, as
// celeris documents.
func TestServedOnExpectContinue(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	decide := func(method, path string, headers [][2]string) bool {
		mu.Lock()
		asked = append(asked, method+" "+path)
		mu.Unlock()
		return path != "/no"
	}
	routes := func(s *celeris.Server) {
		for _, p := range []string{"/no", "/yes"} {
			s.POST(p, func(c *celeris.Context) error { return c.String(200, "got %s", c.Body()) })
		}
	}
	head := func(path string) string {
		return "POST " + path + " HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"
	}
	addr := onWeir(t, celeris.Config{OnExpectContinue: decide}, routes)
	c, br := dial(t, addr)
	send(t, c, head("/no"))
	if resp, _ := reply1(t, br); resp.StatusCode != 417 {
		t.Fatalf("refused: %d, want 417 with no 100 before it", resp.StatusCode)
	}
	c, br = dial(t, addr)
	send(t, c, head("/yes"))
	if resp, b := reply1(t, br); resp.StatusCode != 100 {
		t.Fatalf("accepted: first answer %d %q, want 100 Continue", resp.StatusCode, b)
	}
	send(t, c, "hello")
	if resp, body := reply1(t, br); resp.StatusCode != 200 || body != "got hello" {
		t.Fatalf("accepted: %d %q", resp.StatusCode, body)
	}
	mu.Lock()
	if strings.Join(asked, ",") != "POST /no,POST /yes" {
		t.Errorf("OnExpectContinue asked %v", asked)
	}
	mu.Unlock()

	c, br = dial(t, onWeir(t, celeris.Config{}, routes))
	send(t, c, head("/no"))
	if resp, _ := reply1(t, br); resp.StatusCode != 100 {
		t.Fatalf("no OnExpectContinue: first answer %d, want 100 Continue", resp.StatusCode)
	}
	send(t, c, "hello")
	if resp, body := reply1(t, br); resp.StatusCode != 200 || body != "got hello" {
		t.Fatalf("no OnExpectContinue: %d %q", resp.StatusCode, body)
	}
}

// MaxHeaderBytes is weir's header section limit: past it 431. celeris's
// default (16 MiB) is weir's too (the control arm: weir's own default,
// 16 KiB, would refuse the same request).
func TestServedMaxHeaderBytes(t *testing.T) {
	req := "GET / HTTP/1.1\r\nHost: h\r\nX-Big: " + strings.Repeat("v", 20000) + "\r\n\r\n"
	for _, tc := range []struct {
		limit, want int
	}{{4096, 431}, {0, 200}} {
		c, br := dial(t, onWeir(t, celeris.Config{MaxHeaderBytes: tc.limit}, nil))
		send(t, c, req)
		if resp, _ := reply1(t, br); resp.StatusCode != tc.want {
			t.Errorf("MaxHeaderBytes %d: %d, want %d", tc.limit, resp.StatusCode, tc.want)
		}
	}
}

// ReadHeaderTimeout is weir's header deadline: a head that stops coming is
// closed in about that time (judged in units of it, T); celeris's default
// (10s, the control arm) still holds the connection at 4T.
func TestServedReadHeaderTimeout(t *testing.T) {
	const T = 300 * time.Millisecond
	for _, set := range []bool{true, false} {
		cfg := celeris.Config{}
		if set {
			cfg.ReadHeaderTimeout = T
		}
		c, _ := dial(t, onWeir(t, cfg, nil))
		send(t, c, "GET / HTTP/1.1\r\nHost: h\r\n")
		start := time.Now()
		_ = c.SetReadDeadline(start.Add(4 * T))
		_, err := c.Read(make([]byte, 1))
		took := time.Since(start)
		var ne net.Error
		timedOut := errorsAs(err, &ne) && ne.Timeout()
		if set && (timedOut || took > 4*T) {
			t.Fatalf("ReadHeaderTimeout %v: connection still open after %v", T, took)
		}
		if !set && !timedOut {
			t.Fatalf("default ReadHeaderTimeout: connection ended after %v (%v)", took, err)
		}
	}
}

// Logger receives the engine's records.
func TestServedLogger(t *testing.T) {
	rec := &records{}
	onWeir(t, celeris.Config{Logger: slog.New(rec)}, nil)
	if !rec.logged("weir engine listening") {
		t.Fatalf("no listening record in %v", rec.msgs())
	}
}

// A route marked Async may block without stalling the worker: with one
// worker, a sync route answers while the async one waits. The control arm
// marks nothing: the blocked inline handler holds the worker, and the sync
// route waits for it.
func TestServedPerRouteAsync(t *testing.T) {
	for _, marked := range []bool{true, false} {
		entered, release := make(chan struct{}, 1), make(chan struct{})
		addr := onWeir(t, celeris.Config{}, func(s *celeris.Server) {
			r := s.GET("/block", func(c *celeris.Context) error {
				entered <- struct{}{}
				<-release
				return c.String(200, "blocked")
			})
			if marked {
				r.Async()
			}
			s.GET("/fast", func(c *celeris.Context) error { return c.String(200, "fast") })
		})
		done := make(chan error, 1)
		go func() {
			resp, err := http.Get("http://" + addr + "/block")
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
		<-entered
		client := &http.Client{Timeout: 1500 * time.Millisecond}
		resp, err := client.Get("http://" + addr + "/fast")
		if err == nil {
			resp.Body.Close()
		}
		close(release)
		if marked && err != nil {
			t.Fatalf("async route blocking: sync route failed: %v", err)
		}
		if !marked && err == nil {
			t.Fatal("control arm: the sync route was answered while an inline handler held the only worker")
		}
		if err := <-done; err != nil {
			t.Fatalf("blocked route: %v", err)
		}
	}
}

type records struct {
	mu sync.Mutex
	m  []string
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	r.m = append(r.m, rec.Message)
	r.mu.Unlock()
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }
func (r *records) msgs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.m...)
}
func (r *records) has(m string) bool {
	for _, x := range r.msgs() {
		if x == m {
			return true
		}
	}
	return false
}

// logged is has, waited for: the listening record is written by OnListen,
// which runs once the workers are up, after the address the test waited for
// is known (seen missing once on a loaded CI run), so a record due by then
// gets 10 s to arrive.
func (r *records) logged(m string) bool {
	for deadline := time.Now().Add(10 * time.Second); !r.has(m); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

func errorsAs(err error, target *net.Error) bool {
	ne, ok := err.(net.Error)
	if ok {
		*target = ne
	}
	return ok
}
