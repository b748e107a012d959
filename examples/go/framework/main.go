// framework shows how a Go web framework adopts weir through a thin adapter.
// The framework's side is modelled on celeris's engine package (an Engine
// with Listen, Shutdown, Metrics, Type and Addr, and an AcceptController);
// the adapter maps weir's shapes onto it. go-binding/celeris does the same
// against the real celeris module.
//
//	go run ./examples/go/framework --addr 127.0.0.1:8080
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	weir "github.com/weir-http/weir/go-binding"
)

// ---- the framework's side (what a framework already defines) ----

type EngineType uint8

const (
	EngineStd EngineType = iota
	EngineEpoll
	EngineIOUring
	EngineWeir
)

type EngineMetrics struct {
	RequestCount      uint64
	ActiveConnections int64
	ErrorCount        uint64
	Workers           int
	AcceptCount       uint64
	BytesRead         uint64
	BytesWritten      uint64
}

type Engine interface {
	Listen(ctx context.Context) error
	Shutdown(ctx context.Context) error
	Metrics() EngineMetrics
	Type() EngineType
	Addr() net.Addr
}

type AcceptController interface {
	PauseAccept() error
	ResumeAccept() error
}

// Context is what the framework hands its handlers.
type Context struct {
	Method, Path string
	status       int
	body         []byte
}

func (c *Context) String(status int, s string) { c.status, c.body = status, append(c.body[:0], s...) }

type HandlerFunc func(*Context)

// ---- the adapter: everything a framework needs to run on weir ----

type weirEngine struct{ *weir.Engine }

var (
	_ Engine           = weirEngine{}
	_ AcceptController = weirEngine{}
)

func newWeirEngine(addr string, h HandlerFunc) (weirEngine, error) {
	e, err := weir.New(weir.Config{
		Addr: addr,
		OnListen: func(a net.Addr) {
			fmt.Printf("listening on %s\n", a)
		},
		Handler: func(r *weir.Request, w *weir.ResponseWriter) {
			c := Context{Method: r.Method(), Path: r.Path()} // views: valid until the answer
			h(&c)
			_ = w.Respond(c.status, c.body)
		},
	})
	return weirEngine{e}, err
}

func (e weirEngine) Type() EngineType { return EngineWeir }

func (e weirEngine) Metrics() EngineMetrics {
	m := e.Engine.Metrics()
	var errs uint64
	for i, n := range m.Closes {
		if i != 0 && i != 1 && i != 9 { // peer, not keep-alive and shutdown closes are not errors
			errs += n
		}
	}
	return EngineMetrics{
		RequestCount:      m.Requests,
		ActiveConnections: int64(m.ConnectionsOpen),
		ErrorCount:        errs + m.Panics,
		Workers:           m.Workers,
		AcceptCount:       m.Accepted,
		BytesRead:         m.BytesIn,
		BytesWritten:      m.BytesOut,
	}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "HOST:PORT")
	flag.Parse()
	var eng Engine
	we, err := newWeirEngine(*addr, func(c *Context) {
		c.String(200, "Hello from "+c.Method+" "+c.Path)
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	eng = we
	if ac, ok := eng.(AcceptController); ok {
		if err := ac.PauseAccept(); errors.Is(err, weir.ErrPauseUnsupported) {
			fmt.Println("accept pause: not supported by this libweir yet")
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := eng.Listen(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
