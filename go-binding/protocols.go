package weir

/*
#include <weir.h>
*/
import "C"

import "fmt"

// Protocols selects what the listeners speak (weir_config.protocols,
// docs/http2.md). The zero value is ProtocolsAuto, as 0 is in C.
type Protocols int

const (
	// ProtocolsAuto speaks both: a connection is told apart on its first
	// bytes (the HTTP/2 client preface or an HTTP/1 request line), and an
	// HTTP/1.1 request may ask for Upgrade: h2c.
	ProtocolsAuto Protocols = iota
	// ProtocolsHTTP1 speaks HTTP/1.1 and 1.0 only.
	ProtocolsHTTP1
	// ProtocolsH2C speaks HTTP/2 in cleartext by prior knowledge only.
	ProtocolsH2C
)

func (p Protocols) String() string {
	switch p {
	case ProtocolsAuto:
		return "auto"
	case ProtocolsHTTP1:
		return "http1"
	case ProtocolsH2C:
		return "h2c"
	}
	return fmt.Sprintf("Protocols(%d)", int(p))
}

// The HTTP/2 knobs' upper bounds, as weir_engine_create checks them: New
// names the field rather than passing on create's bare -EINVAL.
const (
	maxH2Streams     = 10000
	maxH2HeaderTable = 65536
	maxH2Window      = 1<<31 - 1
)

func (c *Config) validateH2() error {
	if c.Protocols < ProtocolsAuto || c.Protocols > ProtocolsH2C {
		return fmt.Errorf("weir: unknown Config.Protocols %d (ProtocolsAuto, ProtocolsHTTP1 or ProtocolsH2C)", int(c.Protocols))
	}
	if c.H2MaxStreams < 0 || c.H2MaxStreams > maxH2Streams {
		return fmt.Errorf("weir: Config.H2MaxStreams %d must be in 0..%d (0: weir's 100)", c.H2MaxStreams, maxH2Streams)
	}
	if c.H2HeaderTable < 0 || c.H2HeaderTable > maxH2HeaderTable {
		return fmt.Errorf("weir: Config.H2HeaderTable %d must be in 0..%d (0: weir's 4096)", c.H2HeaderTable, maxH2HeaderTable)
	}
	if c.H2StreamWindow < 0 || c.H2StreamWindow > maxH2Window {
		return fmt.Errorf("weir: Config.H2StreamWindow %d must be in 0..%d (0: weir's 65535)", c.H2StreamWindow, maxH2Window)
	}
	return nil
}

func (c *Config) fillH2(out *C.weir_config) {
	switch c.Protocols {
	case ProtocolsHTTP1:
		out.protocols = C.WEIR_PROTO_HTTP1
	case ProtocolsH2C:
		out.protocols = C.WEIR_PROTO_H2C
	default:
		out.protocols = C.WEIR_PROTO_AUTO
	}
	out.h2_max_streams = u32(c.H2MaxStreams)
	out.h2_header_table = u32(c.H2HeaderTable)
	out.h2_stream_window = u32(c.H2StreamWindow)
}
