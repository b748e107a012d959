package weir

/*
#include <sys/socket.h>
#include <weir.h>
*/
import "C"

import (
	"encoding/binary"
	"net"
	"net/netip"
	"strings"
	"unsafe"
)

// Request is one parsed request, read in place: every string and slice it
// returns is a view into weir's buffers, valid until the exchange is answered
// (Respond, or the handler returning). Copy what you keep
// (strings.Clone, bytes.Clone). A Request is reused once its handler returns.
type Request struct {
	r    *C.weir_request
	peer *C.struct_sockaddr_storage
}

func view(s C.weir_str_t) string {
	if s.len == 0 {
		return ""
	}
	return unsafe.String((*byte)(unsafe.Pointer(s.ptr)), int(s.len))
}

// Method is the request method, e.g. "GET".
func (r *Request) Method() string { return view(r.r.method) }

// Target is the whole request-target, e.g. "/a/b?x=1".
func (r *Request) Target() string { return view(r.r.target) }

// Path is the path of an origin- or absolute-form target ("/" when absent).
func (r *Request) Path() string { return view(r.r.path) }

// Query is the query without its '?', "" when absent.
func (r *Request) Query() string { return view(r.r.query) }

// Host is the Host field value, or the target's authority when the
// request-target is in absolute-form (RFC 9112 3.2.2).
func (r *Request) Host() string { return view(r.r.host) }

// ProtoMinor is 1 for HTTP/1.1 and 0 for HTTP/1.0 and HTTP/2.
func (r *Request) ProtoMinor() int { return int(r.r.version_minor) }

// ProtoMajor is 2 for a stream of an HTTP/2 connection (weir's
// WEIR_REQ_HTTP2: Method, Target and Host then come from the :method, :path
// and :authority pseudo-headers), else 1.
func (r *Request) ProtoMajor() int {
	if r.HTTP2() {
		return 2
	}
	return 1
}

// HTTP2 reports whether the request is a stream of an HTTP/2 connection.
func (r *Request) HTTP2() bool { return r.r.flags&C.WEIR_REQ_HTTP2 != 0 }

// KeepAlive reports whether the connection may carry another request.
func (r *Request) KeepAlive() bool { return r.r.flags&C.WEIR_REQ_KEEP_ALIVE != 0 }

// ConnID identifies the connection, unique within the engine.
func (r *Request) ConnID() uint64 { return uint64(r.r.connection_id) }

// Body is the whole decoded body (nil when there is none).
func (r *Request) Body() []byte {
	if r.r.body.len == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(r.r.body.ptr)), int(r.r.body.len))
}

func (r *Request) headers() []C.weir_header_t {
	if r.r.num_headers == 0 {
		return nil
	}
	return unsafe.Slice(r.r.headers, int(r.r.num_headers))
}

// NumHeaders is the number of header fields.
func (r *Request) NumHeaders() int { return int(r.r.num_headers) }

// HeaderAt gives the i-th header field as sent (name case preserved).
func (r *Request) HeaderAt(i int) (name, value string) {
	h := r.headers()[i]
	return view(h.name), view(h.value)
}

// Header is the value of the first field named name (case-insensitive), "" if none.
func (r *Request) Header(name string) string {
	for _, h := range r.headers() {
		if int(h.name.len) == len(name) && strings.EqualFold(view(h.name), name) {
			return view(h.value)
		}
	}
	return ""
}

// NumTrailers is the number of trailer fields of a chunked body.
func (r *Request) NumTrailers() int { return int(r.r.num_trailers) }

// TrailerAt gives the i-th trailer field.
func (r *Request) TrailerAt(i int) (name, value string) {
	h := unsafe.Slice(r.r.trailers, int(r.r.num_trailers))[i]
	return view(h.name), view(h.value)
}

// RemoteAddr is the peer's address, or nil unless Config.PeerAddrs (or
// Config.HTTP) is set.
func (r *Request) RemoteAddr() *net.TCPAddr {
	if r.peer == nil {
		return nil
	}
	ap, ok := sockaddrToAddrPort(r.peer)
	if !ok {
		return nil
	}
	return net.TCPAddrFromAddrPort(ap)
}

// remoteAddrString is RemoteAddr().String() in one allocation (net/http's
// Request.RemoteAddr: "1.2.3.4:80", "[::1]:80"; a v4-mapped address as v4,
// as net.TCPAddr prints it), or "" when weir has no peer address.
func (r *Request) remoteAddrString() string {
	if r.peer == nil {
		return ""
	}
	ap, ok := sockaddrToAddrPort(r.peer)
	if !ok {
		return ""
	}
	return ap.String()
}

func sockaddrToAddrPort(ss *C.struct_sockaddr_storage) (netip.AddrPort, bool) {
	b := unsafe.Slice((*byte)(unsafe.Pointer(ss)), C.sizeof_struct_sockaddr_storage)
	family := *(*uint16)(unsafe.Pointer(ss))
	port := binary.BigEndian.Uint16(b[2:4])
	switch family {
	case C.AF_INET:
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), port), true
	case C.AF_INET6:
		a := netip.AddrFrom16([16]byte(b[8:24]))
		return netip.AddrPortFrom(a.Unmap(), port), true
	}
	return netip.AddrPort{}, false
}
