// The C API (include/vkformer/vkformer.h): its error paths (NULL handles and pointers, options
// out of range, a missing model, no such device, the memory cap) give the right status and a
// message, never an exception; a device made or adopted through it translates as vkf::Translator
// does; handles free in either order.
#include <cstring>
#include <string>
#include <vector>

#include "model/api/translator.h"
#include "tests/support/tiny_model.h"
#include "tests/support/vk_test.h"
#include "vkformer/vkformer.h"

using namespace vkf;

namespace {

std::string last_error() {
  return vkf_last_error();
}

vkf_device_options test_device_options() {
  vkf_device_options o;
  vkf_device_options_init(&o);
  o.validation = test::instance()->validation_enabled() ? 1 : 0;
  return o;
}

std::vector<std::string> translate_c(vkf_translator t, const std::vector<std::string>& lines) {
  std::vector<const char*> in;
  for (const auto& l : lines) in.push_back(l.c_str());
  char** out = nullptr;
  REQUIRE(vkf_translate(t, in.data(), in.size(), &out) == VKF_OK);
  CHECK(last_error().empty());
  std::vector<std::string> texts(out, out + lines.size());
  vkf_translations_free(out, lines.size());
  return texts;
}

std::vector<std::string> translate_cpp(const std::vector<std::string>& lines, uint32_t beam) {
  Translator tr(test::device(), test::tiny_model().dir.string(), {.beam = beam, .max_len_b = 12});
  std::vector<std::string> out;
  for (const auto& t : tr.translate(lines)) out.push_back(t.nbest.empty() ? "" : t.nbest[0].text);
  return out;
}

}  // namespace

TEST_CASE("robust 41.16: the C API names a device index past any number", "[api][c]") {
  vkf_device dev = nullptr;
  vkf_device_options o = test_device_options();
  o.selector = "999999999999999999999";  // std::stoul threw a bare "stoul" on it
  CHECK(vkf_device_create(&o, &dev) == VKF_ERROR_FAILED);
  CHECK(dev == nullptr);
  CHECK(last_error().find("no Vulkan device matches '999999999999999999999'") != std::string::npos);
}

TEST_CASE("the C API's devices: error paths", "[api][c]") {
  CHECK(std::string(vkf_status_name(VKF_ERROR_OUT_OF_MEMORY)) == "VKF_ERROR_OUT_OF_MEMORY");
  CHECK(std::string(vkf_version()).find('.') != std::string::npos);
  CHECK(vkf_device_create(nullptr, nullptr) == VKF_ERROR_INVALID_ARGUMENT);
  CHECK(last_error().find("out is NULL") != std::string::npos);

  vkf_device dev = reinterpret_cast<vkf_device>(1);  // must be reset to NULL on failure
  vkf_device_options o = test_device_options();
  o.selector = "no-such-device-anywhere";
  CHECK(vkf_device_create(&o, &dev) == VKF_ERROR_FAILED);
  CHECK(dev == nullptr);
  CHECK(last_error().find("no-such-device-anywhere") != std::string::npos);

  o = test_device_options();
  o.memory_limit_bytes = 1 << 20;  // less than the staging ring
  CHECK(vkf_device_create(&o, &dev) == VKF_ERROR_OUT_OF_MEMORY);
  CHECK(last_error().find("memory cap") != std::string::npos);

  CHECK(vkf_device_adopt(VK_NULL_HANDLE, VK_NULL_HANDLE, VK_NULL_HANDLE, VK_NULL_HANDLE, 0, nullptr,
                         &dev) == VKF_ERROR_INVALID_ARGUMENT);
  CHECK(last_error().find("NULL") != std::string::npos);
  CHECK(vkf_device_name(nullptr) == nullptr);
  CHECK(vkf_device_validation_count(nullptr) == 0);
  vkf_device_free(nullptr);
  vkf_translator_free(nullptr);
  vkf_translations_free(nullptr, 3);
}

TEST_CASE("the C API's translators: error paths", "[api][c]") {
  const auto& tm = test::tiny_model();
  vkf_device_options o = test_device_options();
  vkf_device dev = nullptr;
  REQUIRE(vkf_device_create(&o, &dev) == VKF_OK);
  CHECK(last_error().empty());
  CHECK(std::string(vkf_device_name(dev)).find("device [") == 0);

  vkf_translator t = nullptr;
  CHECK(vkf_translator_load(nullptr, tm.dir.c_str(), nullptr, &t) == VKF_ERROR_INVALID_ARGUMENT);
  CHECK(vkf_translator_load(dev, nullptr, nullptr, &t) == VKF_ERROR_INVALID_ARGUMENT);
  CHECK(vkf_translator_load(dev, tm.dir.c_str(), nullptr, nullptr) == VKF_ERROR_INVALID_ARGUMENT);
  vkf_translator_options to;
  vkf_translator_options_init(&to);
  CHECK(to.beam == 4);
  to.beam = 0;
  CHECK(vkf_translator_load(dev, tm.dir.c_str(), &to, &t) == VKF_ERROR_INVALID_ARGUMENT);
  CHECK(last_error().find("beam") != std::string::npos);
  CHECK(t == nullptr);
  const std::string missing = (tm.dir / "no-such-checkpoint.safetensors").string();
  CHECK(vkf_translator_load(dev, missing.c_str(), nullptr, &t) == VKF_ERROR_FAILED);
  CHECK(last_error().find("no-such-checkpoint") != std::string::npos);
  vkf_translator_options_init(&to);
  to.vocab = "/no/such/vocab.model";
  CHECK(vkf_translator_load(dev, tm.dir.c_str(), &to, &t) == VKF_ERROR_FAILED);
  CHECK(last_error().find("/no/such/vocab.model") != std::string::npos);

  // The kernels' tuning, as `vkf translate --tune`: a missing file and a budget no tuner can
  // keep are refused by name; off is the static tables.
  vkf_translator_options_init(&to);
  CHECK(to.tune == nullptr);
  CHECK(to.tune_budget_seconds == 30);
  to.tune = "/no/such/tuning.json";
  CHECK(vkf_translator_load(dev, tm.dir.c_str(), &to, &t) == VKF_ERROR_FAILED);
  CHECK(last_error().find("/no/such/tuning.json") != std::string::npos);
  to.tune = "auto";
  to.tune_budget_seconds = -1;
  CHECK(vkf_translator_load(dev, tm.dir.c_str(), &to, &t) == VKF_ERROR_INVALID_ARGUMENT);
  CHECK(last_error().find("tuning budget") != std::string::npos);
  CHECK(t == nullptr);

  vkf_translator_options_init(&to);
  to.beam = 2;
  to.max_len_b = 12;
  to.tune = "off";
  REQUIRE(vkf_translator_load(dev, tm.dir.c_str(), &to, &t) == VKF_OK);
  char** out = reinterpret_cast<char**>(1);
  const char* lines[] = {"the house.", nullptr};
  CHECK(vkf_translate(nullptr, lines, 1, &out) == VKF_ERROR_INVALID_ARGUMENT);
  CHECK(out == nullptr);
  CHECK(vkf_translate(t, lines, 1, nullptr) == VKF_ERROR_INVALID_ARGUMENT);
  CHECK(vkf_translate(t, nullptr, 1, &out) == VKF_ERROR_INVALID_ARGUMENT);
  CHECK(vkf_translate(t, lines, 2, &out) == VKF_ERROR_INVALID_ARGUMENT);
  CHECK(last_error().find("line 1 is NULL") != std::string::npos);
  REQUIRE(vkf_translate(t, lines, 0, &out) == VKF_OK);  // nothing to do is no error
  vkf_translations_free(out, 0);

  // Same text as the C++ API; the translator keeps its device alive after vkf_device_free.
  const size_t validation = vkf_device_validation_count(dev);
  vkf_device_free(dev);
  CHECK(translate_c(t, tm.sentences) == translate_cpp(tm.sentences, 2));
  vkf_translator_free(t);
  CHECK(validation == 0);
}

TEST_CASE("the C API's memory cap refuses a model that does not fit", "[api][c]") {
  const auto& tm = test::tiny_model();
  vkf_device_options o = test_device_options();
  o.memory_limit_bytes = (16 << 20) + (64 << 10);  // the staging ring and 64 KiB
  vkf_device dev = nullptr;
  REQUIRE(vkf_device_create(&o, &dev) == VKF_OK);
  vkf_translator t = nullptr;
  CHECK(vkf_translator_load(dev, tm.dir.c_str(), nullptr, &t) == VKF_ERROR_OUT_OF_MEMORY);
  CHECK(last_error().find("memory cap") != std::string::npos);
  CHECK(t == nullptr);
  vkf_device_free(dev);
}

VKF_TEST_CASE("the C API adopts a host device and translates on it", "[api][c]") {
  const DeviceInfo& info = test::device().info();
  const uint32_t fam = info.compute_queue_family;
  float priority = 1.0f;
  VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qi.queueFamilyIndex = fam;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;
  VkDeviceCreateInfo di{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  VkDevice host = VK_NULL_HANDLE;
  REQUIRE(vkCreateDevice(info.physical, &di, nullptr, &host) == VK_SUCCESS);
  VkQueue queue = VK_NULL_HANDLE;
  vkGetDeviceQueue(host, fam, 0, &queue);
  {
    vkf_device dev = nullptr;
    REQUIRE(vkf_device_adopt(test::instance()->get(), info.physical, host, queue, fam, nullptr,
                             &dev) == VKF_OK);
    vkf_translator_options to;
    vkf_translator_options_init(&to);
    to.beam = 1;
    to.max_len_b = 12;
    vkf_translator t = nullptr;
    REQUIRE(vkf_translator_load(dev, test::tiny_model().dir.c_str(), &to, &t) == VKF_OK);
    CHECK(translate_c(t, test::tiny_model().sentences) ==
          translate_cpp(test::tiny_model().sentences, 1));
    vkf_translator_free(t);
    vkf_device_free(dev);
  }
  CHECK(vkDeviceWaitIdle(host) == VK_SUCCESS);  // still the host's, still alive
  vkDestroyDevice(host, nullptr);
}
