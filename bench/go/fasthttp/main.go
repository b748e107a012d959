// fasthttp is github.com/valyala/fasthttp answering GET / with
// "Hello, World!", a competitor in scripts/bench-go:
//
//	GOMAXPROCS=1 fasthttp --addr 127.0.0.1:0
//
// It prints "listening on HOST:PORT" once bound and exits 0 on SIGTERM or
// SIGINT after a graceful shutdown.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/valyala/fasthttp"
)

var hello = []byte("Hello, World!")

func handle(ctx *fasthttp.RequestCtx) {
	if string(ctx.Path()) != "/" {
		ctx.Error("not found\n", fasthttp.StatusNotFound)
		return
	}
	ctx.SetContentType("text/plain")
	ctx.SetBody(hello)
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "HOST:PORT to listen on")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "fasthttp: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("listening on %s\n", ln.Addr())
	// The Server header is left off so every server in the comparison sends
	// the same fields: Content-Type, Content-Length, Date.
	srv := &fasthttp.Server{Handler: handle, NoDefaultServerHeader: true}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = srv.Shutdown()
	}()
	if err := srv.Serve(ln); err != nil {
		fmt.Fprintf(os.Stderr, "fasthttp: %v\n", err)
		os.Exit(1)
	}
}
