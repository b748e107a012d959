package weir

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// loadStats counts what the mixed load saw: every request must be answered.
type loadStats struct {
	ok, failed atomic.Uint64
	firstErr   atomic.Value
}

func (s *loadStats) fail(err error) {
	s.failed.Add(1)
	s.firstErr.CompareAndSwap(nil, err.Error())
}

// mixedLoad runs until stop closes: 8 keep-alive clients one request at a
// time, 2 pipelining 4 at a time, and a churn of Connection: close clients.
func mixedLoad(addr string, stop <-chan struct{}, s *loadStats) *sync.WaitGroup {
	var wg sync.WaitGroup
	conn := func() (*client, error) {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			return nil, err
		}
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		return &client{c: c, br: bufio.NewReader(c)}, nil
	}
	keep := func(depth int) {
		defer wg.Done()
		c, err := conn()
		if err != nil {
			s.fail(err)
			return
		}
		defer c.c.Close()
		req := strings.Repeat(get("/k"), depth)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := io.WriteString(c.c, req); err != nil {
				s.fail(err)
				return
			}
			for i := 0; i < depth; i++ {
				body, err := httpReadResponse(c.br)
				if err != nil || body != "Hello, World!" {
					s.fail(errors.New("keep-alive answer: " + body + " " + errText(err)))
					return
				}
				s.ok.Add(1)
			}
		}
	}
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go keep(1)
	}
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go keep(4)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(4 * time.Millisecond):
			}
			c, err := conn()
			if err != nil {
				s.fail(err)
				continue
			}
			_, err = io.WriteString(c.c, "GET /c HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
			body, rerr := httpReadResponse(c.br)
			c.c.Close()
			if err != nil || rerr != nil || body != "Hello, World!" {
				s.fail(errors.New("churn answer: " + body + " " + errText(err) + errText(rerr)))
				continue
			}
			s.ok.Add(1)
		}
	}()
	return &wg
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func checkLoad(t *testing.T, s *loadStats) {
	t.Helper()
	if s.failed.Load() != 0 {
		t.Fatalf("%d requests failed (first: %v), %d answered", s.failed.Load(), s.firstErr.Load(), s.ok.Load())
	}
	if s.ok.Load() < 100 {
		t.Fatalf("only %d requests answered: the load did not run", s.ok.Load())
	}
	t.Logf("%d requests answered, 0 failed", s.ok.Load())
}

// balanced waits for m's ledger to settle and checks it.
func balanced(t *testing.T, name string, metrics func() Metrics) {
	t.Helper()
	waitFor(t, name+" ledger settled", func() bool { return metrics().TransplantInFlight == 0 })
	m := metrics()
	if m.TransplantDetached != m.TransplantAdopted+m.TransplantRefused {
		t.Fatalf("%s ledger: detached %d != adopted %d + refused %d", name, m.TransplantDetached, m.TransplantAdopted, m.TransplantRefused)
	}
	for r, n := range m.Closes {
		if n != 0 && CloseReasonName(r) != "peer" && CloseReasonName(r) != "not_keep_alive" {
			t.Fatalf("%s closed %d connections for %s", name, n, CloseReasonName(r))
		}
	}
}

// Transplant there and back between two Engines under keep-alive, pipelined
// and churn load: nothing lost, both ledgers balanced.
func TestTransplantThereAndBack(t *testing.T) {
	a, addr := start(t, Config{Handler: hello})
	b, _ := start(t, Config{Handler: hello, Backend: otherBackend()})
	var s loadStats
	stop := make(chan struct{})
	wg := mixedLoad(addr, stop, &s)
	time.Sleep(200 * time.Millisecond)
	if err := a.Transplant(b); err != nil {
		t.Fatalf("Transplant: %v", err)
	}
	waitFor(t, "a's keep-alive clients on b", func() bool { return b.Metrics().TransplantReceived >= 10 })
	time.Sleep(200 * time.Millisecond)
	if err := b.Transplant(a); err != nil { // ends a's transplant first
		t.Fatalf("Transplant back: %v", err)
	}
	waitFor(t, "b empty", func() bool { return b.Metrics().ConnectionsOpen == 0 })
	if err := b.EndTransplant(); err != nil {
		t.Fatalf("EndTransplant: %v", err)
	}
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()
	checkLoad(t, &s)
	balanced(t, "a", a.Metrics)
	balanced(t, "b", b.Metrics)
	if a.Metrics().TransplantDetached < 10 || b.Metrics().TransplantDetached < 10 {
		t.Fatalf("nothing moved: a detached %d, b detached %d", a.Metrics().TransplantDetached, b.Metrics().TransplantDetached)
	}
	if err := a.Transplant(a); err == nil {
		t.Fatal("Transplant to itself: nil error")
	}
}

// otherBackend: io_uring when the tests run on epoll, else epoll; New falls
// back in the tests that need it.
func otherBackend() Backend {
	if testBackend() == BackendURing {
		return BackendEpoll
	}
	if e, err := New(Config{Handler: hello, Backend: BackendURing}); err == nil {
		e.Shutdown(context.Background())
		return BackendURing
	}
	return BackendEpoll
}

func startAdaptive(t *testing.T, ac AdaptiveConfig, workers int) (*Adaptive, string) {
	t.Helper()
	a, err := NewAdaptive(Config{Handler: hello, Addr: "127.0.0.1:0", Workers: workers, Backend: testBackend(), Linger: 200 * time.Millisecond}, ac)
	if errors.Is(err, ErrUnavailable) {
		t.Skipf("%v: %v", testBackend(), err)
	}
	if err != nil {
		t.Fatalf("NewAdaptive: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	listened := make(chan error, 1)
	go func() { listened <- a.Listen(ctx) }()
	waitFor(t, "the pair up", func() bool {
		return a.Addr() != nil && a.Standby() != nil && a.Metrics().StandbyBackend == a.Standby().Type()
	})
	time.Sleep(500 * time.Millisecond) // the standby's pause (its linger) and the pair's creation
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-listened:
			if err != nil {
				t.Errorf("Listen: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("Listen did not return")
		}
	})
	return a, a.Addr().String()
}

// Switch there and back under keep-alive, pipelined and churn load.
func TestAdaptiveSwitchThereAndBack(t *testing.T) {
	var switched atomic.Int32
	a, addr := startAdaptive(t, AdaptiveConfig{Manual: true, OnSwitch: func(Backend, bool) { switched.Add(1) }}, 2)
	first := a.Active()
	var s loadStats
	stop := make(chan struct{})
	wg := mixedLoad(addr, stop, &s)
	time.Sleep(200 * time.Millisecond)
	if err := a.Switch(); err != nil {
		t.Fatalf("Switch: %v", err)
	}
	if a.Active() == first {
		t.Fatal("Active did not follow the switch")
	}
	time.Sleep(400 * time.Millisecond) // past the 200 ms linger
	if first.Metrics().ConnectionsOpen != 0 {
		t.Fatalf("%d connections left on the paused engine", first.Metrics().ConnectionsOpen)
	}
	if err := a.Switch(); err != nil {
		t.Fatalf("Switch back: %v", err)
	}
	time.Sleep(400 * time.Millisecond)
	close(stop)
	wg.Wait()
	checkLoad(t, &s)
	m := a.Metrics()
	if m.Switches != 2 || m.ForcedSwitches != 2 || m.Controller || a.Active() != first || switched.Load() != 2 {
		t.Fatalf("after two switches: %+v", m)
	}
	balanced(t, "active", a.Active().Metrics)
	balanced(t, "standby", a.Standby().Metrics)
	if m.Standby.TransplantDetached == 0 || m.Active.TransplantDetached == 0 {
		t.Fatalf("nothing moved: %d / %d detached", m.Active.TransplantDetached, m.Standby.TransplantDetached)
	}
}

func lowThresholds() AdaptiveConfig {
	return AdaptiveConfig{Interval: 20 * time.Millisecond, UpConns: 16, DownConns: 4, UpRPS: 1000000, DownRPS: 100000, Hold: 3, Cooldown: 200 * time.Millisecond}
}

func idleClients(t *testing.T, addr string, n int) []*client {
	cl := make([]*client, n)
	for i := range cl {
		cl[i] = dial(t, addr)
		cl[i].send(get("/i"))
		cl[i].read("GET")
	}
	return cl
}

// The controller switches by itself: up under 24 idle connections per
// worker (up_conns 16), and they answer on the new engine.
func TestAdaptiveControllerSwitchesByLoad(t *testing.T) {
	a, addr := startAdaptive(t, lowThresholds(), 1)
	if a.Metrics().Role == BackendURing { // io_uring's role with no load: down first
		waitFor(t, "the controller's down", func() bool { return a.Metrics().ControllerSwitches == 1 })
		if m := a.Metrics(); m.Role != BackendEpoll || m.LastReason != "down" {
			t.Fatalf("after down: %+v", m)
		}
	}
	before := a.Metrics().ControllerSwitches
	cl := idleClients(t, addr, 24)
	waitFor(t, "the controller's up", func() bool { return a.Metrics().ControllerSwitches == before+1 })
	m := a.Metrics()
	if m.Role != BackendURing || m.LastReason != "up" || m.ForcedSwitches != 0 {
		t.Fatalf("after up: %+v", m)
	}
	for _, c := range cl {
		c.send(get("/again"))
		if _, body := c.read("GET"); body != "Hello, World!" {
			t.Fatalf("after the move: %q", body)
		}
	}
	balanced(t, "standby", a.Standby().Metrics)
}

// The arm that must not switch: the same load, no controller.
func TestAdaptiveManualDoesNotSwitch(t *testing.T) {
	a, addr := startAdaptive(t, AdaptiveConfig{Manual: true}, 1)
	idleClients(t, addr, 24)
	time.Sleep(300 * time.Millisecond)
	if m := a.Metrics(); m.Switches != 0 || m.Controller {
		t.Fatalf("a manual pair switched: %+v", m)
	}
}

func TestAdaptiveConfigRefused(t *testing.T) {
	if _, err := NewAdaptive(Config{Handler: hello}, AdaptiveConfig{UpConns: 10, DownConns: 10}); err == nil {
		t.Fatal("down_conns == up_conns: nil error")
	}
	if _, err := NewAdaptive(Config{Handler: hello, Listener: &net.TCPListener{}}, AdaptiveConfig{}); err == nil {
		t.Fatal("a Listener: nil error")
	}
	a, _ := NewAdaptive(Config{Handler: hello}, AdaptiveConfig{})
	if err := a.Switch(); !errors.Is(err, ErrShutdown) {
		t.Fatalf("Switch before Listen: %v", err)
	}
	_ = a.Shutdown(context.Background())
}

// The arm that must lose: a "switch" without the transplant (resume the
// standby, pause the active engine) leaves every keep-alive client on the
// paused engine, which nobody means to serve any more; Switch leaves none.
func TestAdaptiveWithoutTransplantStrands(t *testing.T) {
	a, addr := startAdaptive(t, AdaptiveConfig{Manual: true}, 1)
	old, standby := a.Active(), a.Standby()
	cl := idleClients(t, addr, 8)
	if err := standby.ResumeAccept(); err != nil {
		t.Fatalf("ResumeAccept: %v", err)
	}
	if err := old.PauseAccept(); err != nil {
		t.Fatalf("PauseAccept: %v", err)
	}
	if n := old.Metrics().ConnectionsOpen; n != 8 {
		t.Fatalf("without the transplant the paused engine holds %d connections, want all 8 stranded", n)
	}
	// With it: Switch from the paused engine's partner back and forth moves them.
	if err := standby.PauseAccept(); err != nil {
		t.Fatalf("PauseAccept: %v", err)
	}
	if err := old.ResumeAccept(); err != nil {
		t.Fatalf("ResumeAccept: %v", err)
	}
	if err := a.Switch(); err != nil {
		t.Fatalf("Switch: %v", err)
	}
	for _, c := range cl {
		c.send(get("/moved"))
		c.read("GET")
	}
	waitFor(t, "the old engine empty", func() bool { return old.Metrics().ConnectionsOpen == 0 })
}
