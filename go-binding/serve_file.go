package weir

/*
#include <errno.h>
#include "weirgo.h"
*/
import "C"

import (
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"unsafe"
)

// FileOptions tune ServeFile. The zero value (or nil) serves with the
// content type of the file's name, ranges on, keep-alive.
type FileOptions struct {
	// ContentType of 200 and 206; "" = ContentType(f.Name()).
	ContentType string
	// NoRanges ignores Range and If-Range (the whole file, no
	// Accept-Ranges): weir's WEIR_FILE_NO_RANGES.
	NoRanges bool
	// Close closes the connection after the answer (as SetClose).
	Close bool
}

// ErrFileHeader: a field added before ServeFile names one weir_serve_file
// writes itself (ETag, Last-Modified, Content-Type, Content-Range,
// Accept-Ranges). The exchange is still to be answered.
var ErrFileHeader = errors.New("weir: ETag, Last-Modified, Content-Type, Content-Range and Accept-Ranges are set by ServeFile")

// ServeFile answers the request with the regular file f as nginx serves
// static files (weir_serve_file, docs/api.md §5.7): ETag and Last-Modified
// from f's identity and mtime, the request's preconditions evaluated
// (If-Match and If-Unmodified-Since: 412; If-None-Match and
// If-Modified-Since: 304), one byte range (206 with Content-Range, 416 when
// unsatisfiable, If-Range honoured; several ranges get the whole file), HEAD
// without a body, and 405 (Allow: GET, HEAD) for any other method. A body
// leaves through RespondFile's zero-copy path. The fields added with
// AddHeader (Cache-Control, Vary, ...) go on 200, 206 and 304 only.
//
// It returns the status answered (the exchange consumed; counted in
// Metrics.FileServes), or 0 and an error: ErrNotRegular (f is not a
// regular file), ErrFileHeader, or a failure to reach f's descriptor leave
// the exchange unanswered, for the caller to answer otherwise; ErrGone (the
// client left) and any other weir error consumed it. weir keeps its own
// duplicate of the descriptor: f may be closed when ServeFile returns.
// Any goroutine the handler answers from, as Respond.
func (w *ResponseWriter) ServeFile(f *os.File, opts *FileOptions) (int, error) {
	if w.answered {
		return 0, ErrAnswered
	}
	if f == nil {
		return 0, ErrNotRegular
	}
	var o FileOptions
	if opts != nil {
		o = *opts
	}
	if w.hasFileField() {
		return 0, ErrFileHeader
	}
	sc, err := f.SyscallConn() // not f.Fd(), which would put f in blocking mode
	if err != nil {
		return 0, err
	}
	hp, flags := w.encoded()
	if o.Close {
		flags |= C.WEIR_RESPOND_CLOSE
	}
	var fileFlags C.uint32_t
	if o.NoRanges {
		fileFlags |= C.WEIR_FILE_NO_RANGES
	}
	// The content type crosses NUL-ended in Go memory (C reads it during
	// the call only); "" leaves the choice to weir_content_type(f.Name()).
	var ctype []byte
	var cp *C.char
	if o.ContentType != "" {
		ctype = append(append(make([]byte, 0, len(o.ContentType)+1), o.ContentType...), 0)
		cp = (*C.char)(unsafe.Pointer(&ctype[0]))
	}
	name := f.Name()
	// Counted before the call, as RespondFile's: an async answer may reach
	// the client (and a test read the count) before the call returns.
	w.e.stats.serves.Add(1)
	var rc C.int
	if cerr := sc.Control(func(fd uintptr) {
		rc = cServeFile(w.ex, C.int(fd), hp, C.uint32_t(w.nhdr), cp, (*C.char)(unsafe.Pointer(unsafe.StringData(name))),
			C.size_t(len(name)), fileFlags, C.uint32_t(flags))
	}); cerr != nil {
		w.e.stats.serves.Add(^uint64(0))
		return 0, cerr
	}
	if rc > 0 {
		w.answered = true
		return int(rc), nil
	}
	w.e.stats.serves.Add(^uint64(0))
	switch rc {
	case -C.EINVAL, -C.EBADF:
		return 0, ErrNotRegular
	case -C.EAGAIN, -C.EMFILE, -C.ENFILE, C.WEIR_E_STATE:
		return 0, codeErr("weir_serve_file", rc) // not consumed either: answer otherwise
	}
	w.answered = true
	w.e.countRespond(rc)
	return 0, codeErr("weir_serve_file", rc)
}

// hasFileField reports a field weir_serve_file owns among the added ones.
func (w *ResponseWriter) hasFileField() bool {
	for p, i := w.hdr, uint32(0); i < w.nhdr; i++ {
		nl := binary.NativeEndian.Uint32(p[0:4])
		vl := binary.NativeEndian.Uint32(p[4:8])
		switch strings.ToLower(string(p[8 : 8+nl])) {
		case "etag", "last-modified", "content-type", "content-range", "accept-ranges":
			return true
		}
		p = p[8+nl+vl:]
	}
	return false
}

// ContentType is the Content-Type weir gives a file name by its extension
// (weir_content_type: html, css, js, json, svg, png, jpeg, wasm, woff2,
// mp4, ...; text types with "; charset=utf-8"), "application/octet-stream"
// when unknown. Any goroutine.
func ContentType(name string) string {
	return C.GoString(C.weir_content_type((*C.char)(unsafe.Pointer(unsafe.StringData(name))), C.size_t(len(name))))
}
