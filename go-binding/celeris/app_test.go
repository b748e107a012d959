package weirceleris

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/goceleris/celeris"
	"github.com/goceleris/celeris/engine"
	"github.com/goceleris/celeris/protocol/h2/stream"
	"github.com/goceleris/celeris/resource"
	weir "github.com/weir-http/weir/go-binding"
)

// testBackend is the weir backend the tests run on: WEIR_TEST_BACKEND, a
// name in weir's list (tests/scripts/go_celeris.sh runs the suite once per
// backend), else epoll; a name no backend has stops the run.
func testBackend() weir.Backend {
	name := os.Getenv("WEIR_TEST_BACKEND")
	if name == "" {
		return weir.BackendEpoll
	}
	b, err := weir.BackendByName(name)
	if err != nil {
		panic("WEIR_TEST_BACKEND: " + err.Error())
	}
	return b
}

// testEngine is testBackend in celeris's names, for a celeris.Config's
// Engine (one backend; Adaptive, weir's pair of both, is adaptive_test.go's).
func testEngine() celeris.EngineType {
	return celeris.EngineType(EngineTypeOf(testBackend()))
}

// app is a small celeris application: a middleware adding a header, a route
// with a path parameter answering JSON from the query, a POST answering a
// string, and a streamed answer through Context.StreamWriter.
func app(cfg celeris.Config) *celeris.Server {
	s := celeris.New(cfg)
	s.Use(func(c *celeris.Context) error {
		c.SetHeader("x-mw", "seen "+c.Method())
		return c.Next()
	})
	s.GET("/users/:id", func(c *celeris.Context) error {
		return c.JSON(200, map[string]string{"id": c.Param("id"), "q": c.Query("q")})
	})
	s.POST("/echo", func(c *celeris.Context) error {
		return c.String(201, "got %d bytes: %s", len(c.Body()), c.Body())
	})
	s.GET("/stream", func(c *celeris.Context) error {
		sw := c.StreamWriter()
		if sw == nil {
			return errors.New("engine cannot stream")
		}
		h := append(c.ResponseHeaders(), [2]string{"content-type", "text/plain"})
		if err := sw.WriteHeader(200, h); err != nil {
			return err
		}
		for _, part := range []string{"one,", "two,", "three"} {
			if _, err := sw.Write([]byte(part)); err != nil {
				return err
			}
			_ = sw.Flush()
		}
		return sw.Close()
	})
	return s
}

// run starts srv on 127.0.0.1 and stops it (context cancel, then
// StartWithContext's graceful shutdown) at the end of the test.
func run(t *testing.T, srv *celeris.Server) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.StartWithContext(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for srv.Addr() == nil {
		select {
		case err := <-done:
			if errors.Is(err, weir.ErrUnavailable) {
				t.Skipf("%v: %v", testBackend(), err)
			}
			t.Fatalf("server ended before binding: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("server did not bind")
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("StartWithContext did not return after cancel")
		}
	})
	return "http://" + srv.Addr().String()
}

type reply struct {
	status    int
	mw, ctype string
	length    int64
	body      string
}

// String keeps failure messages short (the big body).
func (r reply) String() string {
	if len(r.body) > 80 {
		r.body = r.body[:40] + fmt.Sprintf("...(%d bytes)", len(r.body))
	}
	return fmt.Sprintf("{%d mw=%q type=%q len=%d body=%q}", r.status, r.mw, r.ctype, r.length, r.body)
}

func get(t *testing.T, c *http.Client, method, url, body string) reply {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: body: %v", method, url, err)
	}
	return reply{resp.StatusCode, resp.Header.Get("X-Mw"), resp.Header.Get("Content-Type"), resp.ContentLength, string(b)}
}

// A whole celeris.Server on weir through Config.EngineFactory (the patch):
// celeris's router, middleware and Context answer over real sockets, and
// weir's own counters show the requests went through weir. The control arm
// is the same application on celeris's own epoll engine: the answers must be
// the same, except by design the streamed answer's framing (chunked there,
// Content-Length on weir, which sends whole answers).
func TestCelerisAppOnWeir(t *testing.T) {
	var we *Engine
	factory := Factory(weir.Config{Backend: testBackend(), Workers: 2})
	hooked := func(cfg resource.Config, h stream.Handler) (engine.Engine, error) {
		e, err := factory(cfg, h)
		if err == nil {
			we = e.(*Engine)
		}
		return e, err
	}
	quiet := celeris.Config{Addr: "127.0.0.1:0", Protocol: celeris.HTTP1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	onWeir, onCeleris := quiet, quiet
	onWeir.EngineFactory, onWeir.Engine = hooked, testEngine()
	onCeleris.Engine = celeris.Epoll
	weirURL, celURL := run(t, app(onWeir)), run(t, app(onCeleris))
	if we == nil {
		t.Fatal("EngineFactory was not called")
	}
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()

	big := strings.Repeat("x", 20000)
	cases := []struct {
		method, path, body string
		want               reply // length -2: not checked here (see framing below)
	}{
		{"GET", "/users/42?q=hello", "", reply{200, "seen GET", "application/json", -2, `{"id":"42","q":"hello"}`}},
		// celeris hands the parameter over undecoded, on any engine.
		{"GET", "/users/ab%20c", "", reply{200, "seen GET", "application/json", -2, `{"id":"ab%20c","q":""}`}},
		{"POST", "/echo", "ping", reply{201, "seen POST", "text/plain", 17, "got 4 bytes: ping"}},
		{"POST", "/echo", big, reply{201, "seen POST", "text/plain", int64(len("got 20000 bytes: ") + len(big)), "got 20000 bytes: " + big}},
		{"GET", "/stream", "", reply{200, "seen GET", "text/plain", -2, "one,two,three"}},
		{"GET", "/nowhere", "", reply{404, "", "", -2, ""}},
		{"POST", "/users/1", "", reply{405, "", "", -2, ""}},
	}
	for _, tc := range cases {
		w := get(t, client, tc.method, weirURL+tc.path, tc.body)
		c := get(t, client, tc.method, celURL+tc.path, tc.body)
		if tc.path == "/stream" && (w.length != -1 || c.length != -1) {
			// The handler flushes: both stream it chunked (weir through a weir.Stream).
			t.Errorf("stream framing: weir length %d, celeris %d (want -1, chunked, from both)", w.length, c.length)
		}
		if w != c {
			t.Errorf("%s %s:\nweir    %v\nceleris %v", tc.method, tc.path, w, c)
		}
		if tc.want.length == -2 {
			w.length = -2
		}
		if tc.want.status >= 400 {
			w.ctype, w.body = "", "" // the error page text is celeris's; agreement is checked above
		}
		if tc.want.ctype == "application/json" {
			var got, want map[string]string
			if json.Unmarshal([]byte(w.body), &got) != nil || json.Unmarshal([]byte(tc.want.body), &want) != nil ||
				got["id"] != want["id"] || got["q"] != want["q"] {
				t.Errorf("%s %s: JSON %q, want %q", tc.method, tc.path, w.body, tc.want.body)
			}
			w.body = tc.want.body
		}
		if w != tc.want {
			t.Errorf("%s %s on weir:\ngot  %v\nwant %v", tc.method, tc.path, w, tc.want)
		}
	}
	if m := we.Metrics(); m.RequestCount < uint64(len(cases)) {
		t.Errorf("weir counted %d requests, want >= %d: the application did not run on weir", m.RequestCount, len(cases))
	}
	if we.Weir() == nil {
		t.Error("no weir engine")
	}
}
