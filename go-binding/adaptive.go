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
	"net"
	"strconv"
	"sync"
	"time"
)

// AdaptiveConfig tunes weir's adaptive controller (docs/adaptive.md). A zero
// field takes weir's default (weir_adaptive_config_init): one sample a
// second; up to io_uring at 64 connections per worker or 20,000 requests/s;
// down to epoll below 16 and 5,000 both; 3 samples in a row; no switch
// within 10 s of another, nor while more than 50 requests in 1000 fail; 3
// switches within a minute lock switching out for 5 minutes.
type AdaptiveConfig struct {
	Manual           bool          // no controller: only Switch switches
	Interval         time.Duration // one sample of the active engine per interval (10ms..60s)
	UpConns          uint64        // to io_uring at >= this many connections per worker ...
	UpRPS            uint64        // ... or at >= this many requests per second
	DownConns        uint64        // to epoll below this per worker ...
	DownRPS          uint64        // ... and below this rate
	MaxErrorPermille int           // no switch above this many errors per 1000 (< 0: none allowed)
	Hold             uint64        // samples in a row the load must ask
	Cooldown         time.Duration // no switch this long after any switch (< 0: none)
	FlapCount        uint64        // this many switches (at most 16) ...
	FlapWindow       time.Duration // ... within this window ...
	Lockout          time.Duration // ... lock switching out this long
	NoLockout        bool          // never lock switching out
	// OnSwitch, if set, is called after every switch (the controller's or
	// Switch's) with the backend now serving; on its own goroutine's time,
	// never under a lock.
	OnSwitch func(to Backend, byController bool)
}

func (ac *AdaptiveConfig) native() (C.weir_adaptive_config, error) {
	var k C.weir_adaptive_config
	C.weir_adaptive_config_init(&k)
	ms := func(d time.Duration) C.uint64_t { return C.uint64_t(d / time.Millisecond) }
	if ac.Interval != 0 {
		k.interval_ms = C.uint32_t(ac.Interval / time.Millisecond)
	}
	set := func(dst *C.uint64_t, v uint64) {
		if v != 0 {
			*dst = C.uint64_t(v)
		}
	}
	set(&k.up_conns, ac.UpConns)
	set(&k.up_rps, ac.UpRPS)
	set(&k.down_conns, ac.DownConns)
	set(&k.down_rps, ac.DownRPS)
	set(&k.hold, ac.Hold)
	set(&k.flap_count, ac.FlapCount)
	switch {
	case ac.MaxErrorPermille > 0:
		k.max_error_permille = C.uint64_t(ac.MaxErrorPermille)
	case ac.MaxErrorPermille < 0:
		k.max_error_permille = 0
	}
	switch {
	case ac.Cooldown > 0:
		k.cooldown_ms = ms(ac.Cooldown)
	case ac.Cooldown < 0:
		k.cooldown_ms = 0
	}
	if ac.FlapWindow > 0 {
		k.flap_window_ms = ms(ac.FlapWindow)
	}
	if ac.Lockout > 0 {
		k.lockout_ms = ms(ac.Lockout)
	}
	if ac.NoLockout {
		k.flap_count = 0
	}
	if why := C.weir_adaptive_config_error(&k); why != nil {
		return k, errors.New("weir: AdaptiveConfig: " + C.GoString(why))
	}
	return k, nil
}

// Adaptive serves one address with two engines, one on epoll and one on
// io_uring (a second epoll engine where the kernel refuses io_uring), the
// active one serving and the other paused, and switches them with
// Engine.SwitchTo: when weir's controller (in libweir, the same weir-demo
// uses) reads from the active engine's metrics that the load wants the
// other backend, or when Switch is called. Live connections move with
// every switch; none is closed. Its methods are safe for concurrent use.
type Adaptive struct {
	cfg    Config
	ac     AdaptiveConfig
	k      C.weir_adaptive_config
	first  *Engine // on cfg.Backend, active at the start
	second *Engine // the standby at the start; nil before Listen

	mu     sync.Mutex // guards ca, active, paused
	ca     *C.weir_adaptive
	active *Engine
	paused bool // accepting paused: no switch until ResumeAccept (adaptive_pause.go)
	quit   chan struct{}
	ran    chan struct{}
	once   sync.Once
}

// AdaptiveMetrics is the pair's state and both engines' metrics.
type AdaptiveMetrics struct {
	Active, Standby               Metrics // the engine serving now and the paused one
	ActiveBackend, StandbyBackend Backend
	Controller                    bool    // false with Manual
	Role                          Backend // the role the active engine holds (io_uring's even on a second epoll engine)
	Switches                      uint64  // switches made (the controller's and Switch's)
	SwitchFailures                uint64  // switches that failed (nothing moved)
	ControllerSwitches            uint64
	ForcedSwitches                uint64
	Decisions                     uint64 // samples taken
	Streak                        uint64 // samples in a row the load has asked for a switch
	HeldByCooldown                uint64
	HeldByErrors                  uint64
	HeldByLockout                 uint64
	Lockouts                      uint64
	LastReason                    string // weir's name: none, steady, hold, lockout, cooldown, errors, up, down
	LastConnsPerWorker            uint64
	LastRPS                       uint64
	LastErrorPermille             uint64
}

// NewAdaptive validates cfg and ac and creates the first engine, on
// cfg.Backend; the standby, on the other backend and the same port, is
// created by Listen. cfg.Listener cannot be used (each engine binds the
// address itself, SO_REUSEPORT).
func NewAdaptive(cfg Config, ac AdaptiveConfig) (*Adaptive, error) {
	if cfg.Listener != nil {
		return nil, errors.New("weir: Adaptive: Config.Listener cannot be shared by two engines; use Addr")
	}
	k, err := ac.native()
	if err != nil {
		return nil, err
	}
	e, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return &Adaptive{cfg: cfg, ac: ac, k: k, first: e, active: e, quit: make(chan struct{}), ran: make(chan struct{})}, nil
}

// Listen binds the first engine, starts the standby on its port (paused,
// after its linger), and serves until ctx ends (then shuts both down as
// Shutdown(context.Background()) would) or an engine fails.
func (a *Adaptive) Listen(ctx context.Context) error {
	if err := a.begin(ctx); err != nil {
		a.stopBoth(context.Background())
		return err
	}
	if f := a.cfg.OnListen; f != nil {
		f(a.Addr())
	}
	var fatal2 chan error
	if a.second != nil {
		fatal2 = a.second.fatal
	}
	select {
	case <-ctx.Done():
		return a.Shutdown(context.Background())
	case err := <-a.first.fatal:
		_ = a.stopBoth(context.Background())
		return err
	case err := <-fatal2:
		_ = a.stopBoth(context.Background())
		return err
	}
}

func (a *Adaptive) begin(ctx context.Context) error {
	base := context.WithoutCancel(ctx)
	a.first.ctx.Store(&base)
	if err := a.first.start(); err != nil {
		return err
	}
	addr, err := a.first.nativeAddr()
	if err != nil {
		return err
	}
	c := a.cfg
	c.Addr = net.JoinHostPort(addr.IP.String(), strconv.Itoa(addr.Port))
	c.Backend = BackendURing
	if a.cfg.Backend == BackendURing {
		c.Backend = BackendEpoll
	}
	second, err := New(c)
	if errors.Is(err, ErrUnavailable) && c.Backend == BackendURing {
		c.Backend = BackendEpoll // the io_uring role, in name, on a second epoll engine
		second, err = New(c)
	}
	if err != nil {
		return err
	}
	second.ctx.Store(&base)
	if err := second.start(); err != nil {
		a.mu.Lock()
		a.second = second
		a.mu.Unlock()
		return err
	}
	a.mu.Lock()
	a.second = second
	a.mu.Unlock()
	if err := second.PauseAccept(); err != nil && !errors.Is(err, &Error{Code: -int(C.ECANCELED)}) {
		return err
	}
	var kp *C.weir_adaptive_config
	if !a.ac.Manual {
		kp = &a.k
	}
	return withBoth(a.first, second, func(x, y *C.weir_engine) error {
		a.mu.Lock()
		defer a.mu.Unlock()
		rc := C.weir_adaptive_create(x, y, kp, &a.ca)
		if rc == 0 && kp != nil {
			go a.run()
		} else {
			close(a.ran)
		}
		return codeErr("weir_adaptive_create", rc)
	})
}

// run ticks the controller when a sample is due.
func (a *Adaptive) run() {
	defer close(a.ran)
	for {
		a.mu.Lock()
		ms := -1
		if a.ca != nil {
			ms = int(C.weir_adaptive_timeout_ms(a.ca))
		}
		a.mu.Unlock()
		if ms < 0 {
			return
		}
		t := time.NewTimer(time.Duration(ms) * time.Millisecond)
		select {
		case <-a.quit:
			t.Stop()
			return
		case <-t.C:
		}
		a.op(true)
	}
}

// op ticks (tick) or switches; it follows the active engine and reports a
// switch to OnSwitch.
func (a *Adaptive) op(tick bool) error {
	a.mu.Lock()
	if a.ca == nil || a.second == nil {
		a.mu.Unlock()
		return ErrShutdown
	}
	if a.paused && pairPauseHolds.Load() { // the operator's pause holds every switch
		a.mu.Unlock()
		if tick {
			return nil
		}
		return ErrPairPaused
	}
	var to *Engine
	err := withBoth(a.first, a.second, func(_, _ *C.weir_engine) error {
		var rc C.int
		if tick {
			rc = C.weir_adaptive_tick(a.ca)
		} else {
			rc = C.weir_adaptive_switch(a.ca)
		}
		if rc < 0 {
			return codeErr(map[bool]string{true: "weir_adaptive_tick", false: "weir_adaptive_switch"}[tick], rc)
		}
		if rc == 1 || !tick {
			var act *C.weir_engine
			C.weir_adaptive_engines(a.ca, &act, nil)
			if act == a.first.ce {
				a.active = a.first
			} else {
				a.active = a.second
			}
			to = a.active
		}
		return nil
	})
	a.mu.Unlock()
	if to != nil && a.ac.OnSwitch != nil {
		a.ac.OnSwitch(to.Type(), tick)
	}
	return err
}

// Switch moves every connection to the standby now, whatever the controller
// says (an operator's SIGWINCH); the controller counts it toward its
// cooldown and flapping. ErrShutdown before Listen or after Shutdown,
// ErrPairPaused while accepting is paused (PauseAccept), weir_engine_switch's
// error otherwise (nothing swapped).
func (a *Adaptive) Switch() error { return a.op(false) }

// Active is the engine serving now; Standby the paused one (nil before
// Listen). Both change at every switch.
func (a *Adaptive) Active() *Engine {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.active
}

// Standby is the paused engine (nil before Listen).
func (a *Adaptive) Standby() *Engine {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.second == nil {
		return nil
	}
	if a.active == a.first {
		return a.second
	}
	return a.first
}

// Addr is the address both engines listen on, nil before Listen bound it.
func (a *Adaptive) Addr() net.Addr { return a.first.Addr() }

// Metrics reads the pair's state and both engines' metrics; any goroutine,
// any time.
func (a *Adaptive) Metrics() AdaptiveMetrics {
	var m AdaptiveMetrics
	act, sb := a.Active(), a.Standby()
	m.Active = act.Metrics()
	m.ActiveBackend = act.Type()
	if sb != nil {
		m.Standby = sb.Metrics()
		m.StandbyBackend = sb.Type()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ca == nil {
		return m
	}
	var st C.weir_adaptive_state
	st.size = C.sizeof_weir_adaptive_state
	if C.weir_adaptive_state_get(a.ca, &st) != 0 {
		return m
	}
	m.Controller = st.controller != 0
	m.Role = BackendEpoll
	if st.role == C.WEIR_BACKEND_URING {
		m.Role = BackendURing
	}
	m.Switches = uint64(st.switches)
	m.SwitchFailures = uint64(st.switch_failures)
	m.ControllerSwitches = uint64(st.controller_switches)
	m.ForcedSwitches = uint64(st.forced_switches)
	m.Decisions = uint64(st.decisions)
	m.Streak = uint64(st.streak)
	m.HeldByCooldown = uint64(st.held_by_cooldown)
	m.HeldByErrors = uint64(st.held_by_errors)
	m.HeldByLockout = uint64(st.held_by_lockout)
	m.Lockouts = uint64(st.lockouts)
	m.LastReason = C.GoString(C.weir_adaptive_reason_name(st.last_reason))
	m.LastConnsPerWorker = uint64(st.last_conns_per_worker)
	m.LastRPS = uint64(st.last_rps)
	m.LastErrorPermille = uint64(st.last_error_permille)
	return m
}

// Shutdown stops the controller, frees the pair (before either engine) and
// shuts both engines down as Engine.Shutdown does, concurrently; it returns
// the first error.
func (a *Adaptive) Shutdown(ctx context.Context) error { return a.stopBoth(ctx) }

func (a *Adaptive) stopBoth(ctx context.Context) error {
	a.once.Do(func() {
		close(a.quit)
		a.mu.Lock()
		started := a.ca != nil
		a.mu.Unlock()
		if started {
			<-a.ran
		}
		a.mu.Lock()
		if a.ca != nil {
			C.weir_adaptive_destroy(a.ca)
			a.ca = nil
		}
		a.mu.Unlock()
	})
	a.mu.Lock()
	engines := []*Engine{a.first}
	if a.second != nil {
		engines = append(engines, a.second)
	}
	a.mu.Unlock()
	errs := make(chan error, len(engines))
	for _, e := range engines {
		go func(e *Engine) { errs <- e.Shutdown(ctx) }(e)
	}
	var first error
	for range engines {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}
