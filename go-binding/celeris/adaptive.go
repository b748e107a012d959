package weirceleris

import (
	"fmt"
	"log/slog"
	"net"

	weir "github.com/weir-http/weir/go-binding"
)

// celeris's Engine: Adaptive runs on weir's adaptive pair (weir.NewAdaptive):
// an epoll and an io_uring engine on one port, the active one serving, the
// other paused, switched by weir's controller at its default thresholds
// (docs/adaptive.md). Where the kernel refuses io_uring the pair's io_uring
// role runs on a second epoll engine (weir's own fallback, as celeris's
// Adaptive falls back to epoll): still served, logged as such (logPair), and
// Type stays Adaptive, since the controller still runs and switches.

// Adaptive is weir's adaptive pair under this engine, nil unless it was made
// for celeris's Engine: Adaptive. Its Switch moves every connection to the
// standby now; its Metrics give the controller's state.
func (e *Engine) Adaptive() *weir.Adaptive { return e.a }

// onSwitch logs each switch of the pair (the controller's and Switch's).
func (o *options) onSwitch() func(to weir.Backend, byController bool) {
	l := o.logger
	if l == nil {
		return nil
	}
	return func(to weir.Backend, byController bool) {
		by := "Switch"
		if byController {
			by = "controller"
		}
		l.Info("weir adaptive switch", "to", to.String(), "by", by)
	}
}

// logPair says which engines the pair runs on once both are up; a pair
// without io_uring is a warning, not an error: it serves, on epoll alone.
func (e *Engine) logPair(l *slog.Logger, addr net.Addr) {
	m := e.a.Metrics()
	engines := fmt.Sprintf("%s+%s", m.ActiveBackend, m.StandbyBackend)
	if m.ActiveBackend == m.StandbyBackend {
		l.Warn("weir engine listening: io_uring unavailable, the adaptive pair's io_uring role runs on a "+
			"second epoll engine", "addr", addr.String(), "backend", "adaptive", "engines", engines)
		return
	}
	l.Info("weir engine listening", "addr", addr.String(), "backend", "adaptive", "engines", engines)
}

// pairMetrics is both engines' metrics summed: each connection and each
// exchange is counted by the engine that held it (a switch moves
// connections without closing or accepting them), so the sums count each
// once. Workers is the active engine's: the standby's are paused.
func pairMetrics(a *weir.Adaptive) weir.Metrics {
	am := a.Metrics()
	m, s := am.Active, am.Standby
	m.Accepted += s.Accepted
	m.Requests += s.Requests
	m.ConnectionsOpen += s.ConnectionsOpen
	m.Panics += s.Panics
	m.BytesIn += s.BytesIn
	m.BytesOut += s.BytesOut
	for i := range m.Closes {
		m.Closes[i] += s.Closes[i]
	}
	return m
}
