// The engine's configuration defaults, written down once: weir_config_init
// (capi/) and Engine::create (which fills what an older, shorter weir_config
// does not carry) both read them from here.
#pragma once

#include "weir.h"

namespace weir {

// Every default weir.h documents for weir_config (limits included).
void config_defaults(weir_config *cfg);

} // namespace weir
