package weirceleris

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goceleris/celeris"
	weir "github.com/weir-http/weir/go-binding"
)

// h2cClient is net/http's own HTTP/2 client by prior knowledge
// (UnencryptedHTTP2); dials counts its connections.
func h2cClient(t *testing.T) (*http.Client, *atomic.Int64) {
	var dials atomic.Int64
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: p, DialContext: func(ctx context.Context, n, a string) (net.Conn, error) {
		dials.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, n, a)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}, &dials
}

func http1Client(t *testing.T) *http.Client {
	p := new(http.Protocols)
	p.SetHTTP1(true)
	tr := &http.Transport{Protocols: p}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func h2Server(t *testing.T, proto celeris.Protocol) string {
	t.Helper()
	cfg := celeris.Config{Addr: "127.0.0.1:0", Protocol: proto, Engine: testEngine(), Logger: quietLog(),
		EngineFactory: Factory(weir.Config{Backend: testBackend(), Workers: 1})}
	srv := celeris.New(cfg)
	srv.GET("/proto", func(c *celeris.Context) error {
		return c.String(200, "%s %s", c.Protocol(), c.Host())
	})
	srv.POST("/echo", func(c *celeris.Context) error {
		return c.Blob(200, "application/octet-stream", c.Body())
	})
	return run(t, srv)
}

func fetch(c *http.Client, method, url string, body []byte) (*http.Response, []byte, error) {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// Protocol Auto, celeris's default, on weir: one port answers an h2c client
// by prior knowledge and an HTTP/1.1 client, and each handler sees its own
// protocol in Context.Protocol (the stream's ProtoMajor).
func TestH2Auto(t *testing.T) {
	base := h2Server(t, celeris.Auto)
	host := base[len("http://"):]
	h2, dials := h2cClient(t)
	resp, b, err := fetch(h2, "GET", base+"/proto", nil)
	if err != nil || resp.ProtoMajor != 2 || string(b) != "2 "+host {
		t.Fatalf("h2c: %v %v %q, want HTTP/2 \"2 %s\"", err, resp, b, host)
	}
	resp, b, err = fetch(http1Client(t), "GET", base+"/proto", nil)
	if err != nil || resp.ProtoMajor != 1 || string(b) != "1.1 "+host {
		t.Fatalf("HTTP/1.1: %v %v %q, want \"1.1 %s\"", err, resp, b, host)
	}
	// Concurrent POSTs multiplexed on the one h2c connection.
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := bytes.Repeat([]byte{byte('a' + i)}, 100+i*3000)
			resp, b, err := fetch(h2, "POST", base+"/echo", want)
			if err != nil || resp.ProtoMajor != 2 || !bytes.Equal(b, want) {
				t.Errorf("POST %d: %v, %d bytes back of %d", i, err, len(b), len(want))
			}
		}()
	}
	wg.Wait()
	if n := dials.Load(); n != 1 {
		t.Errorf("%d h2c connections, want 1", n)
	}
}

// Protocol H2C: prior knowledge only; an HTTP/1.1 client is not answered
// (the arm that shows Protocol reached weir: under Auto it would be).
func TestH2Only(t *testing.T) {
	base := h2Server(t, celeris.H2C)
	h2, _ := h2cClient(t)
	if resp, b, err := fetch(h2, "GET", base+"/proto", nil); err != nil || resp.ProtoMajor != 2 || b[0] != '2' {
		t.Fatalf("h2c: %v %v %q", err, resp, b)
	}
	h1 := http1Client(t)
	h1.Timeout = 5 * time.Second
	if resp, b, err := fetch(h1, "GET", base+"/proto", nil); err == nil {
		t.Errorf("HTTP/1.1 under Protocol h2c answered: %s %d %q", resp.Proto, resp.StatusCode, b)
	}
}
