// A configuration's part for every connection's session: resolved once per
// engine (Engine::create) into the ConnSettings each session reads, with
// weir_config's defaults filled in where the host left 0.
#pragma once

#include "proto/exchange.h"
#include "weir.h"

namespace weir {

// Fills s from c (c already copied: the caller owns it) and points
// c.limits at s->limits, so the config never points at the caller's memory.
// false: a value out of its range (the engine refuses with -EINVAL).
bool session_settings(weir_config &c, ConnSettings *s);

} // namespace weir
