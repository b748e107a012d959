package weirceleris

import (
	"github.com/goceleris/celeris/engine"
	"github.com/goceleris/celeris/protocol/h2/stream"
	"github.com/goceleris/celeris/resource"
	weir "github.com/weir-http/weir/go-binding"
)

// Factory returns an engine factory for celeris's Config.EngineFactory, the
// hook that patches/celeris-v1.5.8-engine-factory.patch adds (stock celeris
// has none: its engine choice is a closed switch). With it a whole
// celeris.Server (router, middleware, Context) runs on weir:
//
//	srv := celeris.New(celeris.Config{Addr: ":8080",
//		EngineFactory: weirceleris.Factory(weir.Config{})})
//
// base is weir's configuration. celeris's resolved configuration fills what
// base leaves unset: Addr, or Listener (StartWithListener), whose socket weir
// serves itself (weir.Config.Listener: no rebinding, so no window in which
// the port is free),
// the worker count, and Async when celeris asks for async handlers. Its other
// knobs (timeouts, limits) are not translated; set them in base.
func Factory(base weir.Config) func(resource.Config, stream.Handler) (engine.Engine, error) {
	return func(cfg resource.Config, h stream.Handler) (engine.Engine, error) {
		c := base
		if c.Addr == "" && c.Listener == nil {
			c.Addr = cfg.Addr
			c.Listener = cfg.Listener // weir serves its socket and closes it, as celeris's engines do
		}
		if c.Workers == 0 {
			c.Workers = cfg.Resources.Workers
		}
		c.Async = c.Async || cfg.AsyncHandlers
		return New(c, h)
	}
}
