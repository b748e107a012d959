package weir

/*
#include "weirgo.h"
*/
import "C"

import "unsafe"

// crossEmpty makes the hot crossings with arguments weir refuses at once
// (NULL worker, NULL exchange), so the benchmarks measure the crossing itself:
// with the answers, arena and out arrays on the caller's stack, as a batch
// would be, noescape lets them stay there.
func crossCycleEmpty() int {
	var ex [64]*C.weir_exchange
	var reqs [64]*C.weir_request
	var rcs [64]C.int32_t
	var arena [256]byte
	return int(cCycle(nil, nil, 0, (*C.char)(unsafeByte(&arena[0])), &rcs[0], nil, 0, nil, &ex[0], &reqs[0], nil, 64, 0, nil,
		nil, 0))
}

func crossRespondEmpty() int {
	var hdr [64]byte
	var body [64]byte
	return int(cRespond(nil, 200, (*C.char)(unsafeByte(&hdr[0])), 0, unsafeByte(&body[0]), 0, 0))
}

func unsafeByte(p *byte) unsafe.Pointer { return unsafe.Pointer(p) }

// crossCycleWorker makes the same refused crossing with a worker's own
// arrays (heap or C memory, as newWorker made them), so the benchmark sees
// what cgo's pointer check costs on them per cycle: with the arrays on the
// Go heap it walks each whole backing array (cgocheck=1, the default).
func crossCycleWorker(wk *worker) int {
	var arena [256]byte
	return int(cCycle(nil, nil, 0, (*C.char)(unsafeByte(&arena[0])), &wk.rcs[0], nil, 0, nil, &wk.ex[0], &wk.reqs[0],
		nil, C.uint32_t(len(wk.ex)), 0, nil, &wk.upped[0], 0))
}
