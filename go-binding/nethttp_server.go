package weir

import (
	"context"
	"fmt"
	"net/http"
)

// Config.Server: the *http.Server fields weir honours, and those it refuses
// (each with an error wrapping http.ErrNotSupported, at New, rather than a
// server that silently behaves otherwise).

// fromServer takes what c.Server says into c (fields c sets itself win).
func (c *Config) fromServer() error {
	s := c.Server
	if s == nil {
		return nil
	}
	refuse := func(field, why string) error {
		return fmt.Errorf("weir: http.Server.%s is not supported: %s: %w", field, why, http.ErrNotSupported)
	}
	switch {
	case s.ConnState != nil:
		return refuse("ConnState", "weir reports no connection events to Go (it accepts and closes connections itself)")
	case s.ConnContext != nil:
		return refuse("ConnContext", "weir reports no connection events to Go; a handler has only its request's context")
	case s.TLSConfig != nil:
		return refuse("TLSConfig", "weir speaks plain HTTP/1.1 (terminate TLS in front of it)")
	case s.BaseContext != nil:
		return refuse("BaseContext", "weir has no net.Listener to call it with: pass the context to Engine.Listen, whose values every request context carries")
	}
	if c.HTTP == nil && c.Handler == nil {
		c.HTTP = s.Handler
		if c.HTTP == nil {
			c.HTTP = http.DefaultServeMux // as net/http's Server
		}
	}
	if c.Addr == "" && c.Listener == nil {
		c.Addr = s.Addr
	}
	if c.MaxHeaderBytes == 0 && s.MaxHeaderBytes > 0 {
		c.MaxHeaderBytes = s.MaxHeaderBytes
	}
	if c.HeaderTimeout == 0 {
		if c.HeaderTimeout = s.ReadHeaderTimeout; c.HeaderTimeout <= 0 {
			c.HeaderTimeout = max(s.ReadTimeout, 0)
		}
	}
	if c.IdleTimeout == 0 && s.IdleTimeout > 0 {
		c.IdleTimeout = s.IdleTimeout
	}
	return nil
}

// runOnShutdown runs the functions given to Config.Server's
// RegisterOnShutdown, each on a goroutine of its own, as net/http's Shutdown
// does. They live in an unexported field, so weir calls that Shutdown: on a
// Server that serves nothing itself it runs them and returns at once.
func (e *Engine) runOnShutdown() {
	if s := e.cfg.Server; s != nil {
		go func() { _ = s.Shutdown(context.Background()) }()
	}
}
