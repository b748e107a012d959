package weir

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// answering is a handler that names its engine, so a client sees which
// process (here: which engine) served it.
func answering(name string) Handler {
	return func(r *Request, w *ResponseWriter) { _ = w.RespondString(200, name) }
}

// listenAttached starts e (attachments already made) and returns a channel
// with Listen's result; the engine is shut down at the test's end.
func listenAttached(t *testing.T, e *Engine) (context.CancelFunc, chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	listened := make(chan error, 1)
	go func() { listened <- e.Listen(ctx) }()
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		_ = e.Shutdown(sctx)
		cancel()
		<-e.Done()
	})
	return cancel, listened
}

func addrOf(t *testing.T, e *Engine) string {
	t.Helper()
	waitFor(t, "the engine to bind", func() bool { return e.Addr() != nil })
	return e.Addr().String()
}

func ask(t *testing.T, c *client) string {
	t.Helper()
	c.send(get("/"))
	_, body := c.read("GET")
	return body
}

// The readiness gate and the move: a successor's Listen takes nothing over
// before Ready (the old engine keeps serving the same keep-alive connection;
// removing the gate — taking over in Listen at once — fails the "before
// Ready" checks), then Ready moves the listeners and the live connection,
// and both ledgers balance.
func TestUpgradeGateThenMove(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "up.sock")
	a := newEngine(t, Config{Addr: "127.0.0.1:0", Workers: 2, Handler: answering("a")})
	offered := make(chan struct{})
	upA, err := NewUpgrader(a, UpgradeOptions{Socket: sock, OnOffer: func(string) { close(offered) }})
	if err != nil {
		t.Fatal(err)
	}
	listenAttached(t, a)
	addr := addrOf(t, a)
	c := dial(t, addr)
	if got := ask(t, c); got != "a" {
		t.Fatalf("before: %q", got)
	}
	type result struct {
		st  UpgradeStats
		err error
	}
	res := make(chan result, 1)
	go func() { st, err := upA.Upgrade(context.Background()); res <- result{st, err} }()
	<-offered

	b := newEngine(t, Config{Workers: 2, Handler: answering("b")})
	upB, err := NewUpgrader(b, UpgradeOptions{TakeOver: sock, Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	_, listenedB := listenAttached(t, b)
	time.Sleep(200 * time.Millisecond) // B's Listen is at the gate
	if b.Addr() != nil {
		t.Fatal("before Ready: the successor listens: the gate did not hold")
	}
	if got := ask(t, c); got != "a" {
		t.Fatalf("before Ready: the connection was served by %q, want the old engine", got)
	}
	select {
	case r := <-res:
		t.Fatalf("before Ready: the offer ended: %+v %v", r.st, r.err)
	default:
	}

	if err := upB.Ready(); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	r := <-res
	if r.err != nil || r.st.State != UpgradeDone {
		t.Fatalf("Upgrade: %+v %v", r.st, r.err)
	}
	select {
	case <-upA.Exit():
	default:
		t.Fatal("Exit not closed after a Done offer")
	}
	if got := ask(t, c); got != "b" {
		t.Fatalf("after: the same connection was served by %q, want the successor", got)
	}
	c2 := dial(t, addr)
	if got := ask(t, c2); got != "b" {
		t.Fatalf("after: a new connection was served by %q", got)
	}
	took, err := upB.TakeOverResult()
	if err != nil {
		t.Fatalf("TakeOverResult: %v", err)
	}
	if r.st.Sent < 1 || r.st.Sent != took.Received+took.Refused || took.Lost != 0 || r.st.Listeners != took.Listeners {
		t.Fatalf("ledgers: offer %+v, take-over %+v", r.st, took)
	}
	m := b.Metrics()
	if !m.HandoverSeen || m.Handover.Received != took.Received || m.TransplantReceived < 1 {
		t.Fatalf("successor's Metrics: seen %v handover %+v transplant_received %d", m.HandoverSeen, m.Handover, m.TransplantReceived)
	}
	if ma := a.Metrics(); ma.Handover.Sent != r.st.Sent || ma.Closes[closeHandover] != 0 {
		t.Fatalf("old Metrics: %+v, closes.handover %d", ma.Handover, ma.Closes[closeHandover])
	}
	var buf bytes.Buffer
	if err := m.WriteText(&buf, "x."); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"x.transplant_received ", "x.closes.handover 0\n", "x.handover.state done\n",
		"x.handover.received " + itoa(int(took.Received)) + "\n", "x.requests "} {
		if !strings.Contains(buf.String(), line) {
			t.Errorf("WriteText lacks %q:\n%s", line, buf.String())
		}
	}
	select {
	case err := <-listenedB:
		t.Fatalf("the successor's Listen returned: %v", err)
	default:
	}
}

// A successor that never becomes Ready (its Listen gives up at the gate)
// takes nothing: the offer fails when Wait runs out — weir reports that
// timeout as -ETIMEDOUT, the code a wait's own timeout has, so the mutant
// that tells them apart by the code alone never returns (the test's bound
// fails it) — and the old engine serves on, and can offer again.
func TestUpgradeSuccessorNeverReady(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "up.sock")
	a := newEngine(t, Config{Addr: "127.0.0.1:0", Workers: 2, Handler: answering("a")})
	upA, err := NewUpgrader(a, UpgradeOptions{Socket: sock, Wait: 400 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	listenAttached(t, a)
	c := dial(t, addrOf(t, a))

	b := newEngine(t, Config{Workers: 2, Handler: answering("b")})
	upB, err := NewUpgrader(b, UpgradeOptions{TakeOver: sock})
	if err != nil {
		t.Fatal(err)
	}
	cancelB, listenedB := listenAttached(t, b)

	for round := 0; round < 2; round++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		t0 := time.Now()
		st, err := upA.Upgrade(ctx)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("round %d: the offer did not end within 5 s of its 400 ms Wait", round)
		}
		if err == nil || st.State != UpgradeFailed || !errors.Is(err, syscall.ETIMEDOUT) {
			t.Fatalf("round %d: Upgrade = %+v, %v; want failed, ETIMEDOUT", round, st, err)
		}
		if d := time.Since(t0); d < 300*time.Millisecond {
			t.Fatalf("round %d: failed after %v, before its Wait", round, d)
		}
		if got := ask(t, c); got != "a" {
			t.Fatalf("round %d: after the failed offer: %q", round, got)
		}
	}
	cancelB() // the successor's application never started: its Listen gives up at the gate
	if err := <-listenedB; !errors.Is(err, context.Canceled) {
		t.Fatalf("the successor's Listen: %v, want context.Canceled", err)
	}
	if err := upB.Ready(); err == nil {
		t.Fatal("Ready after Listen gave up: nil")
	}
	if b.Addr() != nil {
		t.Fatal("the successor bound something")
	}
	if got := ask(t, c); got != "a" {
		t.Fatalf("at the end: %q", got)
	}
}

// Misuse gets an error, never a half-done offer: no Socket, an engine not
// listening, a negative Wait, attaching after Listen.
func TestUpgradeMisuse(t *testing.T) {
	e := newEngine(t, Config{Addr: "127.0.0.1:0", Workers: 1, Handler: answering("e")})
	up, err := NewUpgrader(e, UpgradeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := up.Upgrade(context.Background()); err == nil {
		t.Fatal("Upgrade without Socket: nil")
	}
	up.opt.Socket = filepath.Join(t.TempDir(), "s")
	if st, err := up.Upgrade(context.Background()); !errors.Is(err, ErrState) || st.State != 0 {
		t.Fatalf("Upgrade before Listen: %+v %v, want ErrState and nothing offered", st, err)
	}
	if _, err := NewUpgrader(e, UpgradeOptions{Wait: -time.Second}); err == nil {
		t.Fatal("a negative Wait: nil")
	}
	listenAttached(t, e)
	addrOf(t, e)
	if _, err := NewUpgrader(e, UpgradeOptions{}); !errors.Is(err, ErrState) {
		t.Fatalf("NewUpgrader after Listen: %v, want ErrState", err)
	}
	if _, err := NewSystemd(e, SystemdOptions{}); !errors.Is(err, ErrState) {
		t.Fatalf("NewSystemd after Listen: %v, want ErrState", err)
	}
	if err := up.Ready(); err != nil {
		t.Fatalf("Ready with nothing to take over: %v", err)
	}
}

// Outside systemd: Activation finds nothing ($LISTEN_PID unset: ENOENT) and
// the engine binds Addr; Store finds no $NOTIFY_SOCKET and changes nothing.
func TestSystemdOutside(t *testing.T) {
	for _, v := range []string{"LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES", "NOTIFY_SOCKET"} {
		t.Setenv(v, "") // restored after the test
		os.Unsetenv(v)  // unset, not empty: an empty $LISTEN_PID is malformed (EINVAL)
	}
	e := newEngine(t, Config{Addr: "127.0.0.1:0", Workers: 1, Handler: answering("e")})
	sd, err := NewSystemd(e, SystemdOptions{Activation: true})
	if err != nil {
		t.Fatal(err)
	}
	listenAttached(t, e)
	c := dial(t, addrOf(t, e))
	st, ok := sd.Listened()
	if !ok || !errors.Is(st.Err, syscall.ENOENT) || st.Listeners != 0 {
		t.Fatalf("Listened = %+v %v, want ENOENT", st, ok)
	}
	if _, err := sd.Store(time.Second); !errors.Is(err, ErrNoNotifySocket) {
		t.Fatalf("Store: %v, want ErrNoNotifySocket", err)
	}
	if got := ask(t, c); got != "e" {
		t.Fatalf("after Store: %q", got)
	}
	var buf bytes.Buffer
	_ = e.Metrics().WriteText(&buf, "")
	if !strings.Contains(buf.String(), "systemd.listen.error ENOENT\n") {
		t.Fatalf("WriteText:\n%s", buf.String())
	}
}

// OnSignal: each signal is an offer and each outcome is reported; with
// nobody to take it, each fails at Wait and the engine serves on.
func TestUpgradeOnSignal(t *testing.T) {
	a := newEngine(t, Config{Addr: "127.0.0.1:0", Workers: 1, Handler: answering("a")})
	up, err := NewUpgrader(a, UpgradeOptions{Socket: filepath.Join(t.TempDir(), "s"), Wait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	listenAttached(t, a)
	c := dial(t, addrOf(t, a))
	got := make(chan error, 4)
	stop := up.OnSignal(context.Background(), func(st UpgradeStats, err error) { got <- err }, syscall.SIGUSR2)
	defer stop()
	for i := 0; i < 2; i++ {
		if err := syscall.Kill(os.Getpid(), syscall.SIGUSR2); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-got:
			if !errors.Is(err, syscall.ETIMEDOUT) {
				t.Fatalf("offer %d: %v, want ETIMEDOUT (no successor)", i, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("offer %d: no report within 5 s", i)
		}
		if body := ask(t, c); body != "a" {
			t.Fatalf("after offer %d: %q", i, body)
		}
	}
	stop()
	if _, ok := up.Last(); !ok {
		t.Fatal("Last: none after two offers")
	}
}
