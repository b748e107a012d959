package weirceleris

import (
	"bufio"
	"crypto/sha1"
	"encoding/base64"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/goceleris/celeris"
	"github.com/goceleris/celeris/engine"
	"github.com/goceleris/celeris/middleware/websocket"
	"github.com/goceleris/celeris/protocol/h2/stream"
	"github.com/goceleris/celeris/resource"
	weir "github.com/weir-http/weir/go-binding"
)

// celeris's websocket middleware on weir, through Hijack (engine.go): the
// middleware finds no engine-integrated upgrade on a foreign engine and
// hijacks, writes its own 101 and speaks websocket on the conn. A client
// handshake and one masked text frame must come back echoed, on both
// execution modes (inline: the worker is handed on while the websocket
// handler runs). Without Hijack the middleware answers 500 ("hijack not
// supported by this engine"), which is what this test's first check meets.
func TestCelerisWebsocketOnWeir(t *testing.T) {
	for _, async := range []bool{false, true} {
		name := map[bool]string{false: "inline", true: "async"}[async]
		t.Run(name, func(t *testing.T) {
			cfg := celeris.Config{Addr: "127.0.0.1:0", Protocol: celeris.HTTP1, Engine: testEngine(),
				Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
				EngineFactory: Factory(weir.Config{Backend: testBackend(), Workers: 1, Async: async})}
			var we *Engine
			made := cfg.EngineFactory
			cfg.EngineFactory = func(rc resource.Config, h stream.Handler) (engine.Engine, error) {
				e, err := made(rc, h)
				if err == nil {
					we = e.(*Engine)
				}
				return e, err
			}
			s := celeris.New(cfg)
			s.GET("/ws", websocket.New(websocket.Config{Handler: func(c *websocket.Conn) {
				for {
					mt, msg, err := c.ReadMessage()
					if err != nil {
						return
					}
					if c.WriteMessage(mt, append([]byte("echo "), msg...)) != nil {
						return
					}
				}
			}}))
			s.GET("/plain", func(c *celeris.Context) error { return c.String(200, "plain") })
			base := run(t, s)
			addr := strings.TrimPrefix(base, "http://")

			conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			key := base64.StdEncoding.EncodeToString([]byte("weir-test-key-16"))
			io.WriteString(conn, "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"+
				"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: "+key+"\r\n\r\n")
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, &http.Request{Method: "GET"})
			if err != nil {
				t.Fatalf("handshake: %v", err)
			}
			sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
			if resp.StatusCode != 101 || resp.Header.Get("Sec-Websocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]) {
				t.Fatalf("handshake answer %d %v", resp.StatusCode, resp.Header)
			}
			// While the websocket handler runs, the engine serves others.
			client := &http.Client{Timeout: 5 * time.Second}
			r, err := client.Get(base + "/plain")
			if err != nil {
				t.Fatalf("a plain request during the websocket: %v", err)
			}
			r.Body.Close()
			client.CloseIdleConnections()
			// One masked text frame, "hi".
			mask := [4]byte{1, 2, 3, 4}
			frame := []byte{0x81, 0x80 | 2, mask[0], mask[1], mask[2], mask[3], 'h' ^ mask[0], 'i' ^ mask[1]}
			if _, err := conn.Write(frame); err != nil {
				t.Fatal(err)
			}
			head := make([]byte, 2)
			if _, err := io.ReadFull(br, head); err != nil {
				t.Fatalf("echo frame: %v", err)
			}
			body := make([]byte, head[1]&0x7f)
			if _, err := io.ReadFull(br, body); err != nil || head[0] != 0x81 || string(body) != "echo hi" {
				t.Fatalf("echo frame %x %q (%v)", head, body, err)
			}
			// The upgrade's close (weir's "upgraded") is no error in
			// celeris's metrics. The negative arm: decoded by the indices
			// this engine once hard-coded (peer, not_keep_alive,
			// idle_timeout, shutdown normal), it counts as one.
			m, wm := we.Metrics(), we.Weir().Metrics()
			upgraded, byOldIndices := uint64(0), uint64(0)
			for i, n := range wm.Closes {
				if weir.CloseReasonName(i) == "upgraded" {
					upgraded += n
				}
				if i != 0 && i != 1 && i != 4 && i != 9 {
					byOldIndices += n
				}
			}
			if upgraded == 0 || m.ErrorCount != 0 || byOldIndices == 0 {
				t.Fatalf("upgraded closes %d, ErrorCount %d (want 0), by the old indices %d (want > 0)",
					upgraded, m.ErrorCount, byOldIndices)
			}
		})
	}
}
