package weir

import (
	"errors"
	"net"
	"testing"
	"time"
)

// refused says whether a new connection to addr is refused (nobody listens).
func refused(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
		return false
	}
	return true
}

// The pair's accept pause holds (the rule): once PauseAccept returns, new
// connections are refused, a Switch is refused too (ErrPairPaused) and
// leaves them refused, the clients already connected are served on; after
// ResumeAccept new clients are served and Switch works again.
func TestAdaptivePauseAcceptHoldsSwitches(t *testing.T) {
	a, addr := startAdaptive(t, AdaptiveConfig{Manual: true}, 1)
	cl := idleClients(t, addr, 2)
	if err := a.PauseAccept(); err != nil {
		t.Fatalf("PauseAccept: %v", err)
	}
	if !a.Paused() || !refused(addr) {
		t.Fatalf("paused %v: a new connection was accepted", a.Paused())
	}
	if err := a.Switch(); !errors.Is(err, ErrPairPaused) {
		t.Fatalf("Switch while paused: %v, want ErrPairPaused", err)
	}
	if !refused(addr) {
		t.Fatal("after the refused Switch a new connection was accepted")
	}
	for _, c := range cl { // the connected are served on
		c.send(get("/during"))
		c.read("GET")
	}
	if err := a.ResumeAccept(); err != nil {
		t.Fatalf("ResumeAccept: %v", err)
	}
	waitFor(t, "accepting after ResumeAccept", func() bool { return !refused(addr) })
	idleClients(t, addr, 1)
	if err := a.Switch(); err != nil {
		t.Fatalf("Switch after ResumeAccept: %v", err)
	}
	idleClients(t, addr, 1)
	for _, c := range cl {
		c.send(get("/after"))
		c.read("GET")
	}
}

// The arm that must lose: with the hold off (pairPauseHolds), a Switch
// during the pause resumes the engine it moves to, and a new client is
// accepted though the operator paused accepting.
func TestAdaptivePauseWithoutHoldIsUndone(t *testing.T) {
	pairPauseHolds.Store(false)
	defer pairPauseHolds.Store(true)
	a, addr := startAdaptive(t, AdaptiveConfig{Manual: true}, 1)
	if err := a.PauseAccept(); err != nil {
		t.Fatalf("PauseAccept: %v", err)
	}
	if !refused(addr) {
		t.Fatal("paused: a new connection was accepted")
	}
	if err := a.Switch(); err != nil {
		t.Fatalf("Switch without the hold: %v", err)
	}
	// The loss: accepting comes back by itself though the operator paused it.
	waitFor(t, "the switch resuming accepting (the arm's loss)", func() bool { return !refused(addr) })
}
