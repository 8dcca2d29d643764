#pragma once
// The attention search space of one kernel (forward, dK/dV, dQ): the rows path's rows per lane
// and loop unrolling, the tiled path's query and key tiles and workgroup size.
#include <vector>

#include "engine/device_info.h"
#include "engine/ops/attention_choice.h"

namespace vkf::tune {

// The configuration an untuned run gets for `p` on `info` (attention_default_tiles with the
// rows capped by the sequence and the unroll resolved, as the op resolves them), complete.
ops::AttentionTiles attention_default(const DeviceInfo& info, const ops::AttentionProblem& p);

// Every candidate `info` can run (attention_tiles_misfit), without duplicates (same_kernel), in
// the order the search tries them: the default first (the prior), then its own path's
// configurations nearest it first, then the other path's.
std::vector<ops::AttentionTiles> attention_candidates(const DeviceInfo& info,
                                                      const ops::AttentionProblem& p);

}  // namespace vkf::tune
