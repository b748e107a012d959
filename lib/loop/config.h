// The engine's configuration defaults, written down once: weir_config_init
// (capi/) and Engine::create (which fills what an older, shorter weir_config
// does not carry) both read them from here.
#pragma once

#include "weir.h"

namespace weir {

// Every default weir.h documents for weir_config (limits NULL: the parser's).
void config_defaults(weir_config *cfg);

// A caller's config (any size the ABI rule accepts) into a full one: the
// fields past its size keep their defaults, and each zero weir.h calls "the
// default" becomes it. cfg->limits is left as the caller's pointer. Returns
// false for a size outside the rule.
bool config_resolve(const weir_config *in, weir_config *out);

} // namespace weir
