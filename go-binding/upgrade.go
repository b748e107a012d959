package weir

/*
#include <errno.h>
#include <stdlib.h>
#include <weir.h>
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"
)

// UpgradeOptions configure an Upgrader (docs/upgrade.md, docs/go.md "Hot
// upgrade").
type UpgradeOptions struct {
	// Socket is where Upgrade offers this process: a Unix socket path
	// (created mode 0600; only this uid or root may connect, as whoever
	// connects gets every listener and every client). Empty: Upgrade is
	// refused.
	Socket string
	// TakeOver makes this process a successor: Listen takes the listeners
	// and live connections of the process offered at this path, once the
	// application calls Ready, instead of binding Config.Addr. Usually the
	// same path as Socket, so the successor can be upgraded in turn.
	TakeOver string
	// Wait: how long an offer waits for a successor to connect, and how long
	// a take-over retries its connect while nobody offers. 0: 10 s.
	Wait time.Duration
	// Deadline: from the successor's take-over, how long in-flight exchanges
	// may take to reach their request boundary; what still holds then is
	// closed (Closes[WEIR_CLOSE_HANDOVER], "handover"). 0: 10 s.
	Deadline time.Duration
	// ListenersOnly hands over the listeners only and closes every live
	// connection at its request boundary: what nginx, HAProxy, Envoy and
	// tableflip do. For comparison: the clients see their keep-alive
	// connections close.
	ListenersOnly bool
	// OnOffer, if set, is called once an offer listens on Socket (a
	// successor may connect from then on).
	OnOffer func(socket string)
}

// UpgradeState is where a handover is (weir_handover_stats.state).
type UpgradeState int

// The states of a handover.
const (
	UpgradeWaiting UpgradeState = C.WEIR_HANDOVER_WAITING // offer: no successor yet; take-over: connecting
	UpgradeMoving  UpgradeState = C.WEIR_HANDOVER_MOVING  // the listeners moved; connections are moving
	UpgradeDone    UpgradeState = C.WEIR_HANDOVER_DONE    // the successor serves everything
	UpgradeFailed  UpgradeState = C.WEIR_HANDOVER_FAILED  // ended before Done; the offering process serves on
)

// UpgradeStats is one side's ledger of a handover (weir_handover_stats; the
// names in the metrics text are weir-demo's: sent, returned, ...). The
// offerer's Sent equals the successor's Received + Refused.
type UpgradeStats struct {
	State     UpgradeState
	Err       error  // what ended a failed handover
	Listeners uint32 // listening sockets handed over / taken
	Sent      uint64 // offer: connections the successor acknowledged
	Returned  uint64 // offer: taken back after a failure and served here
	Closed    uint64 // offer: closed by the deadline or a listeners-only offer
	Received  uint64 // take-over: connections received
	Refused   uint64 // take-over: received and closed (no room; in Closes too)
	Lost      uint64 // take-over: what the old process still held when it vanished before Done
	Moving    time.Duration
}

// Upgrader hot-upgrades a process serving an Engine, the way cloudflare's
// tableflip does for net.Listeners, but handing over the live keep-alive
// connections too, each at its next request boundary with the bytes it had
// read (tableflip, nginx and HAProxy hand over listeners only):
//
//	up, _ := weir.NewUpgrader(e, weir.UpgradeOptions{Socket: sock, TakeOver: prev})
//	go e.Listen(ctx)          // a successor's Listen waits at the gate
//	initApp()                 // caches, connections to backends, ...
//	_ = up.Ready()            // the gate: only now is anything taken over
//	stop := up.OnSignal(ctx, report, syscall.SIGQUIT)
//	<-up.Exit()               // a successor took everything: shut down
//
// The old process keeps serving until its successor is Ready and has taken
// the listeners: a successor that dies before Ready never touched them, and
// one that dies after is survived too (weir takes back every connection it
// had not acknowledged, and the listeners are heard again; the offer fails
// and a later one may follow). Its methods are safe for concurrent use.
type Upgrader struct {
	e   *Engine
	opt UpgradeOptions

	readyOnce sync.Once
	ready     chan struct{} // closed by Ready: the gate opens
	boundOnce sync.Once
	bound     chan struct{} // closed once the take-over has run (bindErr) or Listen gave up
	bindErr   error

	mu       sync.Mutex
	offering bool // an Upgrade is under way (it owns its handle)
	taking   bool // the take-over's watcher owns its handle
	closing  bool // the engine is going: handles are freed, no new offer
	last     *UpgradeStats
	wake     chan struct{} // closed by release: the owners of handles free them now
	owners   sync.WaitGroup

	exitOnce sync.Once
	exit     chan struct{} // closed once an offer is Done
	taken    chan struct{} // closed once the take-over ended (TakeOverResult)
	tookSt   UpgradeStats
}

// NewUpgrader attaches an Upgrader to e, before e.Listen.
func NewUpgrader(e *Engine, opt UpgradeOptions) (*Upgrader, error) {
	for _, d := range []time.Duration{opt.Wait, opt.Deadline} {
		if d < 0 || d/time.Millisecond > 1<<31 {
			return nil, fmt.Errorf("weir: UpgradeOptions: Wait and Deadline must be in [0, 2^31 ms], not %v", d)
		}
	}
	up := &Upgrader{e: e, opt: opt, ready: make(chan struct{}), bound: make(chan struct{}),
		wake: make(chan struct{}), exit: make(chan struct{}), taken: make(chan struct{})}
	if opt.TakeOver == "" {
		up.boundOnce.Do(func() { close(up.bound) })
		close(up.taken)
	}
	if err := e.attach(up); err != nil {
		return nil, err
	}
	return up, nil
}

// Ready opens the successor's gate: call it once the application can serve.
// Listen then takes the listeners and connections over, and Ready returns
// its outcome (nil: this process serves the listeners; the connections
// follow). Before Ready the old process keeps everything, so a successor
// that fails to start costs nothing. Listen must be running or be called.
// In a process that takes nothing over, Ready returns nil at once.
func (up *Upgrader) Ready() error {
	up.readyOnce.Do(func() { close(up.ready) })
	select {
	case <-up.bound:
		return up.bindErr
	case <-up.e.done:
		return ErrShutdown
	}
}

// Exit is closed once an offer is Done: the engine holds no listener and no
// connection, and the host should shut it down and exit.
func (up *Upgrader) Exit() <-chan struct{} { return up.exit }

// TakenOver is closed once the take-over ended: Done (the old process holds
// nothing and this engine accepts) or failed (it vanished first). See
// TakeOverResult. Closed at once when this process takes nothing over.
func (up *Upgrader) TakenOver() <-chan struct{} { return up.taken }

// TakeOverResult is the take-over's ledger and error (nil: Done), valid once
// TakenOver is closed.
func (up *Upgrader) TakeOverResult() (UpgradeStats, error) {
	<-up.taken
	return up.tookSt, up.tookSt.Err
}

// closeHandover indexes Metrics.Closes for connections a handover's
// deadline or a listeners-only offer closed (CloseReasonName: "handover").
const closeHandover = int(C.WEIR_CLOSE_HANDOVER)

// ErrUpgradeBusy: an offer or a take-over is under way.
var ErrUpgradeBusy = errors.New("weir: a handover is under way")

// Upgrade offers the engine at Socket and blocks until a successor has taken
// everything (nil; Exit is closed) or the offer ended without it (an error,
// and the stats say why): no successor within Wait, a successor that spoke
// another protocol, crashed or hung up. After a failure the engine serves on
// exactly as before, and a later Upgrade may follow. ctx ending withdraws the
// offer (ctx.Err()). Refused while a take-over or another offer runs
// (ErrUpgradeBusy), without Socket, and on an engine not listening: then
// nothing was offered and the stats' State is 0.
func (up *Upgrader) Upgrade(ctx context.Context) (UpgradeStats, error) {
	if up.opt.Socket == "" {
		return UpgradeStats{}, errors.New("weir: Upgrade: no UpgradeOptions.Socket")
	}
	up.mu.Lock()
	if up.closing {
		up.mu.Unlock()
		return UpgradeStats{}, ErrShutdown
	}
	if up.offering || up.taking {
		up.mu.Unlock()
		return UpgradeStats{}, ErrUpgradeBusy
	}
	up.offering = true
	up.owners.Add(1)
	up.mu.Unlock()
	defer func() {
		up.mu.Lock()
		up.offering = false
		up.mu.Unlock()
		up.owners.Done()
	}()

	h, err := up.offer()
	if err != nil {
		return UpgradeStats{Err: err}, err // State 0: nothing was offered
	}
	if f := up.opt.OnOffer; f != nil {
		f(up.opt.Socket)
	}
	st, err := up.follow(ctx, h)
	if err == nil {
		up.exitOnce.Do(func() { close(up.exit) })
	}
	return st, err
}

func (up *Upgrader) options() C.weir_handover_options {
	var o C.weir_handover_options
	o.size = C.uint32_t(unsafe.Sizeof(o))
	if up.opt.ListenersOnly {
		o.flags = C.WEIR_HANDOVER_LISTENERS_ONLY
	}
	o.wait_ms = C.uint32_t(up.opt.Wait / time.Millisecond)
	o.deadline_ms = C.uint32_t(up.opt.Deadline / time.Millisecond)
	return o
}

// offer: under the engine's control lock, so it cannot cross a start or a
// shutdown (weir's offer is a control-thread call).
func (up *Upgrader) offer() (*C.weir_handover, error) {
	e := up.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopping {
		return nil, ErrShutdown
	}
	if !e.listening {
		return nil, &Error{Op: "weir_handover_offer", Code: int(C.WEIR_E_STATE)}
	}
	path := C.CString(up.opt.Socket)
	defer C.free(unsafe.Pointer(path))
	o := up.options()
	var h *C.weir_handover
	if rc := C.weir_handover_offer(e.ce, path, &o, &h); rc != 0 {
		return nil, codeErr("weir_handover_offer", rc)
	}
	return h, nil
}

// follow polls h until it ends, ctx ends or the engine goes (then the offer
// is withdrawn: everything stays here), and frees it.
func (up *Upgrader) follow(ctx context.Context, h *C.weir_handover) (UpgradeStats, error) {
	const tick = C.int64_t(20 * time.Millisecond)
	var err error
	for {
		rc := C.weir_handover_wait(h, tick)
		// -ETIMEDOUT is also what a handover that failed for a timeout
		// (no successor within Wait) returns: its state tells them apart.
		// The state may have ended just after the wait timed out: asked
		// again, the wait returns the ended handover's own code (0: Done).
		if rc == -C.ETIMEDOUT && handoverStats(h).State >= UpgradeDone {
			rc = C.weir_handover_wait(h, 0)
		}
		if rc != -C.ETIMEDOUT || handoverStats(h).State >= UpgradeDone {
			err = codeErr("handover", rc)
			break
		}
		if ctx.Err() != nil {
			err = ctx.Err()
			break
		}
		select {
		case <-up.wake:
			err = ErrShutdown
		default:
		}
		if err != nil {
			break
		}
	}
	st := handoverStats(h)
	C.weir_handover_free(h) // withdraws an offer not Done
	if err != nil && st.Err == nil {
		st.Err = err
	}
	up.remember(st)
	return st, err
}

func handoverStats(h *C.weir_handover) UpgradeStats {
	var s C.weir_handover_stats
	s.size = C.uint32_t(unsafe.Sizeof(s))
	C.weir_handover_stats_get(h, &s)
	st := UpgradeStats{State: UpgradeState(s.state), Listeners: uint32(s.listeners), Sent: uint64(s.sent),
		Returned: uint64(s.returned), Closed: uint64(s.closed), Received: uint64(s.received),
		Refused: uint64(s.refused), Lost: uint64(s.lost), Moving: time.Duration(s.moving_ns)}
	if s.error != 0 {
		st.Err = &Error{Op: "handover", Code: int(s.error)}
	}
	return st
}

func (up *Upgrader) remember(st UpgradeStats) {
	up.mu.Lock()
	up.last = &st
	up.mu.Unlock()
}

// Last is the ledger of the latest handover that ended on this Upgrader
// (offer or take-over), and whether there was one. Metrics carries it too.
func (up *Upgrader) Last() (UpgradeStats, bool) {
	up.mu.Lock()
	defer up.mu.Unlock()
	if up.last == nil {
		return UpgradeStats{}, false
	}
	return *up.last, true
}

// gate: a successor's Listen waits here for Ready.
func (up *Upgrader) gate(ctx context.Context) error {
	if up.opt.TakeOver == "" {
		return nil
	}
	select {
	case <-up.ready:
		return nil
	case <-ctx.Done():
		up.bindDone(ctx.Err())
		return ctx.Err()
	}
}

func (up *Upgrader) bindDone(err error) {
	up.boundOnce.Do(func() {
		up.bindErr = err
		close(up.bound)
	})
}

// listen: the take-over, with the engine's control lock held. Blocks until
// the listeners are ours (the connect is retried for up to Wait).
func (up *Upgrader) listen() (bool, error) {
	if up.opt.TakeOver == "" {
		return false, nil
	}
	path := C.CString(up.opt.TakeOver)
	defer C.free(unsafe.Pointer(path))
	o := up.options()
	var h *C.weir_handover
	if rc := C.weir_handover_take_over(up.e.ce, path, &o, &h); rc != 0 {
		err := codeErr("weir_handover_take_over", rc)
		up.tookSt = UpgradeStats{State: UpgradeFailed, Err: err}
		close(up.taken)
		up.bindDone(err)
		return false, err
	}
	up.mu.Lock()
	up.taking = true
	up.owners.Add(1)
	up.mu.Unlock()
	go up.watchTakeOver(h)
	up.bindDone(nil)
	return true, nil
}

// watchTakeOver owns the take-over's handle until it ends.
func (up *Upgrader) watchTakeOver(h *C.weir_handover) {
	defer up.owners.Done()
	st, _ := up.follow(context.Background(), h)
	up.mu.Lock()
	up.taking = false
	up.mu.Unlock()
	up.tookSt = st
	close(up.taken)
}

// release: the workers have stopped; the handles are freed before the
// engine (an offer still under way is withdrawn).
func (up *Upgrader) release() {
	up.mu.Lock()
	if !up.closing {
		up.closing = true
		close(up.wake)
	}
	up.mu.Unlock()
	up.owners.Wait()
	up.bindDone(ErrShutdown)
}
