package weir

/*
#include <weir.h>
*/
import "C"

// Accept pause: libweir's weir_engine_begin_pause, weir_engine_pause and
// weir_engine_resume (docs/pause.md). The native workers act on a pause when
// their goroutines next poll (at most Config.PollTimeout later).

// BeginPauseAccept starts a pause and returns at once: each listener lingers
// (keeps accepting with TCP_DEFER_ACCEPT cleared) for Config.Linger, then
// closes. Existing connections are served on. Repeated calls are harmless.
// Errors: ErrState before Listen, ErrShutdown once shutting down.
func (e *Engine) BeginPauseAccept() error { return e.pauseOp("begin") }

// PauseAccept is BeginPauseAccept plus a wait, bounded by Config.Linger + 1 s,
// until every listener has closed. It returns nil once they all closed, an
// *Error with -ECANCELED (errors.Is(err, syscall.ECANCELED)) when
// ResumeAccept was called meanwhile, ErrShutdown when the engine shut down
// (a shutdown releases the wait at once), or -ETIMEDOUT when the bound passed.
func (e *Engine) PauseAccept() error { return e.pauseOp("pause") }

// ResumeAccept ends a pause: a lingering listener gets TCP_DEFER_ACCEPT back
// on the same socket; a closed one is reopened on the same address.
func (e *Engine) ResumeAccept() error { return e.pauseOp("resume") }

func (e *Engine) pauseOp(op string) error {
	// The read lock keeps the native engine alive across the call; a
	// shutdown releases a waiting PauseAccept at once, so destroy is not held
	// up for long.
	e.life.RLock()
	defer e.life.RUnlock()
	if e.ce == nil {
		return ErrShutdown
	}
	switch op {
	case "begin":
		return codeErr("weir_engine_begin_pause", C.weir_engine_begin_pause(e.ce))
	case "pause":
		return codeErr("weir_engine_pause", C.weir_engine_pause(e.ce))
	default:
		return codeErr("weir_engine_resume", C.weir_engine_resume(e.ce))
	}
}
