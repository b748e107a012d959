package weirceleris

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/goceleris/celeris/engine"
	"github.com/goceleris/celeris/protocol/h2/stream"
	"github.com/goceleris/celeris/resource"
	weir "github.com/weir-http/weir/go-binding"
)

// ErrNotServed wraps every refusal of a celeris configuration weir cannot
// serve as configured (Factory): celeris.Server.Start returns it, wrapped,
// naming the field.
var ErrNotServed = errors.New("weirceleris: not served by weir")

// Factory returns an engine factory for celeris's Config.EngineFactory, the
// hook that patches/celeris-v1.5.8-engine-factory.patch adds (stock celeris
// has none: its engine choice is a closed switch). With it a whole
// celeris.Server (router, middleware, Context) runs on weir:
//
//	srv := celeris.New(celeris.Config{Addr: ":8080",
//		Engine: celeris.Epoll, // Protocol: Auto, HTTP/1.1 and h2c
//		EngineFactory: weirceleris.Factory(weir.Config{})})
//
// The server is served as configured or refused when it starts, never
// served otherwise (docs/go.md, "celeris"). cfg arrives resolved, as
// celeris.Server hands it (resource.Config.WithDefaults applied: a zero
// timeout there means none); a caller outside a Server resolves it first.
//
//   - Protocol is weir's Protocols: HTTP1 (HTTP/1.1 only), H2C (HTTP/2 in
//     cleartext by prior knowledge only) and Auto, celeris's default, both
//     on one port, told apart by the first bytes; under Auto weir also
//     takes Upgrade: h2c, so EnableH2Upgrade is served with Auto (where
//     celeris resolves it true) and refused with HTTP1 or H2C, and its
//     explicit false with Auto is refused (weir cannot turn it off). An
//     HTTP/2 request reaches the handler as a stream whose ProtoMajor is 2
//     (Context.Protocol() "2"). MaxConcurrentStreams (at most 10000 in
//     weir) and InitialWindowSize are weir's H2MaxStreams and
//     H2StreamWindow; MaxFrameSize has no weir knob: weir keeps HTTP/2's
//     16 KiB, which every client honours.
//   - Engine Epoll and IOUring choose weir's backend; unset (only outside a
//     Server) keeps base.Backend. Adaptive (celeris's default on Linux) is
//     weir's adaptive pair (weir.NewAdaptive): an epoll and an io_uring
//     engine on one port, starting on base.Backend, switched by weir's
//     controller at its default thresholds (docs/adaptive.md); where the
//     kernel refuses io_uring, its role runs on a second epoll engine (still
//     served, logged as a warning). A Listener is refused with it (each
//     engine binds the address). Std is net/http, not weir.
//   - ReadHeaderTimeout is weir's HeaderTimeout, ReadTimeout its
//     BodyTimeout and WriteTimeout its WriteTimeout (each, as in celeris's
//     epoll engine, a wait without progress), IdleTimeout its IdleTimeout;
//     none (0 once resolved) is weir's longest, 2^32-1 ms (49.7 days).
//   - MaxHeaderBytes and MaxRequestBodySize (0 once resolved: none) are
//     weir's MaxHeaderBytes and MaxBody; Resources.Workers, BufferSize and
//     MaxConns (0: none) its Workers, ReadBufferSize and MaxConnections.
//   - DisableKeepAlive closes each connection after its answer;
//     OnExpectContinue decides each "Expect: 100-continue" request before
//     its body is read (false: 417, and the body is never sent); Logger
//     gets the engine's start, stop and handler errors.
//   - AsyncHandlers, which celeris sets when any route is marked async
//     (Route.Async), is honoured per route: handlers run inline on their
//     worker's goroutine, and a request whose route celeris resolves as
//     async (its AsyncRouteResolver) hands the worker on before its handler
//     runs (weir.ResponseWriter.HandOff), so it may block and sync routes
//     pay nothing. AsyncHandlers with no route marked (the server's default
//     alone), or a handler that resolves no routes, runs every handler on a
//     goroutine of its own (weir's Async). base.Async keeps that for all.
//   - OnConnect and OnDisconnect are weir's (weir's on_conn): called with the
//     client's address on the worker's goroutine, once at the accept and
//     once at the close (a connection Adaptive moves between its engines is
//     neither). SocketRecv and SocketSend (no such knob in weir) are refused
//     when set.
//
// base is weir's own configuration; the fields celeris's configuration
// names override base's (Addr and Listener only where base has neither).
// WorkloadHint acts as in
// celeris's own Adaptive, on the start alone: WorkloadHighConcurrency starts
// the pair on io_uring (on epoll where the kernel refuses io_uring), any
// other hint on base.Backend; from then on weir's controller decides from
// the load it measures. With Epoll or IOUring it is ignored, as celeris's
// own engines ignore it. MemoryLimitBytes is applied by celeris.Server.
func Factory(base weir.Config) func(resource.Config, stream.Handler) (engine.Engine, error) {
	return func(cfg resource.Config, h stream.Handler) (engine.Engine, error) {
		c, o, err := translate(base, cfg, h)
		if err != nil {
			return nil, err
		}
		return newEngine(c, h, o)
	}
}

// options are the celeris settings weir's Config has no field for: the
// engine applies them per exchange.
type options struct {
	closeEach  bool // DisableKeepAlive
	adaptive   bool // Engine: Adaptive, on weir's adaptive pair
	onExpect   func(method, path string, headers [][2]string) bool
	logger     *slog.Logger
	routeAsync routeAsync // per-route async (route_async.go); nil: none
}

// longest is weir's longest deadline, the stand-in for celeris's "none".
const longest = time.Duration(math.MaxUint32) * time.Millisecond

func refuse(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrNotServed}, a...)...)
}

func translate(base weir.Config, cfg resource.Config, h stream.Handler) (weir.Config, options, error) {
	c := base
	var o options
	switch cfg.Protocol {
	case engine.HTTP1:
		c.Protocols = weir.ProtocolsHTTP1
		if cfg.EnableH2Upgrade {
			return c, o, refuse("EnableH2Upgrade with Protocol http1: weir takes Upgrade: h2c only when it " +
				"speaks both; set Protocol: celeris.Auto")
		}
	case engine.Auto:
		c.Protocols = weir.ProtocolsAuto
		if !cfg.EnableH2Upgrade {
			return c, o, refuse("EnableH2Upgrade false with Protocol auto: weir's auto always takes " +
				"Upgrade: h2c; leave it unset, or set Protocol: celeris.HTTP1")
		}
	case engine.H2C:
		c.Protocols = weir.ProtocolsH2C
		if cfg.EnableH2Upgrade {
			return c, o, refuse("EnableH2Upgrade with Protocol h2c: an upgrade starts as HTTP/1.1, which h2c " +
				"alone does not speak; set Protocol: celeris.Auto")
		}
	default: // unset: only a caller outside celeris.Server, which resolves it to Auto
		return c, o, refuse("Protocol unset: resolve the config first (resource.Config.WithDefaults: Auto)")
	}
	if cfg.MaxConcurrentStreams > 10000 {
		return c, o, refuse("MaxConcurrentStreams %d: weir allows at most 10000 streams a connection",
			cfg.MaxConcurrentStreams)
	}
	c.H2MaxStreams = int(cfg.MaxConcurrentStreams) // resolved: 100 by default
	c.H2StreamWindow = int(cfg.InitialWindowSize)  // resolved: 1 MiB; celeris bounds it at 2^31-1
	switch {
	case cfg.Engine.IsDefault():
	case cfg.Engine == engine.Epoll || cfg.Engine == engine.IOUring:
		want := weir.BackendEpoll
		if cfg.Engine == engine.IOUring {
			want = weir.BackendURing
		}
		if base.Backend != weir.BackendEpoll && base.Backend != want {
			return c, o, refuse("Engine %s, but the weir.Config given to Factory names backend %s", cfg.Engine, base.Backend)
		}
		c.Backend = want
	case cfg.Engine == engine.Adaptive:
		o.adaptive = true // the pair starts on base.Backend (epoll unless base names io_uring) ...
		if cfg.Resources.WorkloadHint == resource.WorkloadHighConcurrency {
			c.Backend = weir.BackendURing // ... or on io_uring at the hint, as celeris's Adaptive starts
		}
	default:
		return c, o, refuse("Engine %s: weir is a native engine (epoll or io_uring)", cfg.Engine)
	}
	if cfg.OnConnect != nil { // on the worker's goroutine, at the accept, as celeris's engines call it
		c.OnConnect = cfg.OnConnect
	}
	if cfg.OnDisconnect != nil { // ... and once at the close, whatever closed it
		c.OnDisconnect = cfg.OnDisconnect
	}
	if cfg.Resources.SocketRecv != 0 || cfg.Resources.SocketSend != 0 {
		return c, o, refuse("SocketRecvBuf/SocketSendBuf: weir sets no socket buffer sizes")
	}
	if cfg.MaxHeaderBytes > 1<<30 {
		return c, o, refuse("MaxHeaderBytes %d: weir's largest header section is 1 GiB", cfg.MaxHeaderBytes)
	}

	if c.Addr == "" && c.Listener == nil {
		c.Addr = cfg.Addr
		c.Listener = cfg.Listener // weir serves its socket and closes it, as celeris's engines do
	}
	if o.adaptive && c.Listener != nil {
		return c, o, refuse("Listener with Engine adaptive: weir's adaptive pair binds its address twice " +
			"(SO_REUSEPORT), one socket per engine; set Addr, or Engine: celeris.Epoll or celeris.IOUring")
	}
	if cfg.Resources.Workers > 0 {
		c.Workers = cfg.Resources.Workers
	}
	if cfg.Resources.BufferSize > 0 {
		c.ReadBufferSize = cfg.Resources.BufferSize
	}
	c.MaxConnections = cfg.Resources.MaxConns
	if c.MaxConnections <= 0 {
		c.MaxConnections = math.MaxUint32 // celeris's 0: no limit
	}
	orNone := func(d time.Duration) time.Duration {
		if d <= 0 {
			return longest
		}
		return d
	}
	c.HeaderTimeout = orNone(cfg.ReadHeaderTimeout)
	c.BodyTimeout = orNone(cfg.ReadTimeout)
	c.WriteTimeout = orNone(cfg.WriteTimeout)
	c.IdleTimeout = orNone(cfg.IdleTimeout)
	if cfg.MaxHeaderBytes > 0 {
		c.MaxHeaderBytes = cfg.MaxHeaderBytes
	}
	c.MaxBody = cfg.MaxRequestBodySize
	if c.MaxBody <= 0 {
		c.MaxBody = -1 // celeris's resolved 0: no limit
	}

	o.closeEach = cfg.DisableKeepAlive
	o.logger = cfg.Logger
	if cfg.OnExpectContinue != nil {
		o.onExpect = cfg.OnExpectContinue
		// Expect: 100-continue requests reach the handler at their head
		// (weir holds the 100 until the first body read); other bodies
		// under this stay buffered.
		if c.StreamBodyBytes <= 0 {
			c.StreamBodyBytes = math.MaxInt64
		}
	}
	// celeris sets AsyncHandlers when any route is async (Route.Async), and
	// a user sets it as the server's default. With routes marked and a
	// resolver to ask, handlers stay inline and each async route's request
	// hands off (route_async.go), as celeris's own engines decide per
	// route. Without either (AsyncHandlers as the default alone), every
	// handler runs on a goroutine of its own (weir's Async).
	if cfg.AsyncHandlers && !c.Async {
		if r, ok := h.(stream.AsyncRouteResolver); ok && r.HasAsyncRoutes() {
			o.routeAsync = r.RouteAsync
		} else {
			c.Async = true
		}
	}
	return c, o, nil
}
