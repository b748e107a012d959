// h2client makes N requests over HTTP/2 in cleartext by prior knowledge (h2c),
// C at a time, with Go's golang.org/x/net/http2 client, and checks every
// answer: the status, the body, and that it came as HTTP/2 (resp.Proto
// "HTTP/2.0", ProtoMajor 2). It is the Go client of issue 31's tests, for any
// server given a port (tests/scripts/h2/h2_goclient.sh runs it against
// weir-demo, or a peer):
//
//	h2client -addr 127.0.0.1:PORT [-n 100] [-c 16] [-path /] [-want 'Hello, World!']
//	h2client -addr 127.0.0.1:PORT -echo 1048576   (POST /echo: the body must come back)
//	h2client -addr 127.0.0.1:PORT -n 100000000 -for 5s   (as many as fit in 5 s: a load across a deploy)
//
// It prints one line, "h2client: N requests, C concurrent, D connections: ok",
// or the first failures and exits 1. The Transport multiplexes all requests
// over its connections; D (the dials) says how many it needed: 1 unless the
// server's SETTINGS_MAX_CONCURRENT_STREAMS is below C.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
)

func main() {
	addr := flag.String("addr", "", "host:port of the server (required)")
	n := flag.Int("n", 100, "requests in all")
	c := flag.Int("c", 16, "requests in flight at once")
	path := flag.String("path", "/", "path of each GET")
	wantBody := flag.String("want", "Hello, World!", "the body each GET must answer")
	wantStatus := flag.Int("status", 200, "the status each answer must have")
	echo := flag.Int("echo", 0, "POST /echo with a random body of this many bytes instead of GET (the body must come back)")
	timeout := flag.Duration("timeout", 30*time.Second, "the longest the whole run may take")
	dur := flag.Duration("for", 0, "stop handing out requests after this long (0: make all n)")
	flag.Parse()
	if *addr == "" || *n < 1 || *c < 1 {
		fmt.Fprintln(os.Stderr, "h2client: -addr is required; -n and -c must be at least 1")
		flag.Usage()
		os.Exit(2)
	}

	var dials atomic.Int64
	tr := &http2.Transport{
		// h2c by prior knowledge: http:// URLs allowed, and the "TLS" dial is
		// a plain TCP dial, so the client preface goes out on the bare socket.
		AllowHTTP: true,
		DialTLSContext: func(ctx context.Context, network, a string, _ *tls.Config) (net.Conn, error) {
			dials.Add(1)
			var d net.Dialer
			return d.DialContext(ctx, network, a)
		},
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: *timeout}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	var body []byte
	if *echo > 0 {
		body = make([]byte, *echo)
		if _, err := rand.Read(body); err != nil {
			fmt.Fprintln(os.Stderr, "h2client:", err)
			os.Exit(2)
		}
	}

	jobs := make(chan int)
	var mu sync.Mutex
	var failures []string
	fail := func(i int, format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		failures = append(failures, fmt.Sprintf("request %d: ", i)+fmt.Sprintf(format, a...))
	}
	var wg sync.WaitGroup
	for w := 0; w < *c; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				one(ctx, client, *addr, *path, body, *wantStatus, *wantBody, i, fail)
			}
		}()
	}
	sent, until := 0, time.Now().Add(*dur)
	for ; sent < *n; sent++ {
		if *dur > 0 && time.Now().After(until) {
			break
		}
		jobs <- sent
	}
	close(jobs)
	wg.Wait()

	if len(failures) > 0 {
		for i, f := range failures {
			if i == 10 {
				fmt.Printf("h2client: ... and %d more\n", len(failures)-10)
				break
			}
			fmt.Println("h2client: FAIL:", f)
		}
		fmt.Printf("h2client: %d of %d requests failed\n", len(failures), sent)
		os.Exit(1)
	}
	fmt.Printf("h2client: %d requests, %d concurrent, %d connections: ok\n", sent, *c, dials.Load())
}

func one(ctx context.Context, client *http.Client, addr, path string, body []byte, wantStatus int,
	wantBody string, i int, fail func(int, string, ...any)) {
	method, url, rd := http.MethodGet, "http://"+addr+path, io.Reader(nil)
	if body != nil {
		method, url, rd = http.MethodPost, "http://"+addr+"/echo", bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		fail(i, "%v", err)
		return
	}
	resp, err := client.Do(req)
	if err != nil {
		fail(i, "%v", err)
		return
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	switch {
	case err != nil:
		fail(i, "reading the body: %v", err)
	case resp.Proto != "HTTP/2.0" || resp.ProtoMajor != 2:
		fail(i, "answered as %s (ProtoMajor %d), want HTTP/2.0", resp.Proto, resp.ProtoMajor)
	case resp.StatusCode != wantStatus:
		fail(i, "status %d, want %d", resp.StatusCode, wantStatus)
	case body != nil && !bytes.Equal(got, body):
		fail(i, "POST /echo gave %d bytes back, not the %d sent", len(got), len(body))
	case body == nil && string(got) != wantBody:
		fail(i, "body %.80q, want %.80q", got, wantBody)
	}
}
