package weirceleris

import (
	"github.com/goceleris/celeris/engine"
	weir "github.com/weir-http/weir/go-binding"
)

// normalEnd names the close reasons (weir's own names, weir_close_reason_name)
// that end a connection as HTTP means it to end; every other counted close
// is an error in celeris's ErrorCount. An upgrade's close ("upgraded": the
// connection left weir after its 101) and a hand-over's are no error.
var normalEnd = map[string]bool{
	"peer":           true, // the client closed
	"not_keep_alive": true, // Connection: close, HTTP/1.0
	"idle_timeout":   true, // keep-alive wait ran out
	"shutdown":       true,
	"handler":        true, // the answer asked for close (DisableKeepAlive, Connection: close)
	"upgraded":       true,
}

// Metrics maps weir's counters onto celeris's: closes by weir's reason
// names (CloseReasonName), so a reason weir adds later counts as an error
// until it is named here. On the adaptive pair they are both engines'
// (pairMetrics).
func (e *Engine) Metrics() engine.EngineMetrics {
	var m weir.Metrics
	if e.a != nil {
		m = pairMetrics(e.a)
	} else {
		m = e.w.Metrics()
	}
	var closes, errs uint64
	for i, n := range m.Closes {
		closes += n
		if n != 0 && !normalEnd[weir.CloseReasonName(i)] {
			errs += n
		}
	}
	var asyncRoutes int
	if r, ok := e.handler.(interface{ AsyncRouteCount() int }); ok {
		asyncRoutes = r.AsyncRouteCount() // celeris's router: its routes marked Async
	}
	return engine.EngineMetrics{
		AsyncRoutes:       asyncRoutes,
		RequestCount:      m.Requests,
		ActiveConnections: int64(m.ConnectionsOpen),
		ErrorCount:        errs + m.Panics + e.errs.Load(),
		Workers:           m.Workers,
		AcceptCount:       m.Accepted,
		CloseCount:        closes,
		BytesRead:         m.BytesIn,
		BytesWritten:      m.BytesOut,
	}
}
