#pragma once
// Every tuned op family, and what is kept per family. Each family describes itself once, for
// the engine, beside its choice (engine/ops/*_choice.h): a struct such as LayerNormFamily with
//   Problem, Config   what the choice depends on, and what it chooses;
//   Work              what a workload runs (Problem, or attention's Problem with its batch);
//   name, title       "layer_norm" (the tuning file's array, the tuner's progress), "LayerNorm";
//   shape_class()     the tuning file's key for a problem;
//   describe(), dims()  a configuration and a problem in one line;
//   config_json(), config_of(), problem_json(), problem_of()  their JSON in the tuning file;
//   misfit()          why a device cannot run a configuration on a problem ("" when it can).
// The tuner's side of a family (its candidates, the timed run and the correctness check) is
// tune/<family>_family.h. The code that serves every family (the tuning file, the fit checks,
// the tuner's budget, `vkf tune`'s tables) walks this list and names none of them.
#include <cstddef>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "engine/ops/adam.h"
#include "engine/ops/attention_choice.h"
#include "engine/ops/layer_norm_choice.h"
#include "engine/ops/loss_choice.h"
#include "engine/ops/matmul_choice.h"
#include "engine/ops/topk_choice.h"

namespace vkf::ops {

template <class... F>
struct FamilyList {};

// In the order the tuner runs them: by the share of a training step they take, so that no
// overrun of the others eats into matmul's.
using TunedFamilies = FamilyList<MatmulFamily, AttentionFamily, LayerNormFamily, CrossEntropyFamily,
                                 TopKFamily, AdamFamily>;

// fn(std::type_identity<F>{}) for each family in order.
template <class Fn>
void for_each_family(Fn&& fn) {
  [&]<class... F>(FamilyList<F...>) { (fn(std::type_identity<F>{}), ...); }(TunedFamilies{});
}

namespace detail {
template <class F, class List>
struct FamilyIndex;
template <class F, class... Fs>
struct FamilyIndex<F, FamilyList<Fs...>> {
  static constexpr size_t value = [] {
    constexpr bool same[] = {std::is_same_v<F, Fs>...};
    for (size_t i = 0; i < sizeof...(Fs); ++i)
      if (same[i]) return i;
    return sizeof...(Fs);
  }();
  static_assert(value < sizeof...(Fs), "not a tuned family (engine/ops/tuned_families.h)");
};
template <template <class> class T, class List>
struct TupleOf;
template <template <class> class T, class... F>
struct TupleOf<T, FamilyList<F...>> {
  using type = std::tuple<T<F>...>;
};
}  // namespace detail

// One T<F> for every family F: of<F>() is the family's.
template <template <class> class T>
struct PerFamily {
  typename detail::TupleOf<T, TunedFamilies>::type items;
  template <class F>
  T<F>& of() {
    return std::get<detail::FamilyIndex<F, TunedFamilies>::value>(items);
  }
  template <class F>
  const T<F>& of() const {
    return std::get<detail::FamilyIndex<F, TunedFamilies>::value>(items);
  }
};

// A family's problems as a workload states them.
template <class F>
using WorkList = std::vector<typename F::Work>;
// A family's tuned configurations by shape class.
template <class F>
using ConfigTable = std::map<std::string, typename F::Config>;

// The problem of a unit of work (attention's drops its batch and heads).
template <class P>
const P& problem_of(const P& p) {
  return p;
}
template <class P>
P& problem_of(P& p) {
  return p;
}

}  // namespace vkf::ops
