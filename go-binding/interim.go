package weir

/*
#include <errno.h>
#include "weirgo.h"
*/
import "C"

import (
	"encoding/binary"
	"unsafe"
)

// Interim answers (weir_respond_interim): a 1xx head sent before the final
// answer, the exchange staying the handler's. net/http's WriteHeader(103)
// (Early Hints, with its Link fields) and WriteHeader(100) go through it.

// Interim sends a 1xx answer now: status 100 or 102..199 with the fields
// given as name, value pairs (the added headers are the final answer's and
// are not sent). It leaves before the final answer and after every answer
// before this one on the connection. A 100 for a request whose body streams
// is that body's 100 Continue (the first ReadBody then sends none). Nothing
// is sent to an HTTP/1.0 client, nor once the connection died (nil: the
// final answer learns it). Errors: ErrAnswered (the answer began),
// ErrBadStatus, ErrBadHeader/ErrReservedHeader, weir's.
func (w *ResponseWriter) Interim(status int, fields ...string) error {
	if w.answered {
		return ErrAnswered
	}
	if status < 100 || status > 199 || status == 101 || len(fields)%2 != 0 {
		return ErrBadStatus
	}
	enc, n, err := encodeFields(fields)
	if err != nil {
		return err
	}
	var hp *C.char
	if n > 0 {
		hp = (*C.char)(unsafe.Pointer(&enc[0]))
	}
	rc := C.weirgo_respond_interim(w.ex, C.int(status), hp, C.uint32_t(n))
	if rc == 0 {
		w.e.stats.interims.Add(1)
	}
	return codeErr("weir_respond_interim", rc)
}

// encodeFields checks name, value pairs as AddHeader does and encodes them
// as weirgo's helpers take them (pointer-free memory).
func encodeFields(kv []string) ([]byte, uint32, error) {
	var enc []byte
	var n uint32
	for i := 0; i+1 < len(kv); i += 2 {
		name, value := kv[i], kv[i+1]
		if err := checkHeader(name, value); err != nil {
			return nil, 0, err
		}
		var b [8]byte
		binary.NativeEndian.PutUint32(b[0:4], uint32(len(name)))
		binary.NativeEndian.PutUint32(b[4:8], uint32(len(value)))
		enc = append(enc, b[:]...)
		enc = append(enc, name...)
		enc = append(enc, value...)
		n++
	}
	return enc, n, nil
}

// EndTrailers ends a chunked stream with trailer fields (name, value pairs,
// checked as AddHeader checks headers). A stream that is not chunked (a
// Content-Length, HEAD, 204/304, an HTTP/1.0 client) cannot carry them:
// weir's -EINVAL, and the stream stays open (End it without).
func (s *Stream) EndTrailers(fields ...string) error {
	if s.over.Load() {
		return ErrStreamOver
	}
	if len(fields) == 0 {
		return s.End()
	}
	if len(fields)%2 != 0 {
		return ErrBadHeader
	}
	enc, n, err := encodeFields(fields)
	if err != nil {
		return err
	}
	rc := s.call(func() C.int {
		return C.weirgo_stream_end(s.ex, (*C.char)(unsafe.Pointer(&enc[0])), C.uint32_t(n))
	})
	if rc == -C.EINVAL || rc == -C.ENOMEM {
		return codeErr("weir_stream_end", rc) // not consumed
	}
	s.finish(rc)
	return codeErr("weir_stream_end", rc)
}
