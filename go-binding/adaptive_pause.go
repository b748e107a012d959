package weir

import (
	"errors"
	"sync/atomic"
)

// The pair's accept pause. A switch is itself a pause of one engine and a
// resume of the other, so an operator's pause must also hold the switches:
// while the pair is paused the controller's ticks are skipped (its samples
// resume with ResumeAccept) and Switch returns ErrPairPaused. The active
// engine pauses as Engine.PauseAccept does (its listeners linger for
// Config.Linger, then close); the standby's listener is closed already.

// pairPauseHolds is the rule's switch: off (tests only, the negative arm)
// a paused pair still switches, and the switch resumes accepting.
var pairPauseHolds = func() *atomic.Bool { var b atomic.Bool; b.Store(true); return &b }()

// ErrPairPaused: Switch on an Adaptive whose accepting is paused; call
// ResumeAccept first (a switch would resume the engine it moves to).
var ErrPairPaused = errors.New("weir: Adaptive: accepting is paused; ResumeAccept before a switch")

// BeginPauseAccept starts the active engine's pause and holds the switches;
// it returns at once. ErrShutdown before Listen or after Shutdown.
func (a *Adaptive) BeginPauseAccept() error {
	act, err := a.holdSwitches()
	if err != nil {
		return err
	}
	return act.BeginPauseAccept()
}

// PauseAccept is BeginPauseAccept plus Engine.PauseAccept's wait until the
// active engine's listeners have closed.
func (a *Adaptive) PauseAccept() error {
	act, err := a.holdSwitches()
	if err != nil {
		return err
	}
	return act.PauseAccept()
}

// ResumeAccept resumes the active engine's listeners (the same sockets while
// they linger, reopened once closed) and lets the switches run again.
func (a *Adaptive) ResumeAccept() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ca == nil || a.second == nil {
		return ErrShutdown
	}
	if err := a.active.ResumeAccept(); err != nil {
		return err
	}
	a.paused = false
	return nil
}

// Paused says whether the pair's accepting is paused (switches held).
func (a *Adaptive) Paused() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.paused
}

// holdSwitches marks the pair paused under the lock every switch takes, so
// no switch runs between the mark and the pause, and returns the engine to
// pause.
func (a *Adaptive) holdSwitches() (*Engine, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ca == nil || a.second == nil {
		return nil, ErrShutdown
	}
	a.paused = true
	return a.active, nil
}
