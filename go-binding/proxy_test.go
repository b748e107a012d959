package weir

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// proxyV1 is HAProxy's send-proxy header for a client at 203.0.113.7:51234.
const proxyV1 = "PROXY TCP4 203.0.113.7 127.0.0.1 51234 80\r\n"

// proxyV2 is a send-proxy-v2 header: the PROXY command (LOCAL with local)
// over TCP from src to dst (both IPv4 or both IPv6).
func proxyV2(src, dst string, local bool) string {
	s, d := net.ParseIP(src), net.ParseIP(dst)
	var b []byte
	b = append(b, "\r\n\r\n\x00\r\nQUIT\n"...)
	cmd := byte(0x21)
	if local {
		cmd = 0x20
	}
	b = append(b, cmd)
	var addrs []byte
	if s4 := s.To4(); s4 != nil {
		b = append(b, 0x11) // TCP over IPv4
		addrs = append(append(addrs, s4...), d.To4()...)
	} else {
		b = append(b, 0x21) // TCP over IPv6
		addrs = append(append(addrs, s.To16()...), d.To16()...)
	}
	addrs = binary.BigEndian.AppendUint16(addrs, 40000)
	addrs = binary.BigEndian.AppendUint16(addrs, 443)
	b = binary.BigEndian.AppendUint16(b, uint16(len(addrs)))
	return string(append(b, addrs...))
}

// Config.ProxyProtocol reaches weir_config: behind a v1 and a v2 header
// (IPv4 and IPv6) the native Request's RemoteAddr and the net/http
// adapter's r.RemoteAddr are the proxied source, and every request of the
// connection keeps it; v2's LOCAL keeps the socket's own peer (127.0.0.1);
// ProxyTrusted lets 127.0.0.1 send the header. The refusals: a request
// without a header is answered 400 and closed, one from outside
// ProxyTrusted too, each counted in Metrics (ProxyMissing, ProxyUntrusted,
// Closes[closeProxy]); the other arm, an engine without ProxyProtocol,
// answers the same bare request 200 with the socket's peer. A trusted list
// weir cannot parse fails New.
func TestProxyProtocol(t *testing.T) {
	for _, kind := range []string{"native", "net/http"} {
		t.Run(strings.ReplaceAll(kind, "/", ""), func(t *testing.T) { testProxyProtocol(t, kind) })
	}
}

func testProxyProtocol(t *testing.T, kind string) {
	cfg := Config{ProxyProtocol: true, ProxyTrusted: "10.0.0.0/8, 127.0.0.1/32, ::1"}
	if kind == "native" {
		cfg.PeerAddrs = true
		cfg.Handler = func(r *Request, w *ResponseWriter) {
			peer := "<nil>"
			if a := r.RemoteAddr(); a != nil {
				peer = a.String()
			}
			_ = w.RespondString(200, peer)
		}
	} else {
		cfg.HTTP = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, r.RemoteAddr) })
	}
	e, addr := start(t, cfg)
	cases := []struct{ header, want string }{
		{proxyV1, "203.0.113.7:51234"},
		{proxyV2("198.51.100.9", "127.0.0.1", false), "198.51.100.9:40000"},
		{proxyV2("2001:db8::7", "2001:db8::1", false), "[2001:db8::7]:40000"},
		{proxyV2("198.51.100.9", "127.0.0.1", true), "127.0.0.1:"}, // LOCAL: the socket's peer
	}
	for _, tc := range cases {
		c := dial(t, addr)
		c.send(tc.header + get("/a"))
		for i := 0; i < 2; i++ { // the peer holds for every request of the connection
			resp, body := c.read("GET")
			if resp.StatusCode != 200 || !strings.HasPrefix(body, tc.want) || (!strings.HasSuffix(tc.want, ":") && body != tc.want) {
				t.Fatalf("%s, header %q: %d %q, want %q", kind, tc.header, resp.StatusCode, body, tc.want)
			}
			if i == 0 {
				c.send(get("/b"))
			}
		}
	}
	m := e.Metrics()
	if m.ProxyV1 != 1 || m.ProxyV2 != 3 || m.ProxyLocal != 1 {
		t.Errorf("%s: ProxyV1 %d ProxyV2 %d ProxyLocal %d, want 1 3 1", kind, m.ProxyV1, m.ProxyV2, m.ProxyLocal)
	}

	// No header: 400, then the close.
	c := dial(t, addr)
	c.send(get("/"))
	resp, _ := c.read("GET")
	if resp.StatusCode != 400 {
		t.Fatalf("%s, no header: %d, want 400", kind, resp.StatusCode)
	}
	if _, err := c.br.ReadByte(); err == nil {
		t.Fatalf("%s, no header: the connection stayed open", kind)
	}
	waitFor(t, "the proxy close", func() bool {
		m := e.Metrics()
		return m.ProxyMissing == 1 && m.Closes[closeProxy] == 1
	})
	if CloseReasonName(closeProxy) != "proxy" {
		t.Errorf("CloseReasonName(%d) = %q", closeProxy, CloseReasonName(closeProxy))
	}

	// The other arm: without ProxyProtocol the same bare request is served,
	// with the socket's peer.
	plain := cfg
	plain.ProxyProtocol, plain.ProxyTrusted = false, ""
	_, paddr := start(t, plain)
	c = dial(t, paddr)
	c.send(get("/"))
	if resp, body := c.read("GET"); resp.StatusCode != 200 || !strings.HasPrefix(body, "127.0.0.1:") {
		t.Fatalf("%s, without ProxyProtocol: %d %q", kind, resp.StatusCode, body)
	}

	// From outside ProxyTrusted: refused though the header is valid.
	strict := cfg
	strict.ProxyTrusted = "10.0.0.0/8"
	se, saddr := start(t, strict)
	c = dial(t, saddr)
	c.send(proxyV1 + get("/"))
	if resp, _ := c.read("GET"); resp.StatusCode != 400 {
		t.Fatalf("%s, untrusted source: %d, want 400", kind, resp.StatusCode)
	}
	waitFor(t, "the untrusted close", func() bool {
		m := se.Metrics()
		return m.ProxyUntrusted == 1 && m.Closes[closeProxy] == 1
	})

	bad := cfg
	bad.ProxyTrusted = "not-an-address"
	if _, err := New(bad); err == nil {
		t.Errorf("%s: New with ProxyTrusted %q succeeded", kind, bad.ProxyTrusted)
	} else if werr := (*Error)(nil); !errors.As(err, &werr) {
		t.Errorf("%s: New with a bad ProxyTrusted: %v, want weir_engine_create's error", kind, err)
	}
	if _, err := New(Config{ProxyTrusted: "127.0.0.1", Handler: hello}); err == nil {
		t.Errorf("ProxyTrusted without ProxyProtocol accepted")
	}
}
