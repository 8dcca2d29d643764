#pragma once
// Shared fixtures for the GPU tests: one validated instance and one default device per test
// process, and VKF_TEST_CASE, a TEST_CASE that fails on any validation warning or error raised
// while it ran.
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace vkf::test {

// Validation is on when VKF_VALIDATION=1 (ctest sets it; apps/tool_env/tool_env.h).
std::shared_ptr<Instance> instance();
// The device named by VKF_TEST_DEVICE (default: the best one), created once per process, with
// the options the tools' environment variables give (apps/tool_env/tool_env.h).
Device& device();
// A new device on the same physical device (several logical devices on one physical device).
std::unique_ptr<Device> new_device(const DeviceOptions& options = {});

// Fails the current test with every validation message collected since the last call.
void require_no_validation_messages();

// Random values in [lo, hi) from a fixed seed: reference/stored.h's uniform, seeded here.
std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f);

// Max of |got - want| / (atol + rtol * |want|); <= 1 means within tolerance (a NaN or an
// infinity never is): reference/comparison.h's Comparison, as one number.
double tolerance_ratio(const std::vector<float>& got, const std::vector<double>& want, double atol,
                       double rtol);

// A value no kernel produces: outputs are filled with it before a run so an unwritten element
// shows up.
constexpr float k_poison = -7.77e33f;

}  // namespace vkf::test

// Ends the current test case as skipped, saying why. Catch2 v2 has no SKIP, so the reason is a
// warning (printed even when the case passes) tagged "VKF_SKIPPED:", which ctest reports as
// "Skipped" rather than "Passed" (SKIP_REGULAR_EXPRESSION in tests/CMakeLists.txt).
#define VKF_SKIP(msg)             \
  do {                            \
    WARN("VKF_SKIPPED: " << msg); \
    return;                       \
  } while (false)

#define VKF_CAT_(a, b) a##b
#define VKF_CAT(a, b) VKF_CAT_(a, b)
#define VKF_TEST_CASE_IMPL(fn, name, tags)         \
  static void fn();                                \
  TEST_CASE(name, tags) {                          \
    ::vkf::test::require_no_validation_messages(); \
    fn();                                          \
    ::vkf::test::require_no_validation_messages(); \
  }                                                \
  static void fn()
#define VKF_TEST_CASE(name, tags) VKF_TEST_CASE_IMPL(VKF_CAT(vkf_test_body_, __LINE__), name, tags)
