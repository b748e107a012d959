package weir

// Accept pause. libweir 0.1 has no weir_engine_begin_pause, weir_engine_pause
// or weir_engine_resume yet (the next issue adds them); until then these
// report ErrPauseUnsupported. Switching on is one change here: call the
// native functions under e.life.RLock when nativePause is true.
const nativePause = false

// BeginPauseAccept starts a pause and returns at once: each listener lingers
// (keeps accepting with TCP_DEFER_ACCEPT cleared) for Config.Linger, then
// closes. Existing connections are served on.
func (e *Engine) BeginPauseAccept() error { return e.pauseOp("begin") }

// PauseAccept is BeginPauseAccept plus a wait, bounded by linger + 1 s, until
// every listener has closed.
func (e *Engine) PauseAccept() error { return e.pauseOp("pause") }

// ResumeAccept ends a pause; a lingering listener is kept, never reopened.
func (e *Engine) ResumeAccept() error { return e.pauseOp("resume") }

func (e *Engine) pauseOp(string) error {
	if !nativePause {
		return ErrPauseUnsupported
	}
	return ErrPauseUnsupported
}
