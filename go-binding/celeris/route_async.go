package weirceleris

import weir "github.com/weir-http/weir/go-binding"

// Per-route async: celeris marks a route async (Route.Async, RouteGroup.Async)
// for a handler that may block, and sets AsyncHandlers on the engine's
// configuration when any route is so marked. weir then keeps its handlers
// inline, and a request whose route celeris resolves as async
// (stream.AsyncRouteResolver.RouteAsync, as celeris's own epoll and io_uring
// engines ask it) hands its worker on (weir.ResponseWriter.HandOff) before its
// handler runs: the handler may block on a goroutine of its own while a new
// goroutine drives the worker. A sync route's request runs on the worker's
// goroutine and pays no hand-off.

// routeAsync is celeris's resolver: whether the route of method and path (the
// target without its query) runs async. nil: no route is marked (all run
// inline), or weir's Async runs every handler on a goroutine of its own.
type routeAsync func(method, path string) bool

// handOffAsync hands the worker on when r's route is async. A no-op for a
// sync route and on an Async engine (HandOff is one there).
func (e *Engine) handOffAsync(r *weir.Request, w *weir.ResponseWriter) {
	if f := e.opts.routeAsync; f != nil && f(r.Method(), pathOf(r.Target())) {
		if err := w.HandOff(); err != nil {
			// Only off the handler's own goroutine, which serve never is:
			// the handler runs inline, as a sync route would.
			e.errs.Add(1)
			if l := e.opts.logger; l != nil {
				l.Error("weir: async route not handed off", "err", err)
			}
		}
	}
}
