package weir

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func TestNativeViews(t *testing.T) {
	type seen struct {
		method, target, path, query, host, accept, third string
		n, minor                                         int
		keep                                             bool
		peer                                             *net.TCPAddr
	}
	got := make(chan seen, 1)
	_, addr := start(t, Config{PeerAddrs: true, Handler: func(r *Request, w *ResponseWriter) {
		n, v := r.HeaderAt(2)
		got <- seen{
			// Clone: the views die with the answer.
			method: strings.Clone(r.Method()), target: strings.Clone(r.Target()), path: strings.Clone(r.Path()),
			query: strings.Clone(r.Query()), host: strings.Clone(r.Host()), accept: strings.Clone(r.Header("ACCEPT")),
			third: n + "=" + v, n: r.NumHeaders(), minor: r.ProtoMinor(), keep: r.KeepAlive(), peer: r.RemoteAddr(),
		}
		if err := w.AddHeader("X-Test", "yes"); err != nil {
			t.Errorf("AddHeader: %v", err)
		}
		_ = w.RespondString(201, "made")
	}})
	c := dial(t, addr)
	c.send("GET /a/b?x=1&y=2 HTTP/1.1\r\nHost: example.test\r\nAccept: text/plain\r\nX-Third: three\r\n\r\n")
	resp, body := c.read("GET")
	if resp.StatusCode != 201 || body != "made" || resp.Header.Get("X-Test") != "yes" {
		t.Fatalf("answer = %d %q %v", resp.StatusCode, body, resp.Header)
	}
	if resp.ContentLength != 4 || resp.Header.Get("Date") == "" {
		t.Errorf("weir's framing missing: CL=%d Date=%q", resp.ContentLength, resp.Header.Get("Date"))
	}
	s := <-got
	want := seen{method: "GET", target: "/a/b?x=1&y=2", path: "/a/b", query: "x=1&y=2", host: "example.test",
		accept: "text/plain", third: "X-Third=three", n: 3, minor: 1, keep: true}
	if s.peer == nil || !s.peer.IP.IsLoopback() || s.peer.Port == 0 {
		t.Errorf("peer = %v, want 127.0.0.1:port", s.peer)
	}
	s.peer = nil
	if s != want {
		t.Errorf("views = %+v\nwant    %+v", s, want)
	}
}

func TestNativeAsyncAndInline(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(fmt.Sprintf("async=%v", async), func(t *testing.T) {
			_, addr := start(t, Config{Async: async, Handler: hello})
			c := dial(t, addr)
			for i := 0; i < 50; i++ {
				c.send(get("/"))
				resp, body := c.read("GET")
				if resp.StatusCode != 200 || body != "Hello, World!" || resp.Header.Get("Content-Type") != "text/plain" {
					t.Fatalf("answer %d = %d %q", i, resp.StatusCode, body)
				}
			}
		})
	}
}

// Async handlers finish in reverse order; answers must leave in request order.
func TestPipeliningOrderAsync(t *testing.T) {
	const n = 8
	_, addr := start(t, Config{Async: true, Workers: 1, Handler: func(r *Request, w *ResponseWriter) {
		var i int
		fmt.Sscanf(r.Path(), "/%d", &i)
		time.Sleep(time.Duration(n-i) * 5 * time.Millisecond)
		_ = w.RespondString(200, r.Path())
	}})
	c := dial(t, addr)
	var all strings.Builder
	for i := 0; i < n; i++ {
		all.WriteString(get(fmt.Sprintf("/%d", i)))
	}
	c.send(all.String())
	for i := 0; i < n; i++ {
		_, body := c.read("GET")
		if want := fmt.Sprintf("/%d", i); body != want {
			t.Fatalf("answer %d = %q, want %q", i, body, want)
		}
	}
}

func TestPipeliningInlineBatch(t *testing.T) {
	e, addr := start(t, Config{Workers: 1, Handler: func(r *Request, w *ResponseWriter) {
		_ = w.RespondString(200, r.Path())
	}})
	c := dial(t, addr)
	const n = 32
	var all strings.Builder
	for i := 0; i < n; i++ {
		all.WriteString(get(fmt.Sprintf("/%d", i)))
	}
	c.send(all.String())
	for i := 0; i < n; i++ {
		if _, body := c.read("GET"); body != fmt.Sprintf("/%d", i) {
			t.Fatalf("answer %d = %q", i, body)
		}
	}
	m := e.Metrics()
	if m.Exchanges != n || m.DirectResponds != 0 {
		t.Errorf("exchanges=%d direct=%d, want %d and 0", m.Exchanges, m.DirectResponds, n)
	}
	// One burst of pipelined requests arrives in few reads: far fewer polls than requests.
	if m.Polls >= n {
		t.Errorf("polls = %d for %d pipelined requests: answers are not batched", m.Polls, n)
	}
}

func TestLargeBodies(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(fmt.Sprintf("async=%v", async), func(t *testing.T) {
			_, addr := start(t, Config{Async: async, MaxBody: 4 << 20, Handler: func(r *Request, w *ResponseWriter) {
				if r.Path() == "/big" {
					_ = w.Respond(200, bytes.Repeat([]byte("0123456789abcdef"), 1<<17)) // 2 MiB
					return
				}
				_ = w.Respond(200, r.Body()) // echo: the body view crosses back as the answer
			}})
			c := dial(t, addr)
			for _, size := range []int{0, 1, 1000, 32 << 10, 32<<10 + 1, 600 << 10, 3 << 20} {
				b := bytes.Repeat([]byte("x"), size)
				for i := 0; i < size; i += 997 {
					b[i] = 'y'
				}
				body := string(b)
				c.send(post("/echo", body))
				resp, got := c.read("POST")
				if resp.StatusCode != 200 || got != body {
					t.Fatalf("echo of %d bytes: status %d, %d bytes back, equal=%v", size, resp.StatusCode, len(got), got == body)
				}
			}
			c.send(get("/big"))
			if _, got := c.read("GET"); got != strings.Repeat("0123456789abcdef", 1<<17) {
				t.Fatalf("big answer: %d bytes", len(got))
			}
		})
	}
}

func TestMetrics(t *testing.T) {
	e, addr := start(t, Config{Handler: hello})
	c := dial(t, addr)
	const n = 20
	for i := 0; i < n; i++ {
		c.send(get("/"))
		c.read("GET")
	}
	m := e.Metrics()
	if m.Workers != 2 || m.Accepted < 1 || m.Requests < n || m.Exchanges != n || m.Polls == 0 {
		t.Errorf("metrics = %+v", m)
	}
	waitFor(t, "responses counted", func() bool { return e.Metrics().Responses >= n })
	if m.BytesIn == 0 || m.BytesOut == 0 || m.ConnectionsOpen != 1 {
		t.Errorf("bytes in/out %d/%d, open %d", m.BytesIn, m.BytesOut, m.ConnectionsOpen)
	}
	if m.Panics != 0 || m.Unanswered != 0 || m.Gone != 0 || m.Refused != 0 {
		t.Errorf("failures counted on a clean run: %+v", m)
	}
	if want := map[Backend]string{BackendEpoll: "epoll", BackendURing: "io_uring"}[testBackend()]; e.Type() != testBackend() || e.Type().String() != want {
		t.Errorf("Type = %v", e.Type())
	}
}

func TestPanicAndUnansweredBecome500(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(fmt.Sprintf("async=%v", async), func(t *testing.T) {
			e, addr := start(t, Config{Async: async, Handler: func(r *Request, w *ResponseWriter) {
				switch r.Path() {
				case "/panic":
					_ = w.AddHeader("X-Half", "done")
					panic("boom")
				case "/forget":
					return
				}
				_ = w.RespondString(200, "ok")
			}})
			for _, path := range []string{"/panic", "/forget"} {
				c := dial(t, addr)
				c.send(get(path))
				resp, _ := c.read("GET")
				if resp.StatusCode != 500 || !resp.Close || resp.Header.Get("X-Half") != "" {
					t.Fatalf("%s: status %d close %v header %v", path, resp.StatusCode, resp.Close, resp.Header)
				}
			}
			c := dial(t, addr)
			c.send(get("/"))
			if resp, _ := c.read("GET"); resp.StatusCode != 200 {
				t.Fatalf("after panic: %d", resp.StatusCode)
			}
			m := e.Metrics()
			if m.Panics != 1 || m.Unanswered != 1 {
				t.Errorf("panics=%d unanswered=%d, want 1 and 1", m.Panics, m.Unanswered)
			}
		})
	}
}

func TestResponseChecks(t *testing.T) {
	errs := make(chan []error, 2)
	_, addr := start(t, Config{Handler: func(r *Request, w *ResponseWriter) {
		errs <- []error{
			w.AddHeader("Content-Length", "3"), w.AddHeader("connection", "close"), w.AddHeader("Date", "x"),
			w.AddHeader("Transfer-Encoding", "chunked"), w.AddHeader("Bad Name", "x"), w.AddHeader("X", "a\r\nB: c"),
			w.RespondString(99, ""), w.RespondString(1000, ""),
		}
		_ = w.RespondString(200, "ok")
		errs <- []error{w.RespondString(200, "again"), w.AddHeader("X", "y")}
	}})
	c := dial(t, addr)
	c.send(get("/"))
	if resp, body := c.read("GET"); resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("answer %d %q", resp.StatusCode, body)
	}
	want := []error{ErrReservedHeader, ErrReservedHeader, ErrReservedHeader, ErrReservedHeader, ErrBadHeader,
		ErrBadHeader, ErrBadStatus, ErrBadStatus}
	for i, err := range <-errs {
		if err != want[i] {
			t.Errorf("check %d = %v, want %v", i, err, want[i])
		}
	}
	for i, err := range <-errs {
		if err != ErrAnswered {
			t.Errorf("after answer %d = %v, want ErrAnswered", i, err)
		}
	}
}

func TestSetClose(t *testing.T) {
	_, addr := start(t, Config{Handler: func(r *Request, w *ResponseWriter) {
		w.SetClose()
		_ = w.RespondString(200, "bye")
	}})
	c := dial(t, addr)
	c.send(get("/"))
	resp, body := c.read("GET")
	if !resp.Close || body != "bye" {
		t.Fatalf("close=%v body=%q", resp.Close, body)
	}
	if _, err := c.br.ReadByte(); err == nil {
		t.Fatal("connection still open after SetClose")
	}
}

// Answering an exchange whose connection was reset either reports ErrGone
// (weir saw the reset first) or is accepted and dropped at write time; either
// way nothing crashes and the connection and its exchange are released.
func TestAnswerAfterConnectionDied(t *testing.T) {
	gone := make(chan error, 1)
	var ep atomic.Pointer[Engine]
	e, addr := start(t, Config{Async: true, Handler: func(r *Request, w *ResponseWriter) {
		e := ep.Load()
		if r.Path() != "/slow" {
			_ = w.RespondString(200, "ok")
			return
		}
		deadline := time.Now().Add(time.Second)
		for e.Metrics().ConnectionsOpen != 0 && time.Now().Before(deadline) {
			time.Sleep(2 * time.Millisecond)
		}
		gone <- w.Respond(200, bytes.Repeat([]byte("x"), 1<<20))
	}})
	ep.Store(e)
	c := dial(t, addr)
	c.send(get("/slow"))
	waitFor(t, "the request to arrive", func() bool { return e.Metrics().Exchanges == 1 })
	c.c.(*net.TCPConn).SetLinger(0)
	c.c.Close()
	err := <-gone
	t.Logf("answer after the reset: %v", err)
	if err != nil && !errors.Is(err, ErrGone) {
		t.Fatalf("answer on a dead connection = %v, want nil or ErrGone", err)
	}
	if g := e.Metrics().Gone; (err == nil) != (g == 0) {
		t.Errorf("Gone = %d after answer error %v", g, err)
	}
	waitFor(t, "the dead connection to be released", func() bool { return e.Metrics().ConnectionsOpen == 0 })
	c2 := dial(t, addr)
	c2.send(get("/"))
	if _, body := c2.read("GET"); body != "ok" {
		t.Fatalf("after: %q", body)
	}
}

func TestShutdownWithRequestsInFlight(t *testing.T) {
	release := make(chan struct{})
	var started atomic.Int32
	e := newEngine(t, Config{Addr: "127.0.0.1:0", Workers: 2, Async: true, Handler: func(r *Request, w *ResponseWriter) {
		started.Add(1)
		<-release
		_ = w.RespondString(200, "finished")
	}})
	listened := make(chan error, 1)
	go func() { listened <- e.Listen(context.Background()) }()
	waitFor(t, "bind", func() bool { return e.Addr() != nil })
	addr := e.Addr().String()
	const n = 4
	bodies := make(chan string, n)
	for i := 0; i < n; i++ {
		go func() {
			c := dial(t, addr)
			c.send(get("/"))
			resp, err := readResponse(c)
			if err != nil {
				bodies <- "error: " + err.Error()
				return
			}
			bodies <- resp
		}()
	}
	waitFor(t, "handlers to start", func() bool { return started.Load() == n })
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shut <- e.Shutdown(ctx)
	}()
	time.Sleep(50 * time.Millisecond)
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v with handlers still running", err)
	default:
	}
	close(release)
	for i := 0; i < n; i++ {
		if b := <-bodies; b != "finished" {
			t.Errorf("in-flight request got %q", b)
		}
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-listened; err != nil {
		t.Fatalf("Listen: %v", err)
	}
	<-e.Done()
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Error("still accepting after Shutdown")
	}
	if err := e.Listen(context.Background()); !errors.Is(err, ErrShutdown) {
		t.Errorf("Listen after Shutdown = %v", err)
	}
	_ = e.Metrics() // safe after destroy
}

// A Shutdown context without a deadline, cancelled while a handler is stuck:
// Shutdown returns ctx's error at once and what was left is closed; an idle
// keep-alive connection was closed at the start. The arm without the cancel
// is the wait TestShutdownWithRequestsInFlight shows: the grace has no bound.
func TestShutdownCancelledClosesWhatIsLeft(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var started atomic.Int32
	e := newEngine(t, Config{Addr: "127.0.0.1:0", Workers: 2, Async: true, Handler: func(r *Request, w *ResponseWriter) {
		if r.Path() == "/stuck" {
			started.Add(1)
			<-release
		}
		_ = w.RespondString(200, "ok")
	}})
	go func() { _ = e.Listen(context.Background()) }()
	waitFor(t, "bind", func() bool { return e.Addr() != nil })
	addr := e.Addr().String()
	idle := dial(t, addr)
	idle.send(get("/"))
	if _, err := readResponse(idle); err != nil {
		t.Fatal(err)
	}
	stuck := dial(t, addr)
	stuck.send(get("/stuck"))
	waitFor(t, "the stuck handler", func() bool { return started.Load() == 1 })
	ctx, cancel := context.WithCancel(context.Background())
	shut := make(chan error, 1)
	go func() { shut <- e.Shutdown(ctx) }()
	if _, err := idle.br.ReadByte(); err != io.EOF { // idle: closed at once
		t.Errorf("idle keep-alive connection: %v, want EOF", err)
	}
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v before its context ended", err)
	default:
	}
	cancel()
	select {
	case err := <-shut:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Shutdown = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown did not return after its context was cancelled")
	}
	_ = stuck.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := stuck.br.ReadByte(); err != io.EOF {
		t.Errorf("the stuck request's connection: %v, want EOF (closed)", err)
	}
}

// Cancelling Listen's context shuts down gracefully: the requests in flight
// keep their contexts (they derive from Listen's without its cancellation)
// and finish.
func TestListenCancelLetsRequestsFinish(t *testing.T) {
	inside := make(chan struct{})
	ctxErr := make(chan error, 1)
	e := newEngine(t, Config{Addr: "127.0.0.1:0", Workers: 2, HTTP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(inside)
		time.Sleep(300 * time.Millisecond)
		ctxErr <- r.Context().Err()
		io.WriteString(w, "finished")
	})})
	lctx, lcancel := context.WithCancel(context.Background())
	listened := make(chan error, 1)
	go func() { listened <- e.Listen(lctx) }()
	waitFor(t, "bind", func() bool { return e.Addr() != nil })
	c := dial(t, e.Addr().String())
	c.send(get("/"))
	<-inside
	lcancel()
	body, err := readResponse(c)
	if err != nil || body != "finished" {
		t.Errorf("in flight at the cancel: %q, %v", body, err)
	}
	if err := <-ctxErr; err != nil {
		t.Errorf("the request's context ended with Listen's: %v", err)
	}
	if err := <-listened; err != nil {
		t.Errorf("Listen: %v", err)
	}
}

func readResponse(c *client) (string, error) {
	resp, err := httpReadResponse(c.br)
	return resp, err
}

func TestManyGoroutinesAnswering(t *testing.T) {
	e, addr := start(t, Config{Async: true, Handler: func(r *Request, w *ResponseWriter) {
		// The answer comes from yet another goroutine than the handler's.
		path := strings.Clone(r.Path())
		done := make(chan struct{})
		go func() {
			_ = w.AddHeader("X-Path", path)
			_ = w.RespondString(200, path+path)
			close(done)
		}()
		<-done
	}})
	const conns, each = 64, 25
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for i := 0; i < conns; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c := dial(t, addr)
			for j := 0; j < each; j++ {
				// Two at a time, pipelined.
				p1, p2 := fmt.Sprintf("/%d/%d", i, j), fmt.Sprintf("/%d/%d/b", i, j)
				c.send(get(p1) + get(p2))
				for _, p := range []string{p1, p2} {
					resp, body := c.read("GET")
					if body != p+p || resp.Header.Get("X-Path") != p {
						errs <- fmt.Errorf("conn %d: got %q for %s", i, body, p)
						return
					}
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if m := e.Metrics(); m.Exchanges != conns*each*2 {
		t.Errorf("exchanges = %d", m.Exchanges)
	}
}

func TestConfigErrors(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no handler":    {},
		"two handlers":  {Handler: hello, HTTP: nil},
		"name host":     {Addr: "localhost:0", Handler: hello},
		"bad port":      {Addr: "127.0.0.1:99999", Handler: hello},
		"bad backend":   {Backend: 7, Handler: hello},
		"inline native": {Inline: true, Handler: hello},
		"inline async":  {Inline: true, Async: true, HTTP: http.NotFoundHandler()},
	} {
		if name == "two handlers" {
			continue
		}
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
	e := newEngine(t, Config{Handler: hello})
	if err := e.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown of a never-listened engine: %v", err)
	}
}

func TestAddrInUse(t *testing.T) {
	_, addr := start(t, Config{Handler: hello})
	e := newEngine(t, Config{Addr: addr, Handler: hello})
	defer e.Shutdown(context.Background())
	// SO_REUSEPORT lets a second engine of the same user bind the port; either
	// answer is fine, but a failure must be a weir error carrying the errno.
	if err := e.start(); err != nil {
		var we *Error
		if !errors.As(err, &we) {
			t.Fatalf("listen error %T %v", err, err)
		}
	}
}

// TestPauseAccept: a client that connected and has said nothing is invisible
// to accept (TCP_DEFER_ACCEPT, on by default) until the kernel promotes it
// about a second after its SYN; a pause that closed the listeners before then
// would reset it. The linger keeps it: the silent client speaks only after
// PauseAccept returned and is still served. New dials are refused until
// ResumeAccept reopens the listeners. The driven workers act on the pause
// when their goroutines poll.
func TestPauseAccept(t *testing.T) {
	e, addr := start(t, Config{Handler: hello})
	silent := dial(t, addr)
	time.Sleep(200 * time.Millisecond)
	t0 := time.Now()
	if err := e.PauseAccept(); err != nil {
		t.Fatalf("PauseAccept: %v", err)
	}
	if d := time.Since(t0); d < time.Second {
		t.Errorf("PauseAccept returned after %v; the default linger is 1.5s", d)
	}
	if m := e.Metrics(); m.PauseLingers < 1 || m.PauseCloses < 1 || m.PauseDeferClears != m.PauseLingers {
		t.Errorf("pause metrics: lingers %d, closes %d, clears %d", m.PauseLingers, m.PauseCloses, m.PauseDeferClears)
	}
	silent.send(get("/"))
	if resp, body := silent.read("GET"); resp.StatusCode != 200 || body != "Hello, World!" {
		t.Fatalf("silent client after the pause: %d %q", resp.StatusCode, body)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("dial after the pause: %v, want ECONNREFUSED", err)
	}
	if err := e.BeginPauseAccept(); err != nil {
		t.Errorf("BeginPauseAccept on closed listeners: %v", err)
	}
	if err := e.ResumeAccept(); err != nil {
		t.Fatalf("ResumeAccept: %v", err)
	}
	var c net.Conn
	waitFor(t, "a listener reopened by ResumeAccept", func() bool {
		var err error
		c, err = net.DialTimeout("tcp", addr, time.Second)
		return err == nil
	})
	c.Close()
	again := dial(t, addr)
	again.send(get("/"))
	if resp, _ := again.read("GET"); resp.StatusCode != 200 {
		t.Fatalf("after ResumeAccept: %d", resp.StatusCode)
	}
}

// TestPauseAcceptResumed: ResumeAccept during the linger releases a waiting
// PauseAccept at once with ECANCELED, and the listeners stay open.
func TestPauseAcceptResumed(t *testing.T) {
	e, addr := start(t, Config{Handler: hello})
	done := make(chan error, 1)
	go func() { done <- e.PauseAccept() }()
	time.Sleep(300 * time.Millisecond)
	if err := e.ResumeAccept(); err != nil {
		t.Fatalf("ResumeAccept: %v", err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, syscall.ECANCELED) {
			t.Fatalf("PauseAccept after a resume: %v, want ECANCELED", err)
		}
	case <-time.After(time.Second):
		t.Fatal("PauseAccept still waiting after ResumeAccept")
	}
	time.Sleep(1500 * time.Millisecond) // past the linger's deadline
	c := dial(t, addr)
	c.send(get("/"))
	if resp, _ := c.read("GET"); resp.StatusCode != 200 {
		t.Fatalf("after the resumed pause: %d", resp.StatusCode)
	}
}
