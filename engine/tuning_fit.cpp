#include "engine/tuning_fit.h"

#include <algorithm>

namespace vkf {

std::vector<std::string> drop_misfits(TuningFile& f, const DeviceInfo& info) {
  std::vector<std::string> notes;
  ops::for_each_family([&]<class F>(std::type_identity<F>) {
    std::erase_if(f.of<F>(), [&](const TunedOf<F>& t) {
      const std::string why = F::misfit(info, t.config, t.shape);
      if (!why.empty()) notes.push_back(entry_name<F>(t) + ": " + why);
      return !why.empty();
    });
  });
  return notes;
}

}  // namespace vkf
