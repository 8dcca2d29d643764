#pragma once
// Checkpoint averaging (Vaswani et al. 2017, section 6.1: the last 5 checkpoints for the base
// model): the element-wise mean of the parameters of several checkpoints of one model.
#include <string>
#include <vector>

#include "model/checkpoint.h"

namespace vkf::model {

// The last `n` checkpoints (by step) in a directory, oldest first. Throws when it holds fewer.
std::vector<std::string> last_checkpoints(const std::string& dir, size_t n);

// Mean of the listed checkpoints, accumulated in double; the config is the first's, the step the
// highest. Throws vkf::Error when a file is unreadable or its config or vocabulary differs.
Checkpoint average_checkpoints(const std::vector<std::string>& paths);

}  // namespace vkf::model
