package weir

import (
	"context"
	"fmt"
)

// attachment is what an Upgrader or a Systemd adds to an engine's life: it is
// attached before Listen, because the take-over and socket activation replace
// the bind, and the successor's readiness gate must hold Listen before the
// engine touches a listener.
type attachment interface {
	// gate blocks Listen until the attachment lets it bind (the successor's
	// Ready) or ctx ends. Called before the engine's control lock is taken, so
	// Metrics and Shutdown stay usable while it waits.
	gate(ctx context.Context) error
	// listen binds the listeners in its own way; false: it has nothing to
	// bind (no take-over, nothing passed by systemd) and the next way is tried.
	// Called with the control lock held, the engine created and not listening.
	listen() (bool, error)
	// release frees native handles once the workers have stopped, before
	// weir_engine_destroy.
	release()
}

func (e *Engine) attach(a attachment) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.listening || e.stopping {
		return fmt.Errorf("weir: %T must be attached before Listen: %w", a, ErrState)
	}
	e.attached = append(e.attached, a)
	return nil
}

func (e *Engine) attachments() []attachment {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]attachment(nil), e.attached...)
}

// gate runs every attachment's gate; if ctx ends first the engine, which
// never listened, is freed as a Shutdown would.
func (e *Engine) gate(ctx context.Context) error {
	for _, a := range e.attachments() {
		if err := a.gate(ctx); err != nil {
			e.begin(-1)
			<-e.stopped
			return err
		}
	}
	return nil
}

// bindAttached: with e.mu held.
func (e *Engine) bindAttached() (bool, error) {
	for _, a := range e.attached {
		if ok, err := a.listen(); err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

func (e *Engine) releaseAttached() {
	for _, a := range e.attachments() {
		a.release()
	}
}
