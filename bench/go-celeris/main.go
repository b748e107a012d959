// celeris is github.com/goceleris/celeris v1.5.8 on its own engines (epoll or
// io_uring) answering GET / with "Hello, World!", a competitor in
// scripts/bench-go:
//
//	celeris --engine iouring --workers 2 --addr 127.0.0.1:0
//
// The Go module proxy here refuses celeris, so this module's go.mod names the
// release and scripts/bench-go builds it through a scratch copy of that file
// (-modfile) whose replace points at the shared source snapshot
// (../shared/third_party/celeris-v1.5.8); nothing of celeris is kept here.
// It prints "listening on HOST:PORT" once bound and exits 0 on SIGTERM or
// SIGINT after a graceful shutdown.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/goceleris/celeris"
)

var hello = []byte("Hello, World!")

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "HOST:PORT to listen on")
	engine := flag.String("engine", "epoll", "epoll or iouring")
	workers := flag.Int("workers", 2, "engine workers (celeris needs at least 2)")
	flag.Parse()
	cfg := celeris.Config{Addr: *addr, Workers: *workers}
	switch *engine {
	case "epoll":
		cfg.Engine = celeris.Epoll
	case "iouring":
		cfg.Engine = celeris.IOUring
	default:
		fmt.Fprintf(os.Stderr, "celeris: --engine %q: want epoll or iouring\n", *engine)
		os.Exit(2)
	}
	s := celeris.New(cfg)
	s.GET("/", func(c *celeris.Context) error {
		return c.Blob(200, "text/plain", hello)
	})
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- s.StartWithContext(ctx) }()
	for deadline := time.Now().Add(10 * time.Second); s.Addr() == nil; time.Sleep(2 * time.Millisecond) {
		select {
		case err := <-done:
			fmt.Fprintf(os.Stderr, "celeris: %v\n", err)
			os.Exit(1)
		default:
		}
		if time.Now().After(deadline) {
			fmt.Fprintln(os.Stderr, "celeris: did not bind within 10 s")
			os.Exit(1)
		}
	}
	fmt.Printf("listening on %s\n", s.Addr())
	if err := <-done; err != nil && ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "celeris: %v\n", err)
		os.Exit(1)
	}
}
