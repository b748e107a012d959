package weir

import (
	"bufio"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// HTTP/2 by Upgrade: h2c (RFC 7540 §3.2) from Go. Neither net/http's client
// nor its server does the upgrade, and golang.org/x/net is no dependency of
// the binding, so the client side here is a minimal framer: the HTTP/1.1
// request with Upgrade and HTTP2-Settings, the 101, then the client preface,
// and HTTP/2 frames read and written by hand. Requests it sends use only
// HPACK's static table and literals without Huffman; the server's answers
// are recognised by their DATA, which the handler writes with what the
// request said of its protocol (r.HTTP2()), so no HPACK decoder is needed.

const h2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// h2Frame writes one frame: length, type, flags, stream, payload.
func h2Frame(w io.Writer, typ, flags byte, stream uint32, payload []byte) error {
	hdr := make([]byte, 9, 9+len(payload))
	hdr[0], hdr[1], hdr[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
	hdr[3], hdr[4] = typ, flags
	binary.BigEndian.PutUint32(hdr[5:], stream)
	_, err := w.Write(append(hdr, payload...))
	return err
}

type h2Read struct {
	typ, flags byte
	stream     uint32
	payload    []byte
}

func h2ReadFrame(r io.Reader) (h2Read, error) {
	var hdr [9]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return h2Read{}, err
	}
	f := h2Read{typ: hdr[3], flags: hdr[4], stream: binary.BigEndian.Uint32(hdr[5:]) & 0x7fffffff}
	f.payload = make([]byte, int(hdr[0])<<16|int(hdr[1])<<8|int(hdr[2]))
	_, err := io.ReadFull(r, f.payload)
	return f, err
}

// h2Literal is an HPACK literal without indexing, its name from the static
// table (index < 15) and its value raw (no Huffman, shorter than 127).
func h2Literal(nameIndex byte, value string) []byte {
	return append([]byte{nameIndex, byte(len(value))}, value...)
}

// h2Body reads frames until stream's END_STREAM and returns its DATA; it
// acknowledges the server's SETTINGS and fails on RST_STREAM or GOAWAY.
func h2Body(t *testing.T, c net.Conn, br *bufio.Reader, stream uint32) string {
	t.Helper()
	var body []byte
	for {
		f, err := h2ReadFrame(br)
		if err != nil {
			t.Fatalf("stream %d: reading frames: %v (DATA so far %q)", stream, err, body)
		}
		switch {
		case f.typ == 0x4 && f.flags&0x1 == 0: // SETTINGS, not an ACK
			if err := h2Frame(c, 0x4, 0x1, 0, nil); err != nil {
				t.Fatal(err)
			}
		case f.typ == 0x3 || f.typ == 0x7: // RST_STREAM, GOAWAY
			t.Fatalf("stream %d: frame type %d from the server, payload %x", stream, f.typ, f.payload)
		case f.stream != stream:
		case f.typ == 0x0: // DATA
			body = append(body, f.payload...)
			if f.flags&0x1 != 0 {
				return string(body)
			}
		case f.typ == 0x1 && f.flags&0x1 != 0: // HEADERS ending the stream: no body
			return string(body)
		}
	}
}

// upgradeRequest is RFC 7540 §3.2's request: HTTP2-Settings carries a
// SETTINGS payload (here MAX_CONCURRENT_STREAMS 100), base64url unpadded.
func upgradeRequest(path string) string {
	settings := base64.RawURLEncoding.EncodeToString([]byte{0, 3, 0, 0, 0, 100})
	return "GET " + path + " HTTP/1.1\r\nHost: weir.test\r\n" +
		"Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: " + settings + "\r\n\r\n"
}

// protoHandler answers with the request's own account of its protocol.
func protoHandler(r *Request, w *ResponseWriter) {
	w.Respond(200, []byte(fmt.Sprintf("%d.%d %v %s", r.ProtoMajor(), r.ProtoMinor(), r.HTTP2(), r.Target())))
}

// Issue 31: an Upgrade: h2c request from Go is served as HTTP/2 on weir's
// default protocols (Auto): 101, the upgraded request answered on stream 1
// as HTTP/2 ("2.0 true"), and a second request on stream 3 of the same
// connection. The negative arm, Protocols HTTP/1 only, takes the same bytes
// as a plain HTTP/1.1 request: 200 and "1.1 false", no 101 (were weir to
// upgrade there, this arm fails on the status line).
func TestH2UpgradeFromGo(t *testing.T) {
	t.Run("auto", func(t *testing.T) {
		e, addr := start(t, Config{Handler: protoHandler})
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(20 * time.Second))
		br := bufio.NewReader(c)
		if _, err := io.WriteString(c, upgradeRequest("/up")); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("reading the answer to the upgrade: %v", err)
		}
		if resp.StatusCode != 101 || !strings.EqualFold(resp.Header.Get("Upgrade"), "h2c") {
			t.Fatalf("answer to the upgrade: %s, Upgrade %q; want 101 h2c", resp.Status, resp.Header.Get("Upgrade"))
		}
		// The client's preface and SETTINGS follow the 101 (RFC 7540 §3.5).
		if _, err := io.WriteString(c, h2Preface); err != nil {
			t.Fatal(err)
		}
		if err := h2Frame(c, 0x4, 0, 0, nil); err != nil {
			t.Fatal(err)
		}
		if got := h2Body(t, c, br, 1); got != "2.0 true /up" {
			t.Errorf("upgraded request (stream 1): %q, want \"2.0 true /up\"", got)
		}
		// Stream 3: GET (static 2), http (6), :authority (1), :path (4).
		block := append([]byte{0x82, 0x86}, h2Literal(1, "weir.test")...)
		block = append(block, h2Literal(4, "/second")...)
		if err := h2Frame(c, 0x1, 0x5, 3, block); err != nil { // END_STREAM|END_HEADERS
			t.Fatal(err)
		}
		if got := h2Body(t, c, br, 3); got != "2.0 true /second" {
			t.Errorf("stream 3 on the upgraded connection: %q, want \"2.0 true /second\"", got)
		}
		if m := e.Metrics(); m.H2Sessions != 1 || m.H2Streams != 2 {
			t.Errorf("metrics: h2_sessions %d, h2_streams %d; want 1, 2", m.H2Sessions, m.H2Streams)
		}
	})
	t.Run("http1-only", func(t *testing.T) {
		e, addr := start(t, Config{Handler: protoHandler, Protocols: ProtocolsHTTP1})
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(20 * time.Second))
		if _, err := io.WriteString(c, upgradeRequest("/up")); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("reading the answer: %v", err)
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.ProtoMajor != 1 || string(b) != "1.1 false /up" {
			t.Errorf("HTTP/1 only: %s %s %q, want HTTP/1.1 200 \"1.1 false /up\"", resp.Proto, resp.Status, b)
		}
		if m := e.Metrics(); m.H2Sessions != 0 {
			t.Errorf("metrics: h2_sessions %d, want 0", m.H2Sessions)
		}
	})
}
