package weirceleris

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goceleris/celeris"
	"github.com/goceleris/celeris/engine"
	"github.com/goceleris/celeris/protocol/h2/stream"
	"github.com/goceleris/celeris/resource"
	weir "github.com/weir-http/weir/go-binding"
)

// onPair starts a celeris.Server with Engine: Adaptive through Factory and
// returns its address and the engine Factory made.
func onPair(t *testing.T, cfg celeris.Config) (string, *Engine) {
	t.Helper()
	cfg.Addr, cfg.Protocol, cfg.Engine = "127.0.0.1:0", celeris.HTTP1, celeris.Adaptive
	if cfg.Logger == nil {
		cfg.Logger = quietLog()
	}
	made := Factory(weir.Config{Backend: testBackend(), Workers: 1})
	var eng *Engine
	cfg.EngineFactory = func(rc resource.Config, h stream.Handler) (engine.Engine, error) {
		e, err := made(rc, h)
		eng, _ = e.(*Engine)
		return e, err
	}
	srv := celeris.New(cfg)
	srv.GET("/n/:id", func(c *celeris.Context) error { return c.String(200, "id=%s", c.Param("id")) })
	addr := strings.TrimPrefix(run(t, srv), "http://")
	if eng == nil {
		t.Fatal("Factory made no *Engine")
	}
	return addr, eng
}

// celeris's Engine: Adaptive is served on weir's adaptive pair: keep-alive
// clients sending pipelined batches, and clients reconnecting, are served
// while the pair is switched there and back four times; every request gets
// its own answer (nothing lost, nothing crossed), Type is Adaptive, and the
// celeris metrics count both engines' requests. What makes it fail if
// Factory refused Adaptive (run fails), or served it on one fixed engine:
// Adaptive() is nil, no switch is counted, or the engine that was standby at
// the end served nothing (each engine served between switches).
func TestAdaptiveServedAcrossSwitches(t *testing.T) {
	addr, eng := onPair(t, celeris.Config{})
	if eng.Type() != engine.Adaptive {
		t.Fatalf("Type %v, want adaptive", eng.Type())
	}
	pair := eng.Adaptive()
	if pair == nil {
		t.Fatal("Engine: Adaptive served on one engine, not weir's pair")
	}
	start := pair.Metrics()
	if testBackend() == weir.BackendURing && start.ActiveBackend == start.StandbyBackend {
		t.Fatalf("pair on %v+%v on a kernel with io_uring: want epoll+io_uring", start.ActiveBackend, start.StandbyBackend)
	}

	const clients, depth = 6, 4
	var stop atomic.Bool
	var sent atomic.Uint64
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs <- pipeline(addr, i, depth, i%2 == 1, &stop, &sent)
		}(i)
	}
	// Let load reach the first engine, then switch there and back twice.
	wait := func() {
		for n := sent.Load(); sent.Load() < n+100; {
			time.Sleep(time.Millisecond)
		}
	}
	wait()
	for i := 0; i < 4; i++ {
		if err := pair.Switch(); err != nil {
			t.Fatalf("switch %d: %v", i, err)
		}
		wait()
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	am := pair.Metrics()
	if am.Switches < 4 || am.ActiveBackend != start.ActiveBackend {
		t.Fatalf("switches %d, active %v (started %v): want 4 there and back", am.Switches, am.ActiveBackend,
			start.ActiveBackend)
	}
	if am.Active.Requests == 0 || am.Standby.Requests == 0 {
		t.Fatalf("requests active %d standby %d: want both engines to have served", am.Active.Requests,
			am.Standby.Requests)
	}
	m := eng.Metrics()
	if m.RequestCount != sent.Load() || m.RequestCount != am.Active.Requests+am.Standby.Requests {
		t.Fatalf("celeris RequestCount %d, sent %d, pair %d+%d", m.RequestCount, sent.Load(), am.Active.Requests,
			am.Standby.Requests)
	}
	if m.ErrorCount != 0 {
		t.Fatalf("ErrorCount %d after a clean run", m.ErrorCount)
	}
	t.Logf("%d requests, %d on the engine active at the end, %d on the other; %d switches", m.RequestCount,
		am.Active.Requests, am.Standby.Requests, am.Switches)
}

// pipeline sends batches of depth requests in one write and reads their
// answers in order, each naming its own request, until stop; reconnect
// opens a new connection every few batches (accepts across switches).
func pipeline(addr string, id, depth int, reconnect bool, stop *atomic.Bool, sent *atomic.Uint64) error {
	var c net.Conn
	var br *bufio.Reader
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	for round := 0; !stop.Load(); round++ {
		if c == nil || (reconnect && round%5 == 0) {
			if c != nil {
				c.Close()
			}
			var err error
			if c, err = net.DialTimeout("tcp", addr, 5*time.Second); err != nil {
				return err
			}
			br = bufio.NewReader(c)
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		var b strings.Builder
		for k := 0; k < depth; k++ {
			fmt.Fprintf(&b, "GET /n/%d-%d-%d HTTP/1.1\r\nHost: x\r\n\r\n", id, round, k)
		}
		if _, err := io.WriteString(c, b.String()); err != nil {
			return fmt.Errorf("client %d round %d: write: %v", id, round, err)
		}
		for k := 0; k < depth; k++ {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				return fmt.Errorf("client %d round %d answer %d: %v", id, round, k, err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := fmt.Sprintf("id=%d-%d-%d", id, round, k)
			if err != nil || resp.StatusCode != 200 || string(body) != want {
				return fmt.Errorf("client %d: %d %q (%v), want 200 %q", id, resp.StatusCode, body, err, want)
			}
			sent.Add(1)
		}
	}
	return nil
}

// celeris's AcceptController on the pair: PauseAccept pauses the active
// engine and holds the switches (a new client is refused, Switch answers
// weir.ErrPairPaused), ResumeAccept serves new clients again.
func TestAdaptivePauseAccept(t *testing.T) {
	addr, eng := onPair(t, celeris.Config{})
	if err := eng.PauseAccept(); err != nil {
		t.Fatalf("PauseAccept on the pair: %v", err)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatal("paused: a new connection was accepted")
	}
	if err := eng.Adaptive().Switch(); !errors.Is(err, weir.ErrPairPaused) {
		t.Fatalf("Switch while paused: %v, want weir.ErrPairPaused", err)
	}
	if err := eng.ResumeAccept(); err != nil {
		t.Fatalf("ResumeAccept on the pair: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/n/1")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("after ResumeAccept: status %d", resp.StatusCode)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after ResumeAccept: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := eng.BeginPauseAccept(); err != nil {
		t.Fatalf("BeginPauseAccept on the pair: %v", err)
	}
	if err := eng.ResumeAccept(); err != nil {
		t.Fatalf("ResumeAccept after BeginPauseAccept: %v", err)
	}
}

// celeris's Engine: Adaptive with a Listener is refused (each engine binds
// the address). Control arm: the same configuration without the Listener is
// the pair. WorkloadHint picks the pair's start engine.
func TestAdaptiveRefusals(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := resource.Config{Protocol: engine.HTTP1, Engine: engine.Adaptive, Listener: ln}
	if _, _, err := translate(weir.Config{}, cfg, nil); !errors.Is(err, ErrNotServed) ||
		!strings.Contains(err.Error(), "Listener") {
		t.Fatalf("Adaptive with a Listener: %v, want ErrNotServed naming Listener", err)
	}
	cfg.Listener = nil
	if _, o, err := translate(weir.Config{}, cfg, nil); err != nil || !o.adaptive {
		t.Fatalf("Adaptive with Addr: adaptive %v err %v, want the pair", o.adaptive, err)
	}
	// WorkloadHint: the start engine, as celeris's Adaptive chooses it.
	cfg.Resources.WorkloadHint = resource.WorkloadHighConcurrency
	if c, _, _ := translate(weir.Config{}, cfg, nil); c.Backend != weir.BackendURing {
		t.Errorf("WorkloadHighConcurrency: starts on %v, want io_uring", c.Backend)
	}
	cfg.Resources.WorkloadHint = resource.WorkloadLowConcurrency
	if c, _, _ := translate(weir.Config{}, cfg, nil); c.Backend != weir.BackendEpoll {
		t.Errorf("WorkloadLowConcurrency: starts on %v, want epoll", c.Backend)
	}
}

// The Logger hears the pair's start and each switch (onSwitch), where a
// single engine's Logger hears its start alone (TestServedLogger).
func TestAdaptiveLogger(t *testing.T) {
	rec := &records{}
	_, eng := onPair(t, celeris.Config{Logger: slog.New(rec)})
	if !rec.logged("weir engine listening") {
		t.Fatalf("no listening record in %v (io_uring's absence logs a longer warning)", rec.msgs())
	}
	if rec.has("weir adaptive switch") {
		t.Fatalf("a switch logged before any: %v", rec.msgs())
	}
	if err := eng.Adaptive().Switch(); err != nil {
		t.Fatal(err)
	}
	if !rec.logged("weir adaptive switch") {
		t.Fatalf("no switch record in %v", rec.msgs())
	}
}
