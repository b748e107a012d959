package weir

import (
	"bytes"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
)

// goid is the calling goroutine's id, read from its stack header (tests only).
func goid() uint64 {
	var b [64]byte
	s := b[:runtime.Stack(b[:], false)]
	s = bytes.TrimPrefix(s, []byte("goroutine "))
	id, _ := strconv.ParseUint(string(s[:bytes.IndexByte(s, ' ')]), 10, 64)
	return id
}

// Async handlers run on goroutines kept between requests (async.go): 200
// requests one after another on one connection are served by a handful of
// goroutines. The arm that shows what the pool saves is the count itself: a
// goroutine per request (the mutant without the idle channel) gives 200.
func TestAsyncHandlersReused(t *testing.T) {
	var mu sync.Mutex
	ids := map[uint64]int{}
	_, addr := start(t, Config{Workers: 1, Async: true, Handler: func(r *Request, w *ResponseWriter) {
		mu.Lock()
		ids[goid()]++
		mu.Unlock()
		_ = w.Respond(200, []byte("ok"))
	}})
	c := dial(t, addr)
	const n = 200
	for i := 0; i < n; i++ {
		c.send(get("/r"))
		if _, body := c.read("GET"); body != "ok" {
			t.Fatalf("request %d: %q", i, body)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d requests served by %d goroutines", n, len(ids))
	if len(ids) > 4 {
		t.Errorf("%d requests ran on %d goroutines: handler goroutines are not reused", n, len(ids))
	}
}

// Idle handler goroutines end with their engine: 64 handlers held at once
// (64 goroutines), released, then the engine stopped; the goroutine count
// comes back to where it was. Without the engine's done case in
// handlerLoop, up to maxIdleHandlers would wait for ever.
func TestAsyncIdleHandlersEndWithEngine(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Run("serve", func(t *testing.T) {
		const n = 64
		var held sync.WaitGroup
		held.Add(n)
		release := make(chan struct{})
		_, addr := start(t, Config{Workers: 1, Async: true, Handler: func(r *Request, w *ResponseWriter) {
			held.Done()
			<-release
			_ = w.Respond(200, []byte("ok"))
		}})
		clients := make([]*client, n)
		for i := range clients {
			clients[i] = dial(t, addr)
			clients[i].send(get("/hold"))
		}
		held.Wait() // every handler on a goroutine of its own at once
		close(release)
		for i, c := range clients {
			if _, body := c.read("GET"); body != "ok" {
				t.Fatalf("client %d: %q", i, body)
			}
			_ = c.c.Close()
		}
	})
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before+2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := runtime.NumGoroutine(); got > before+2 {
		t.Errorf("goroutines: %d before the engine, %d after it stopped: idle handlers outlived it", before, got)
	}
}
