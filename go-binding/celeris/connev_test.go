package weirceleris

import (
	"sync"
	"testing"
	"time"

	"github.com/goceleris/celeris"
)

// celeris.Config's OnConnect and OnDisconnect served on weir (weir's
// on_conn, the binding's Config.OnConnect/OnDisconnect): each client's
// connection is told open once and closed once, with the client's own
// address, whether the client closes it or asks the server to. The check's
// arm: before any client connects, the ledger is empty (nothing is told for
// the listener or the engine's start).
func TestServedConnectDisconnect(t *testing.T) {
	var mu sync.Mutex
	opens, closes := map[string]int{}, map[string]int{}
	addr := onWeir(t, celeris.Config{
		OnConnect: func(a string) {
			mu.Lock()
			opens[a]++
			mu.Unlock()
		},
		OnDisconnect: func(a string) {
			mu.Lock()
			closes[a]++
			mu.Unlock()
		},
	}, nil)
	mu.Lock()
	if len(opens)+len(closes) != 0 {
		t.Fatalf("told before any client: %v %v", opens, closes)
	}
	mu.Unlock()
	const n = 6
	var clients []string
	for i := 0; i < n; i++ {
		c, br := dial(t, addr)
		clients = append(clients, c.LocalAddr().String())
		if i%2 == 0 { // the client closes after its answer
			send(t, c, "GET / HTTP/1.1\r\nHost: t\r\n\r\n")
			if resp, body := reply1(t, br); resp.StatusCode != 200 || body != "root" {
				t.Fatalf("%d %q", resp.StatusCode, body)
			}
			c.Close()
		} else { // asks the server to close
			send(t, c, "GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
			if resp, _ := reply1(t, br); resp.StatusCode != 200 {
				t.Fatal(resp.StatusCode)
			}
		}
	}
	until := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		done := len(opens) == n && len(closes) == n
		mu.Unlock()
		if done || time.Now().After(until) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, a := range clients {
		if opens[a] != 1 || closes[a] != 1 {
			t.Fatalf("%s: opened %d, closed %d (all: %v %v)", a, opens[a], closes[a], opens, closes)
		}
	}
	if len(opens) != n || len(closes) != n {
		t.Fatalf("%d opened, %d closed, want %d", len(opens), len(closes), n)
	}
}
