// standin is a stand-in for weir-demo --protocols, built on Go's own HTTP/2
// server (golang.org/x/net/http2/h2c), so that the weir arms of
// tests/scripts/h2/ — h2spec.sh's loop over backends, demo_h2.sh's routes,
// modes, metrics and protocol choices, h2_goclient.sh — can be run before
// weir speaks HTTP/2 (tests/scripts/h2/selftest.sh does, with B pointing at a
// folder whose bin/weir-demo is this program). It takes weir-demo's flags that
// those scripts pass and serves the routes they use, as weir-demo --app hello
// does: GET / ("Hello, World!"), POST /echo, POST /upload ("<bytes> <sha256>\n"),
// GET /stream?n=N&size=S (piece i: S bytes of 'a'+i%26, each flushed),
// GET /files/NAME (from --static). It prints "listening on HOST:PORT", the
// metrics block ("requests N") on SIGHUP and exits 0 on SIGTERM.
// --protocols h2c and auto: h2c by prior knowledge and by Upgrade (Go's h2c
// handler also answers HTTP/1.1 in both); http1: HTTP/1.1 only — unless
// STANDIN_H2_ALWAYS=1, a broken server for the selftest's fail arm whose
// http1 serves a prior-knowledge client (and still ignores Upgrade).
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/h2c"
)

var requests atomic.Int64

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "")
	backend := flag.String("backend", "epoll", "")
	flag.String("mode", "inline", "")
	flag.Int("workers", 1, "")
	flag.String("app", "hello", "")
	protocols := flag.String("protocols", "auto", "http1, h2c or auto")
	static := flag.String("static", "", "")
	version := flag.Bool("version", false, "")
	flag.Parse()
	switch *protocols {
	case "http1", "h2c", "auto":
	default:
		fmt.Fprintf(os.Stderr, "weir-demo (standin): bad --protocols (want http1, h2c or auto): %s\n", *protocols)
		os.Exit(2)
	}
	if *version {
		fmt.Println("weir-demo standin (Go net/http + x/net/http2)")
		return
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "weir-demo (standin):", err)
		os.Exit(1)
	}
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { serve(w, r, *static) })
	if *protocols != "http1" {
		h = h2c.NewHandler(h, &http2.Server{})
	} else if os.Getenv("STANDIN_H2_ALWAYS") == "1" {
		// prior knowledge served, Upgrade still ignored: only that rule is broken
		inner := h2c.NewHandler(h, &http2.Server{})
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Header.Del("Upgrade")
			inner.ServeHTTP(w, r)
		})
	}
	srv := &http.Server{Handler: h}
	fmt.Printf("listening on %s\n", ln.Addr())
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		for s := range sigs {
			if s == syscall.SIGHUP {
				fmt.Printf("metrics begin\nrequests %d\nbackend %s\nmetrics end\n", requests.Load(), *backend)
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			srv.Shutdown(ctx)
			cancel()
		}
	}()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, "weir-demo (standin):", err)
		os.Exit(1)
	}
}

func serve(w http.ResponseWriter, r *http.Request, static string) {
	requests.Add(1)
	w.Header().Set("Content-Type", "text/plain")
	switch {
	case strings.HasPrefix(r.URL.Path, "/files/") && static != "":
		http.ServeFile(w, r, filepath.Join(static, filepath.Base(r.URL.Path)))
	case r.Method == http.MethodGet && r.URL.Path == "/":
		io.WriteString(w, "Hello, World!")
	case r.Method == http.MethodPost && r.URL.Path == "/echo":
		w.Header().Set("Content-Type", "application/octet-stream")
		io.Copy(w, r.Body)
	case r.Method == http.MethodPost && r.URL.Path == "/upload":
		h := sha256.New()
		n, _ := io.Copy(h, r.Body)
		fmt.Fprintf(w, "%d %s\n", n, hex.EncodeToString(h.Sum(nil)))
	case r.Method == http.MethodGet && r.URL.Path == "/stream":
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		size, _ := strconv.Atoi(r.URL.Query().Get("size"))
		f, _ := w.(http.Flusher)
		for i := 0; i < n; i++ {
			w.Write([]byte(strings.Repeat(string(rune('a'+i%26)), size)))
			if f != nil {
				f.Flush()
			}
		}
	default:
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, "Not Found\n")
	}
}
