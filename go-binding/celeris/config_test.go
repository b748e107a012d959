package weirceleris

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/goceleris/celeris"
	"github.com/goceleris/celeris/engine"
	"github.com/goceleris/celeris/protocol/h2/stream"
	"github.com/goceleris/celeris/resource"
	weir "github.com/weir-http/weir/go-binding"
)

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Each celeris setting weir cannot serve as configured fails Start with
// ErrNotServed naming the field; celeris's default Protocol, Auto, is
// served (HTTP/1.1 and h2c, h2_test.go), and EnableH2Upgrade only where
// weir's Protocols take Upgrade: h2c (Auto). Its default Engine, Adaptive,
// is served, on weir's adaptive pair (adaptive_test.go). The last case is
// the control arm: the same server with a configuration weir serves starts
// (so the refusals are the fields', not the harness's).
func TestFactoryRefuses(t *testing.T) {
	ok := func(c celeris.Config) celeris.Config {
		c.Addr, c.Logger = "127.0.0.1:0", quietLog()
		c.EngineFactory = Factory(weir.Config{Backend: testBackend(), Workers: 1})
		return c
	}
	yes := true
	for _, tc := range []struct {
		name string
		cfg  celeris.Config
		want string // in the error; "" = starts
	}{
		{"default config: auto, served", ok(celeris.Config{}), ""},
		{"protocol auto: served", ok(celeris.Config{Protocol: celeris.Auto, Engine: testEngine()}), ""},
		{"protocol auto, upgrade: served", ok(celeris.Config{Protocol: celeris.Auto, Engine: testEngine(), EnableH2Upgrade: &yes}), ""},
		{"protocol h2c: served", ok(celeris.Config{Protocol: celeris.H2C, Engine: testEngine()}), ""},
		{"h2c and upgrade", ok(celeris.Config{Protocol: celeris.H2C, Engine: testEngine(), EnableH2Upgrade: &yes}), "EnableH2Upgrade with Protocol h2c"},
		{"http1 and upgrade", ok(celeris.Config{Protocol: celeris.HTTP1, Engine: testEngine(), EnableH2Upgrade: &yes}), "EnableH2Upgrade with Protocol http1"},
		{"h2 streams past weir's", ok(celeris.Config{Protocol: celeris.Auto, Engine: testEngine(), MaxConcurrentStreams: 10001}), "MaxConcurrentStreams"},
		{"engine default: adaptive, served", ok(celeris.Config{Protocol: celeris.HTTP1}), ""},
		{"engine adaptive: served", ok(celeris.Config{Protocol: celeris.HTTP1, Engine: celeris.Adaptive}), ""},
		{"engine std", ok(celeris.Config{Protocol: celeris.HTTP1, Engine: celeris.Std}), "Engine std"},
		{"on connect: served", ok(celeris.Config{Protocol: celeris.HTTP1, Engine: testEngine(), OnConnect: func(string) {}}), ""},
		{"on disconnect: served", ok(celeris.Config{Protocol: celeris.HTTP1, Engine: testEngine(), OnDisconnect: func(string) {}}), ""},
		{"socket buffers", ok(celeris.Config{Protocol: celeris.HTTP1, Engine: testEngine(), SocketRecvBuf: 1 << 16}), "SocketRecvBuf"},
		{"control: served", ok(celeris.Config{Protocol: celeris.HTTP1, Engine: testEngine()}), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := celeris.New(tc.cfg)
			if tc.want == "" {
				run(t, srv)
				return
			}
			err := srv.Start()
			if !errors.Is(err, ErrNotServed) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Start: %v, want ErrNotServed naming %q", err, tc.want)
			}
		})
	}
}

// A base weir.Config naming the other backend than Engine is a conflict,
// refused rather than settled either way.
func TestFactoryBackendConflict(t *testing.T) {
	cfg := resource.Config{Protocol: engine.HTTP1, Engine: engine.Epoll}
	if _, _, err := translate(weir.Config{Backend: weir.BackendURing}, cfg, nil); !errors.Is(err, ErrNotServed) {
		t.Fatalf("uring base, Engine epoll: %v, want ErrNotServed", err)
	}
	cfg.Engine = engine.IOUring
	c, _, err := translate(weir.Config{}, cfg, nil)
	if err != nil || c.Backend != weir.BackendURing {
		t.Fatalf("Engine io_uring: backend %v err %v, want io_uring", c.Backend, err)
	}
}

// The limits, timeouts and resources of a resolved celeris configuration
// become weir's; celeris's "none" (0 once resolved) becomes weir's longest
// deadline and no limit, never weir's own default.
func TestFactoryTranslates(t *testing.T) {
	cfg := celeris.Config{Protocol: celeris.HTTP1, Engine: celeris.Epoll, Workers: 3, BufferSize: 8192, MaxConns: 77,
		ReadHeaderTimeout: 2 * time.Second, ReadTimeout: 3 * time.Second, WriteTimeout: 4 * time.Second,
		IdleTimeout: 5 * time.Second, MaxHeaderBytes: 8192, MaxRequestBodySize: 12345}
	rc := resolve(t, cfg)
	c, _, err := translate(weir.Config{}, rc, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := []any{c.Workers, c.ReadBufferSize, c.MaxConnections, c.HeaderTimeout, c.BodyTimeout, c.WriteTimeout,
		c.IdleTimeout, c.MaxHeaderBytes, c.MaxBody}
	want := []any{3, 8192, 77, 2 * time.Second, 3 * time.Second, 4 * time.Second, 5 * time.Second, 8192, int64(12345)}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("field %d: %v, want %v", i, got[i], want[i])
		}
	}
	none := celeris.Config{Protocol: celeris.HTTP1, Engine: celeris.Epoll, ReadHeaderTimeout: -1, ReadTimeout: -1,
		WriteTimeout: -1, IdleTimeout: -1, MaxRequestBodySize: -1}
	c, _, err = translate(weir.Config{}, resolve(t, none), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range []time.Duration{c.HeaderTimeout, c.BodyTimeout, c.WriteTimeout, c.IdleTimeout} {
		if d != longest {
			t.Errorf("timeout %d: %v, want weir's longest for celeris's none", i, d)
		}
	}
	if c.MaxBody != -1 || c.MaxConnections != math.MaxUint32 {
		t.Errorf("MaxBody %d MaxConnections %d: want no limit (-1) and no limit (2^32-1)", c.MaxBody, c.MaxConnections)
	}
	// celeris's defaults: 100 MB body, 16 MiB header section, 10s/60s/60s/600s.
	c, _, _ = translate(weir.Config{}, resolve(t, celeris.Config{Protocol: celeris.HTTP1, Engine: celeris.Epoll}), nil)
	if c.MaxBody != 100<<20 || c.MaxHeaderBytes != 16<<20 || c.HeaderTimeout != 10*time.Second ||
		c.BodyTimeout != 60*time.Second || c.WriteTimeout != 60*time.Second || c.IdleTimeout != 600*time.Second {
		t.Errorf("celeris's defaults became %+v", c)
	}
}

// resolve is the resource.Config a celeris.Server hands its factory.
func resolve(t *testing.T, cfg celeris.Config) resource.Config {
	t.Helper()
	var got resource.Config
	cfg.Addr, cfg.Logger = "127.0.0.1:0", quietLog()
	cfg.EngineFactory = func(rc resource.Config, _ stream.Handler) (engine.Engine, error) {
		got = rc
		return nil, errors.New("captured")
	}
	_ = celeris.New(cfg).Start()
	return got
}

// Auto with the upgrade off cannot be served (weir's auto always takes
// Upgrade: h2c). celeris.Server resolves Auto's upgrade to true whatever
// the Config says, so only a caller outside a Server can ask: translate
// directly, with the served arm beside it.
func TestFactoryAutoWithoutUpgrade(t *testing.T) {
	h := stream.HandlerFunc(func(context.Context, *stream.Stream) error { return nil })
	_, _, err := translate(weir.Config{}, resource.Config{Protocol: engine.Auto}, h)
	if !errors.Is(err, ErrNotServed) || !strings.Contains(err.Error(), "EnableH2Upgrade false") {
		t.Errorf("Auto without upgrade: %v, want ErrNotServed naming EnableH2Upgrade false", err)
	}
	c, _, err := translate(weir.Config{}, resource.Config{Protocol: engine.Auto, EnableH2Upgrade: true}, h)
	if err != nil || c.Protocols != weir.ProtocolsAuto {
		t.Errorf("Auto with upgrade: %v, Protocols %v, want served as auto", err, c.Protocols)
	}
}
