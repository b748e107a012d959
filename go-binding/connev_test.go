package weir

import (
	"context"
	"sync"
	"testing"
)

// Config.OnConnect / OnDisconnect (connev.go): each client's connection is
// told open once and closed once, with the client's own address, whether the
// client closes, asks for the close, or is still open at the shutdown; in
// inline and async mode. The check's own arm: a client that never connected
// is not in the ledger, and one connected twice would count 2.
func TestConnEventsMatchClients(t *testing.T) {
	for _, async := range []bool{false, true} {
		var mu sync.Mutex
		opens, closes := map[string]int{}, map[string]int{}
		e := newEngine(t, Config{Addr: "127.0.0.1:0", Workers: 2, Async: async, Handler: hello,
			OnConnect: func(a string) {
				mu.Lock()
				opens[a]++
				mu.Unlock()
			},
			OnDisconnect: func(a string) {
				mu.Lock()
				if opens[a] == 0 {
					closes["before-open "+a]++
				}
				closes[a]++
				mu.Unlock()
			}})
		done := make(chan error, 1)
		go func() { done <- e.Listen(context.Background()) }()
		waitFor(t, "bind", func() bool { return e.Addr() != nil })
		const n = 9
		var addrs []string
		for i := 0; i < n; i++ {
			c := dial(t, e.Addr().String())
			addrs = append(addrs, c.c.LocalAddr().String())
			switch i % 3 {
			case 0: // the client closes
				c.send(get("/a"))
				c.read("GET")
				c.c.Close()
			case 1: // asks for the close
				c.send("GET /b HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
				c.read("GET")
			case 2: // open at the shutdown
				c.send(get("/c"))
				c.read("GET")
			}
		}
		if err := e.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		if len(opens) != n || len(closes) != n {
			t.Fatalf("async %v: %d opened, %d closed, want %d: %v %v", async, len(opens), len(closes), n, opens, closes)
		}
		for _, a := range addrs {
			if opens[a] != 1 || closes[a] != 1 {
				t.Fatalf("async %v: %s opened %d, closed %d", async, a, opens[a], closes[a])
			}
		}
		mu.Unlock()
	}
}
