package weirceleris

import (
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/goceleris/celeris"
	"github.com/goceleris/celeris/engine"
	"github.com/goceleris/celeris/protocol/h2/stream"
	"github.com/goceleris/celeris/resource"
	weir "github.com/weir-http/weir/go-binding"
)

// Per-route async (route_async.go): async routes hand off, sync ones beside
// them stay inline.

// onWeirEngine is onWeir with the weir engine in hand (its metrics) and
// base as the Factory's configuration.
func onWeirEngine(t *testing.T, base weir.Config, routes func(*celeris.Server)) (string, *Engine) {
	t.Helper()
	var we *Engine
	base.Backend, base.Workers = testBackend(), 1
	factory := Factory(base)
	cfg := celeris.Config{Addr: "127.0.0.1:0", Protocol: celeris.HTTP1, Engine: testEngine(), Logger: quietLog()}
	cfg.EngineFactory = func(rc resource.Config, h stream.Handler) (engine.Engine, error) {
		e, err := factory(rc, h)
		if err == nil {
			we = e.(*Engine)
		}
		return e, err
	}
	srv := celeris.New(cfg)
	routes(srv)
	addr := run(t, srv)
	if we == nil || we.Weir() == nil {
		t.Skip("not one weir engine (adaptive pair)")
	}
	return addr, we
}

func getWant(t *testing.T, client *http.Client, url, want string) error {
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != want {
		return fmt.Errorf("%s: %d %q, want 200 %q", url, resp.StatusCode, b, want)
	}
	return nil
}

// A sync route beside an async one runs on its worker's goroutine: its
// answers ride the worker's cycle (no answer crosses from another thread:
// neither posted nor a direct crossing) and it hands nothing off, 0 per
// request; the async route's requests hand off, 1 each. Negative arm: weir's
// Async for every handler (base.Async, what AsyncHandlers turned on before
// routes were resolved one by one): the sync route's answers are posted
// from handler goroutines, one crossing each.
func TestServedSyncRouteInline(t *testing.T) {
	const n = 20
	for _, allAsync := range []bool{false, true} {
		addr, we := onWeirEngine(t, weir.Config{Async: allAsync}, func(s *celeris.Server) {
			s.GET("/sync", func(c *celeris.Context) error { return c.String(200, "sync") })
			s.GET("/async", func(c *celeris.Context) error { return c.String(200, "async") }).Async()
		})
		client := &http.Client{Timeout: 5 * time.Second}
		if err := getWant(t, client, addr+"/sync", "sync"); err != nil { // the connection, before counting
			t.Fatal(err)
		}
		m0 := we.Weir().Metrics()
		for i := 0; i < n; i++ {
			if err := getWant(t, client, addr+"/sync", "sync"); err != nil {
				t.Fatal(err)
			}
		}
		m1 := we.Weir().Metrics()
		crossed := (m1.Posted - m0.Posted) + (m1.DirectResponds - m0.DirectResponds)
		handOffs := m1.HandOffs - m0.HandOffs
		if !allAsync && (crossed != 0 || handOffs != 0) {
			t.Fatalf("sync route: %d answers crossed, %d hand-offs for %d requests, want 0 and 0", crossed, handOffs, n)
		}
		if allAsync && crossed < n {
			t.Fatalf("negative arm (Async for all): %d of %d sync answers crossed", crossed, n)
		}
		for i := 0; i < n; i++ {
			if err := getWant(t, client, addr+"/async", "async"); err != nil {
				t.Fatal(err)
			}
		}
		m2 := we.Weir().Metrics()
		if h := m2.HandOffs - m1.HandOffs; !allAsync && h != n {
			t.Fatalf("async route: %d hand-offs for %d requests, want 1 each", h, n)
		}
		client.CloseIdleConnections()
	}
}

// An async route that blocks while many sync requests, and async ones that
// do not block, are served on the one worker: none stalls (each answers
// within a bound far past its own cost), none is lost, and the blocked
// requests answer once released. Every async request handed off once. (The
// control arm that shows the stall without the route's mark is
// TestServedPerRouteAsync's.)
func TestServedPerRouteAsyncUnderLoad(t *testing.T) {
	const blocked, clients, each = 4, 8, 40
	entered, release := make(chan struct{}, blocked), make(chan struct{})
	addr, we := onWeirEngine(t, weir.Config{}, func(s *celeris.Server) {
		s.GET("/block", func(c *celeris.Context) error {
			entered <- struct{}{}
			<-release
			return c.String(200, "blocked")
		}).Async()
		s.GET("/slow", func(c *celeris.Context) error {
			time.Sleep(time.Millisecond) // blocks briefly: a sync route doing so would hold the worker
			return c.String(200, "slow")
		}).Async()
		s.GET("/fast", func(c *celeris.Context) error { return c.String(200, "fast") })
	})
	m0 := we.Weir().Metrics()
	blockErrs := make(chan error, blocked)
	for i := 0; i < blocked; i++ {
		go func() {
			c := &http.Client{Timeout: 30 * time.Second}
			blockErrs <- getWant(t, c, addr+"/block", "blocked")
			c.CloseIdleConnections()
		}()
	}
	for i := 0; i < blocked; i++ {
		select {
		case <-entered:
		case <-time.After(10 * time.Second):
			close(release)
			t.Fatalf("%d of %d blocking handlers entered", i, blocked)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Timeout: 5 * time.Second} // far past a request's cost: a stall, not slowness
			defer c.CloseIdleConnections()
			for j := 0; j < each; j++ {
				path, want := "/fast", "fast"
				if j%2 == 1 {
					path, want = "/slow", "slow"
				}
				if err := getWant(t, c, addr+path, want); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(release)
	close(errs)
	for err := range errs {
		t.Fatalf("while %d async handlers blocked: %v", blocked, err)
	}
	for i := 0; i < blocked; i++ {
		if err := <-blockErrs; err != nil {
			t.Fatalf("blocked route: %v", err)
		}
	}
	m := we.Weir().Metrics()
	if h, want := m.HandOffs-m0.HandOffs, uint64(blocked+clients*each/2); h != want {
		t.Fatalf("%d hand-offs, want %d (one per async request)", h, want)
	}
	if m.Unanswered != m0.Unanswered || m.Goexits != m0.Goexits || m.Panics != m0.Panics {
		t.Fatalf("unanswered %d, goexits %d, panics %d", m.Unanswered-m0.Unanswered, m.Goexits-m0.Goexits,
			m.Panics-m0.Panics)
	}
}
