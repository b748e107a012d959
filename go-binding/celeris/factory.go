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
// the worker count, Async when celeris asks for async handlers, and the body
// limit (MaxRequestBodySize: 100 MB by celeris's default, resolved 0 meaning
// none), which weir 0.4 holds for streamed bodies too, so leaving weir's own
// 1 MiB default there would refuse uploads celeris accepts. Its other knobs
// (timeouts, header limits) are not translated yet; set them in base.
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
		if c.MaxBody == 0 {
			c.MaxBody = -1 // celeris's resolved 0: no limit
			if cfg.MaxRequestBodySize > 0 {
				c.MaxBody = cfg.MaxRequestBodySize
			}
		}
		return New(c, h)
	}
}
