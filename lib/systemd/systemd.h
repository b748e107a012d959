// systemd without libsystemd (docs/upgrade-systemd.md): socket activation,
// with the connections a previous process left in the fd store
// (activation.cc), and the store itself (fdstore.cc). The C entries are
// capi/systemd.cc.
#pragma once

#include <cstdint>

#include "loop/engine.h"
#include "weir.h"

namespace weir::systemd {

// The fd names weir gives what it stores.
inline constexpr char kListenName[] = "weir-listen";
inline constexpr char kConnPrefix[] = "weir-conn-";
inline constexpr char kImagesName[] = "weir-images";

// weir_engine_listen_systemd; st is filled (zeroed first), never null.
int listen_systemd(Engine &e, const char *name, weir_systemd_stats &st);
// weir_engine_store_systemd; likewise.
int store_systemd(Engine &e, int64_t timeout_ns, weir_systemd_stats &st);

} // namespace weir::systemd
