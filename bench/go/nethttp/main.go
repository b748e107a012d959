// nethttp is the Go standard library's server answering GET / with
// "Hello, World!", the baseline of scripts/bench-go:
//
//	GOMAXPROCS=1 nethttp --addr 127.0.0.1:0
//
// It prints "listening on HOST:PORT" once bound and exits 0 on SIGTERM or
// SIGINT after a graceful shutdown.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

var hello = []byte("Hello, World!")

// The same handler as examples/go/hello's net/http one, so the adapter and
// the standard server run identical code.
func handle(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Write(hello)
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "HOST:PORT to listen on")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "nethttp: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("listening on %s\n", ln.Addr())
	srv := &http.Server{Handler: http.HandlerFunc(handle), ReadHeaderTimeout: 30 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		fmt.Fprintf(os.Stderr, "nethttp: %v\n", err)
		os.Exit(1)
	}
}
