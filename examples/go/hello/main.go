// hello answers GET / with "Hello, World!" on weir, through the zero-copy
// native API or a standard net/http handler:
//
//	go run ./examples/go/hello --addr 127.0.0.1:8080 --api native|nethttp [--workers N] [--async] [--stats] [--adaptive]
//
// It prints "listening on HOST:PORT" once bound and exits 0 on SIGTERM or
// SIGINT after a graceful shutdown. The benchmarks use it as weir's Go server.
// It keeps weir-demo's operator contract for hot upgrade, systemd and
// SIGHUP's metrics (upgrade.go: --upgrade-socket, --take-over, --systemd,
// --fdstore).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	weir "github.com/weir-http/weir/go-binding"
)

var hello = []byte("Hello, World!")

func native(r *weir.Request, w *weir.ResponseWriter) {
	if r.Path() != "/" {
		_ = w.RespondString(404, "not found\n")
		return
	}
	_ = w.AddHeader("Content-Type", "text/plain")
	_ = w.Respond(200, hello)
}

func nethttp(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Write(hello)
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "HOST:PORT to listen on (numeric host)")
	api := flag.String("api", "native", "handler API: native or nethttp")
	workers := flag.Int("workers", 0, "native workers (0: one per CPU)")
	async := flag.Bool("async", false, "run each handler on its own goroutine (nethttp: the default)")
	inline := flag.Bool("inline", false, "nethttp: run handlers on the worker goroutine (handlers that never block)")
	backend := flag.String("backend", "epoll", "epoll or io_uring")
	keepProcs := flag.Bool("keep-gomaxprocs", false, "leave GOMAXPROCS even when it is not above the workers (weir.Config.KeepGOMAXPROCS)")
	schedPass := flag.Bool("sched-pass", false, "busy inline workers pass through the Go scheduler every 8 ms (weir.Config.SchedPass)")
	stats := flag.Bool("stats", false, "print requests and cgo crossings per request on exit (to stderr)")
	var op ops
	op.f.register()
	flag.Parse()

	cfg := weir.Config{
		Addr:           *addr,
		Workers:        *workers,
		Async:          *async,
		KeepGOMAXPROCS: *keepProcs,
		SchedPass:      *schedPass,
		OnListen: func(a net.Addr) {
			op.onListen()
			op.printf("listening on %s\n", a)
		},
	}
	initDone, initMS, ungated := testAppInit()
	switch *api {
	case "native":
		cfg.Handler = native
	case "nethttp":
		cfg.HTTP = http.HandlerFunc(nethttp)
		cfg.Inline = *inline
	default:
		fmt.Fprintf(os.Stderr, "hello: --api must be native or nethttp, not %q\n", *api)
		os.Exit(2)
	}
	if initDone != nil { // the tests' slow application start (upgrade.go)
		h, hh := cfg.Handler, cfg.HTTP
		if h != nil {
			cfg.Handler = func(r *weir.Request, w *weir.ResponseWriter) { <-initDone; h(r, w) }
		} else {
			cfg.HTTP = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-initDone; hh.ServeHTTP(w, r) })
		}
	}
	switch *backend {
	case "epoll":
	case "io_uring", "uring":
		cfg.Backend = weir.BackendURing
	default:
		fmt.Fprintf(os.Stderr, "hello: --backend must be epoll or io_uring\n")
		os.Exit(2)
	}

	if *adaptive { // adaptive.go
		if err := runAdaptive(cfg); err != nil {
			fmt.Fprintf(os.Stderr, "hello: %v\n", err)
			os.Exit(1)
		}
		return
	}
	e, err := weir.New(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "hello: %v\n", err)
		os.Exit(1)
	}
	if err := op.attach(e); err != nil {
		fmt.Fprintf(os.Stderr, "hello: %v\n", err)
		os.Exit(1)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go op.signals(stop)
	listened := make(chan error, 1)
	go func() { listened <- e.Listen(ctx) }()
	// The application's start-up, then the readiness gate: a successor takes
	// over from its predecessor only once it can serve.
	if ungated {
		readyOrExit(&op, listened)
	}
	if initDone != nil {
		time.Sleep(time.Duration(initMS) * time.Millisecond)
		close(initDone)
	}
	if !ungated {
		readyOrExit(&op, listened)
	}
	if err := <-listened; err != nil {
		fmt.Fprintf(os.Stderr, "hello: %v\n", err)
		os.Exit(1)
	}
	if *stats {
		m := e.Metrics()
		fmt.Fprintf(os.Stderr, "requests %d polls %d wakes %d direct-responds %d cgo-calls/request %.3f panics %d gone %d sched-passes %d\n",
			m.Exchanges, m.Polls, m.Wakes, m.DirectResponds, m.CgoCallsPerRequest(), m.Panics, m.Gone, m.SchedPasses)
		fmt.Fprintln(os.Stderr, runtimeStats(m.Exchanges))
	}
}

// readyOrExit opens the gate; a take-over that failed ends the process (1).
func readyOrExit(op *ops, listened chan error) {
	if err := op.ready(); err != nil {
		if lerr := <-listened; lerr != nil && !errors.Is(lerr, err) {
			err = fmt.Errorf("%v (%v)", err, lerr)
		}
		fmt.Fprintf(os.Stderr, "hello: %v\n", err)
		os.Exit(1)
	}
}
