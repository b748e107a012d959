// Package weirceleris runs celeris handlers on weir: an Engine that
// satisfies celeris's engine.Engine and engine.AcceptController and serves a
// celeris stream.Handler the way celeris's own net/http engine does
// (engine/std/bridge.go): it builds H1 streams with stream.NewH1Stream and
// implements stream.ResponseWriter and stream.Streamer over weir's answers.
// Factory translates a celeris configuration into weir's, or refuses it.
package weirceleris

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"

	"github.com/goceleris/celeris/engine"
	"github.com/goceleris/celeris/protocol/h2/stream"
	weir "github.com/weir-http/weir/go-binding"
)

// Engine is a weir engine, or weir's adaptive pair (Factory, Engine:
// Adaptive), serving a celeris stream.Handler.
type Engine struct {
	w       *weir.Engine   // nil on the pair
	a       *weir.Adaptive // nil on one engine
	handler stream.Handler
	opts    options
	errs    atomic.Uint64
	pairUp  atomic.Bool // the pair made (weir.Adaptive's OnListen): Addr waits for it
	ctx     atomic.Pointer[context.Context]
}

var (
	_ engine.Engine           = (*Engine)(nil)
	_ engine.AcceptController = (*Engine)(nil)
)

// New creates the engine; cfg is weir's (its Handler and HTTP must be unset).
// Celeris handlers may block, so cfg.Async is worth setting for them.
// Factory is the way from a celeris configuration.
func New(cfg weir.Config, h stream.Handler) (*Engine, error) {
	return newEngine(cfg, h, options{})
}

func newEngine(cfg weir.Config, h stream.Handler, o options) (*Engine, error) {
	e := &Engine{handler: h, opts: o}
	cfg.Handler = e.serve
	cfg.HTTP = nil
	cfg.PeerAddrs = true
	if l := o.logger; l != nil {
		backend, onListen := cfg.Backend, cfg.OnListen
		cfg.OnListen = func(a net.Addr) {
			if e.a != nil {
				e.logPair(l, a)
			} else {
				l.Info("weir engine listening", "addr", a.String(), "backend", backend.String())
			}
			if onListen != nil {
				onListen(a)
			}
		}
	}
	if o.adaptive {
		onListen := cfg.OnListen
		cfg.OnListen = func(a net.Addr) {
			e.pairUp.Store(true)
			if onListen != nil {
				onListen(a)
			}
		}
		ac := weir.AdaptiveConfig{OnSwitch: o.onSwitch()}
		a, err := weir.NewAdaptive(cfg, ac)
		if errors.Is(err, weir.ErrUnavailable) && cfg.Backend == weir.BackendURing {
			cfg.Backend = weir.BackendEpoll // WorkloadHighConcurrency's start, without io_uring
			a, err = weir.NewAdaptive(cfg, ac)
		}
		if err != nil {
			return nil, err
		}
		e.a = a
		return e, nil
	}
	w, err := weir.New(cfg)
	if err != nil {
		return nil, err
	}
	e.w = w
	return e, nil
}

// Weir is the underlying weir engine; on the adaptive pair, the one serving
// now (it changes at every switch: Adaptive is the pair).
func (e *Engine) Weir() *weir.Engine {
	if e.a != nil {
		return e.a.Active()
	}
	return e.w
}

// Listen binds and serves until ctx ends (then shuts down gracefully).
func (e *Engine) Listen(ctx context.Context) error {
	e.ctx.Store(&ctx)
	var err error
	if e.a != nil {
		err = e.a.Listen(ctx)
	} else {
		err = e.w.Listen(ctx)
	}
	if l := e.opts.logger; l != nil {
		l.Info("weir engine stopped", "err", err)
	}
	return err
}

// Shutdown drains in-flight exchanges until ctx's deadline (both engines'
// on the pair).
func (e *Engine) Shutdown(ctx context.Context) error {
	if e.a != nil {
		return e.a.Shutdown(ctx)
	}
	return e.w.Shutdown(ctx)
}

// Addr is the bound address, nil until bound; on the pair, nil until both
// engines serve and the pair is made (its first engine binds earlier), so a
// caller that waits for Addr (celeris.Server.Addr) can Switch at once.
func (e *Engine) Addr() net.Addr {
	if e.a != nil {
		if !e.pairUp.Load() {
			return nil
		}
		return e.a.Addr()
	}
	return e.w.Addr()
}

// Type is the I/O model weir runs this engine on, in celeris's names:
// Adaptive for weir's adaptive pair, else epoll or io_uring. These are
// weir's engines, not celeris's engines of those names (celeris has no
// EngineType for an outside engine); Std is never reported, as weir refuses
// it (Factory).
func (e *Engine) Type() engine.EngineType {
	if e.a != nil {
		return engine.Adaptive
	}
	return EngineTypeOf(e.w.Type())
}

// EngineTypeOf is a weir backend in celeris's names: io_uring is IOUring,
// every other backend (epoll, the default) Epoll, the only other I/O model
// celeris has a name for.
func EngineTypeOf(b weir.Backend) engine.EngineType {
	if b == weir.BackendURing {
		return engine.IOUring
	}
	return engine.Epoll
}

// PauseAccept, ResumeAccept and BeginPauseAccept are weir's accept pause;
// PauseAccept lingers (Config.Linger) before the listeners close, so clients
// that connected and have not spoken yet are not reset (docs/pause.md). On
// the adaptive pair they pause the active engine and hold the pair's
// switches until ResumeAccept (weir.Adaptive.PauseAccept), since a switch
// would resume the engine it moves to.
func (e *Engine) PauseAccept() error {
	if e.a != nil {
		return e.a.PauseAccept()
	}
	return e.w.PauseAccept()
}

func (e *Engine) ResumeAccept() error {
	if e.a != nil {
		return e.a.ResumeAccept()
	}
	return e.w.ResumeAccept()
}

func (e *Engine) BeginPauseAccept() error {
	if e.a != nil {
		return e.a.BeginPauseAccept()
	}
	return e.w.BeginPauseAccept()
}

func (e *Engine) baseContext() context.Context {
	if c := e.ctx.Load(); c != nil {
		return *c
	}
	return context.Background()
}

// serve is bridge.go's ServeHTTP on weir's request view. Header text and the
// body are copied once: celeris handlers may keep them past the answer.
func (e *Engine) serve(r *weir.Request, w *weir.ResponseWriter) {
	e.handOffAsync(r, w) // first: an async route's body reads and handler may wait
	s := stream.NewH1Stream(1)
	defer s.Release()

	n := r.NumHeaders()
	hdrs := make([][2]string, 0, n+4)
	hdrs = append(hdrs,
		[2]string{":method", strings.Clone(r.Method())},
		[2]string{":path", strings.Clone(r.Target())},
		[2]string{":scheme", "http"},
		[2]string{":authority", strings.Clone(r.Host())},
	)
	for i := 0; i < n; i++ {
		k, v := r.HeaderAt(i)
		hdrs = append(hdrs, [2]string{strings.ToLower(k), strings.Clone(v)})
	}
	s.Headers = hdrs
	if e.opts.closeEach {
		w.SetClose() // DisableKeepAlive
	}
	if r.BodyStreamed() {
		body, ok := e.streamedBody(r, w, hdrs)
		if !ok {
			return // answered (417, 413, 400) or the client went
		}
		s.SetRawBody(body)
	} else if body := r.Body(); len(body) > 0 {
		s.SetRawBody(append([]byte(nil), body...))
	}
	if a := r.RemoteAddr(); a != nil {
		s.RemoteAddr = a.String()
	}
	// celeris's H1 stream kind (one exchange, answered through its
	// ResponseWriter) carries HTTP/2 requests too: weir frames them; the
	// version is what Context.Protocol reports.
	s.SetProtoMajor(uint8(r.ProtoMajor()))
	s.EndStream = true
	s.SetState(stream.StateHalfClosedRemote)

	rw := &responseWriter{w: w}
	s.ResponseWriter = rw
	if err := e.handler.HandleStream(e.baseContext(), s); err != nil {
		e.errs.Add(1)
		if l := e.opts.logger; l != nil {
			l.Debug("weir: handler error", "path", hdrs[1][1], "err", err)
		}
		if !rw.started && !rw.hijacked {
			ioRelease()
			rw.reset()
			// As celeris's own engines answer a handler error.
			_ = w.AddHeader("content-type", "text/plain; charset=utf-8")
			_ = w.RespondString(500, "Internal Server Error")
			return
		}
	}
	ioRelease() // what the handler did happens before its answer is read
	if rw.st != nil {
		_ = rw.st.End() // ErrStreamOver when the handler had closed it
	} else if !rw.sent {
		rw.finish(200)
	}
}

// fail answers 500 for an exchange the engine could not hand to celeris.
func (e *Engine) fail(w *weir.ResponseWriter, err error) {
	e.errs.Add(1)
	if l := e.opts.logger; l != nil {
		l.Error("weir: exchange not served", "err", err)
	}
	_ = w.RespondString(500, "Internal Server Error")
}

// pathOf is the request target without its query, as celeris routes it.
func pathOf(target string) string {
	if i := strings.IndexByte(target, '?'); i >= 0 {
		return target[:i]
	}
	return target
}
