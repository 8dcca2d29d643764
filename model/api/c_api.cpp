// The C API (include/vkformer/vkformer.h) over vkf::Device and vkf::Translator: every exception
// becomes a status and a per-thread message, so none crosses into C.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "engine/device.h"
#include "engine/error.h"
#include "engine/instance.h"
#include "engine/standard_streams.h"
#include "model/api/translator.h"
#include "vkformer/vkformer.h"

namespace {

// The device and its instance, shared by the device handle and every translator made on it.
struct DeviceHolder {
  std::shared_ptr<vkf::Instance> instance;
  std::unique_ptr<vkf::Device> device;  // destroyed before the instance
};

}  // namespace

struct vkf_device_s {
  std::shared_ptr<DeviceHolder> holder;
};

struct vkf_translator_s {
  std::shared_ptr<DeviceHolder> device;  // keeps the device alive; destroyed last
  std::unique_ptr<vkf::Translator> translator;
};

struct vkf_session_s {
  vkf_translator translator;
  vkf::BatchSession session;
  std::vector<vkf::BatchSession::Finished> ready;  // taken from the session, not yet handed out
};

namespace {

thread_local std::string t_last_error;

vkf_status fail(vkf_status status, const std::string& message) {
  t_last_error = message;
  return status;
}

// Runs `body`, turning exceptions into a status and the thread's last error.
template <typename F>
vkf_status guarded(F&& body) {
  try {
    t_last_error.clear();
    return body();
  } catch (const vkf::OutOfMemoryError& e) {
    return fail(VKF_ERROR_OUT_OF_MEMORY, e.what());
  } catch (const vkf::DeviceLostError& e) {
    return fail(VKF_ERROR_DEVICE_LOST, e.what());
  } catch (const vkf::Error& e) {
    return fail(VKF_ERROR_FAILED, e.what());
  } catch (const std::bad_alloc&) {
    return fail(VKF_ERROR_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception& e) {
    return fail(VKF_ERROR_FAILED, e.what());
  } catch (...) {
    return fail(VKF_ERROR_FAILED, "unknown error");
  }
}

vkf::DeviceOptions device_options(const vkf_device_options* o) {
  vkf::DeviceOptions d;
  if (o == nullptr) return d;
  if (o->selector) d.selector = o->selector;
  if (o->pipeline_cache_dir) d.pipeline_cache_dir = o->pipeline_cache_dir;
  d.memory.limit_bytes = o->memory_limit_bytes;
  return d;
}

// The best translation of each line, malloc'd, so that the C side could free the strings itself.
char** c_strings(const std::vector<vkf::Translation>& results) {
  const size_t count = results.size();
  auto** texts = static_cast<char**>(std::calloc(count ? count : 1, sizeof(char*)));
  if (texts == nullptr) throw std::bad_alloc();
  for (size_t i = 0; i < count; ++i) {
    const std::string& s = results[i].nbest.empty() ? std::string() : results[i].nbest[0].text;
    texts[i] = static_cast<char*>(std::malloc(s.size() + 1));
    if (texts[i] == nullptr) {
      vkf_translations_free(texts, i);
      throw std::bad_alloc();
    }
    std::memcpy(texts[i], s.c_str(), s.size() + 1);
  }
  return texts;
}

// Lines from C: NULL checks with the calling function's name.
vkf_status check_lines(const char* fn, const char* const* lines, size_t count) {
  if (lines == nullptr && count > 0)
    return fail(VKF_ERROR_INVALID_ARGUMENT, std::string(fn) + ": lines is NULL");
  for (size_t i = 0; i < count; ++i)
    if (lines[i] == nullptr)
      return fail(VKF_ERROR_INVALID_ARGUMENT,
                  std::string(fn) + ": line " + std::to_string(i) + " is NULL");
  return VKF_OK;
}

}  // namespace

extern "C" {

const char* vkf_last_error(void) {
  return t_last_error.c_str();
}

const char* vkf_status_name(vkf_status status) {
  switch (status) {
    case VKF_OK:
      return "VKF_OK";
    case VKF_ERROR_INVALID_ARGUMENT:
      return "VKF_ERROR_INVALID_ARGUMENT";
    case VKF_ERROR_OUT_OF_MEMORY:
      return "VKF_ERROR_OUT_OF_MEMORY";
    case VKF_ERROR_DEVICE_LOST:
      return "VKF_ERROR_DEVICE_LOST";
    case VKF_ERROR_FAILED:
      return "VKF_ERROR_FAILED";
  }
  return "VKF_ERROR_(unknown status)";
}

const char* vkf_version(void) {
  return VKF_VERSION_STRING;
}

void vkf_device_options_init(vkf_device_options* options) {
  if (options) *options = vkf_device_options{nullptr, 0, 0, nullptr};
}

vkf_status vkf_device_create(const vkf_device_options* options, vkf_device* out) {
  if (out == nullptr) return fail(VKF_ERROR_INVALID_ARGUMENT, "vkf_device_create: out is NULL");
  *out = nullptr;
  // Before the driver opens anything: a closed descriptor 0-2 would be taken by its files.
  vkf::open_closed_standard_streams();
  return guarded([&] {
    auto h = std::make_shared<DeviceHolder>();
    h->instance = std::make_shared<vkf::Instance>(
        vkf::InstanceOptions{.validation = options != nullptr && options->validation != 0});
    h->device = vkf::Device::create(h->instance, device_options(options));
    *out = new vkf_device_s{std::move(h)};
    return VKF_OK;
  });
}

vkf_status vkf_device_adopt(VkInstance instance, VkPhysicalDevice physical, VkDevice device,
                            VkQueue queue, uint32_t queue_family, const vkf_device_options* options,
                            vkf_device* out) {
  if (out == nullptr) return fail(VKF_ERROR_INVALID_ARGUMENT, "vkf_device_adopt: out is NULL");
  *out = nullptr;
  if (instance == VK_NULL_HANDLE || physical == VK_NULL_HANDLE || device == VK_NULL_HANDLE ||
      queue == VK_NULL_HANDLE)
    return fail(VKF_ERROR_INVALID_ARGUMENT, "vkf_device_adopt: a Vulkan handle is NULL");
  vkf::open_closed_standard_streams();
  return guarded([&] {
    auto h = std::make_shared<DeviceHolder>();
    h->instance = vkf::Instance::adopt(instance);
    h->device = vkf::Device::adopt(h->instance, physical, device, queue, queue_family,
                                   device_options(options));
    *out = new vkf_device_s{std::move(h)};
    return VKF_OK;
  });
}

const char* vkf_device_name(vkf_device device) {
  return device ? device->holder->device->label().c_str() : nullptr;
}

size_t vkf_device_validation_count(vkf_device device) {
  return device ? device->holder->instance->validation_log().count() : 0;
}

void vkf_device_free(vkf_device device) {
  delete device;
}

void vkf_translator_options_init(vkf_translator_options* options) {
  if (!options) return;
  const vkf::TranslatorOptions d;
  *options = vkf_translator_options{d.beam,       d.alpha, d.max_len_a, d.max_len_b,
                                    d.batch_size, nullptr, nullptr,     d.tuning.budget_seconds};
}

vkf_status vkf_translator_load(vkf_device device, const char* model,
                               const vkf_translator_options* options, vkf_translator* out) {
  if (out == nullptr) return fail(VKF_ERROR_INVALID_ARGUMENT, "vkf_translator_load: out is NULL");
  *out = nullptr;
  if (device == nullptr)
    return fail(VKF_ERROR_INVALID_ARGUMENT, "vkf_translator_load: device is NULL");
  if (model == nullptr || *model == '\0')
    return fail(VKF_ERROR_INVALID_ARGUMENT, "vkf_translator_load: no model path");
  vkf::TranslatorOptions o;
  if (options) {
    o.beam = options->beam;
    o.alpha = options->alpha;
    o.max_len_a = options->max_len_a;
    o.max_len_b = options->max_len_b;
    o.batch_size = options->batch_size;
    if (options->vocab) o.vocab = options->vocab;
    if (options->tune) o.tuning.use = options->tune;
    o.tuning.budget_seconds = options->tune_budget_seconds;
  }
  try {
    o.validate();
  } catch (const vkf::Error& e) {
    return fail(VKF_ERROR_INVALID_ARGUMENT, std::string("vkf_translator_load: ") + e.what());
  }
  return guarded([&] {
    auto t = std::make_unique<vkf_translator_s>();
    t->device = device->holder;
    t->translator = std::make_unique<vkf::Translator>(*t->device->device, model, o);
    *out = t.release();
    return VKF_OK;
  });
}

vkf_status vkf_translate(vkf_translator translator, const char* const* lines, size_t count,
                         char*** out) {
  if (out == nullptr) return fail(VKF_ERROR_INVALID_ARGUMENT, "vkf_translate: out is NULL");
  *out = nullptr;
  if (translator == nullptr)
    return fail(VKF_ERROR_INVALID_ARGUMENT, "vkf_translate: translator is NULL");
  if (vkf_status st = check_lines("vkf_translate", lines, count); st != VKF_OK) return st;
  return guarded([&] {
    std::vector<std::string> in(lines, lines + count);
    *out = c_strings(translator->translator->translate(in));
    return VKF_OK;
  });
}

void vkf_translations_free(char** translations, size_t count) {
  if (translations == nullptr) return;
  for (size_t i = 0; i < count; ++i) std::free(translations[i]);
  std::free(translations);
}

void vkf_translator_free(vkf_translator translator) {
  delete translator;
}

vkf_status vkf_session_open(vkf_translator translator, vkf_session* out) {
  if (out == nullptr) return fail(VKF_ERROR_INVALID_ARGUMENT, "vkf_session_open: out is NULL");
  *out = nullptr;
  if (translator == nullptr)
    return fail(VKF_ERROR_INVALID_ARGUMENT, "vkf_session_open: translator is NULL");
  return guarded([&] {
    *out = new vkf_session_s{translator, translator->translator->open_session(), {}};
    return VKF_OK;
  });
}

vkf_status vkf_session_submit_limited(vkf_session session, const char* const* lines, size_t count,
                                      uint32_t max_length, uint64_t* id) {
  if (session == nullptr || id == nullptr)
    return fail(VKF_ERROR_INVALID_ARGUMENT, "vkf_session_submit: session or id is NULL");
  *id = 0;
  if (vkf_status st = check_lines("vkf_session_submit", lines, count); st != VKF_OK) return st;
  return guarded([&] {
    *id = session->session.submit(std::vector<std::string>(lines, lines + count), max_length);
    return VKF_OK;
  });
}

vkf_status vkf_session_submit(vkf_session session, const char* const* lines, size_t count,
                              uint64_t* id) {
  return vkf_session_submit_limited(session, lines, count, 0, id);
}

vkf_status vkf_session_cancel(vkf_session session, uint64_t id) {
  if (session == nullptr)
    return fail(VKF_ERROR_INVALID_ARGUMENT, "vkf_session_cancel: session is NULL");
  return guarded([&] {
    if (!session->session.cancel(id))
      return fail(VKF_ERROR_INVALID_ARGUMENT,
                  "vkf_session_cancel: no unfinished request " + std::to_string(id));
    return VKF_OK;
  });
}

vkf_status vkf_session_step(vkf_session session, int* busy) {
  if (session == nullptr || busy == nullptr)
    return fail(VKF_ERROR_INVALID_ARGUMENT, "vkf_session_step: session or busy is NULL");
  return guarded([&] {
    *busy = session->session.step() ? 1 : 0;
    return VKF_OK;
  });
}

vkf_status vkf_session_take(vkf_session session, uint64_t* id, char*** out, size_t* count) {
  if (session == nullptr || id == nullptr || out == nullptr || count == nullptr)
    return fail(VKF_ERROR_INVALID_ARGUMENT, "vkf_session_take: a NULL argument");
  *id = 0;
  *out = nullptr;
  *count = 0;
  return guarded([&] {
    for (auto& f : session->session.take_finished()) session->ready.push_back(std::move(f));
    if (session->ready.empty()) return VKF_OK;
    auto& f = session->ready.front();
    *out = c_strings(f.translations);
    *count = f.translations.size();
    *id = f.id;
    session->ready.erase(session->ready.begin());
    return VKF_OK;
  });
}

void vkf_session_free(vkf_session session) {
  delete session;
}

}  // extern "C"
