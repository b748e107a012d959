//go:build !weir_escape

package weir

// The hot crossings, declared noescape and nocallback (Go 1.24+):
//   - noescape: C keeps none of the Go pointers it is given after it returns
//     (weirgo_cycle reads the answers and arena and writes the out arrays;
//     weir_respond copies headers and body before it returns; weir_serve_file
//     reads its fields, content type and the file's name only during the call);
//   - nocallback: weir never calls into Go (the binding installs no log
//     callback), so the runtime may skip the callback bookkeeping.
// Build with -tags weir_escape to compile the same calls without them; the
// benchmarks in bench_test.go compare the two.

/*
#cgo noescape weirgo_cycle
#cgo nocallback weirgo_cycle
#cgo noescape weirgo_respond
#cgo nocallback weirgo_respond
#cgo noescape weirgo_serve_file
#cgo nocallback weirgo_serve_file
#cgo nocallback weirgo_on_worker
#cgo nocallback weirgo_leave
#cgo nocallback weirgo_enter
#include "weirgo.h"
*/
import "C"

import "unsafe"

const crossingDirectives = true

func cCycle(w *C.weir_worker, ans *C.weirgo_answer, nans C.uint32_t, arena *C.char, rcs *C.int32_t,
	reads *C.weirgo_read, nreads C.uint32_t, rarena *C.char,
	out **C.weir_exchange, reqs **C.weir_request, peers *C.struct_sockaddr_storage, max C.uint32_t,
	timeout C.int, watch *C.int32_t, taken *C.weirgo_taken, mark C.int) C.int {
	return C.weirgo_cycle(w, ans, nans, arena, rcs, reads, nreads, rarena, out, reqs, peers, max, timeout, watch,
		taken, mark)
}

func cRespond(ex *C.weir_exchange, status C.int, hdrs *C.char, nhdr C.uint32_t, body unsafe.Pointer,
	bodyLen C.size_t, flags C.uint32_t) C.int {
	return C.weirgo_respond(ex, status, hdrs, nhdr, body, bodyLen, flags)
}

func cServeFile(ex *C.weir_exchange, fd C.int, hdrs *C.char, nhdr C.uint32_t, ctype *C.char, name *C.char,
	nameLen C.size_t, fileFlags, respondFlags C.uint32_t) C.int {
	return C.weirgo_serve_file(ex, fd, hdrs, nhdr, ctype, name, nameLen, fileFlags, respondFlags)
}
