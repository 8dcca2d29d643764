/* vkformer's C API: load a trained Transformer checkpoint onto a Vulkan device (created here,
 * or adopted from the host application) and translate text. Game engines bind C, not C++.
 *
 * Every call returns a vkf_status; on failure vkf_last_error() says what went wrong (a message
 * for the calling thread, valid until its next vkformer call). Handles are opaque; each *_free
 * accepts NULL. A translator keeps its device alive: they may be freed in either order.
 * Calls on one handle must not run concurrently; different handles are independent (there is
 * no global state).
 *
 * Link: vkformer::model from CMake (find_package(vkformer)), or pkg-config vkformer. */
#ifndef VKFORMER_H
#define VKFORMER_H

#include <stddef.h>
#include <stdint.h>
#include <vulkan/vulkan.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum vkf_status {
  VKF_OK = 0,
  VKF_ERROR_INVALID_ARGUMENT = 1, /* a NULL handle or pointer, an option out of range */
  VKF_ERROR_OUT_OF_MEMORY = 2,    /* device memory, the memory cap, or host memory */
  VKF_ERROR_DEVICE_LOST = 3,      /* the device is unusable; free everything on it */
  VKF_ERROR_FAILED = 4            /* anything else: no device, a missing or bad file, ... */
} vkf_status;

typedef struct vkf_device_s* vkf_device;
typedef struct vkf_translator_s* vkf_translator;

/* The message of the calling thread's last failed call ("" when it had none). */
const char* vkf_last_error(void);
/* "VKF_OK", "VKF_ERROR_OUT_OF_MEMORY", ... */
const char* vkf_status_name(vkf_status status);
/* The library's version, "major.minor.patch". */
const char* vkf_version(void);

typedef struct vkf_device_options {
  const char* selector;           /* NULL or "": the best device; else an index ("1"), a vendor
                                     ("nvidia", "amd", "intel", "cpu") or part of its name */
  int validation;                 /* nonzero: the Khronos validation layer (vkf_device_create) */
  uint64_t memory_limit_bytes;    /* the most Vulkan memory vkformer may take; 0 = no cap */
  const char* pipeline_cache_dir; /* NULL or "": no on-disk pipeline cache */
} vkf_device_options;

/* Defaults: best device, no validation, no cap, no disk cache. */
void vkf_device_options_init(vkf_device_options* options);

/* A Vulkan instance and device of vkformer's own. options may be NULL (defaults). */
vkf_status vkf_device_create(const vkf_device_options* options, vkf_device* out);
/* Borrows the host's instance, device and a queue of `queue_family` (with compute): vkformer
 * destroys none of them and waits only for its own work. The host must not use `queue` from
 * another thread while it calls vkformer. options->selector and ->validation are ignored. */
vkf_status vkf_device_adopt(VkInstance instance, VkPhysicalDevice physical, VkDevice device,
                            VkQueue queue, uint32_t queue_family, const vkf_device_options* options,
                            vkf_device* out);
/* "device [0] llvmpipe (LLVM 15.0.6, 256 bits)"; NULL for a NULL device. */
const char* vkf_device_name(vkf_device device);
/* Warnings and errors the validation layer has reported on a device made with validation. */
size_t vkf_device_validation_count(vkf_device device);
void vkf_device_free(vkf_device device);

typedef struct vkf_translator_options {
  uint32_t beam;       /* 1 = greedy; default 4 */
  float alpha;         /* length penalty exponent; default 0.6 */
  float max_len_a;     /* maximum output length = a * source length + b (capped by the model) */
  int32_t max_len_b;   /* defaults 1 and 50 */
  uint32_t batch_size; /* sentences decoded at once; default 32 */
  const char* vocab;   /* NULL or "": the vocabulary the checkpoint names, beside it */
  const char* tune;    /* the kernels' tuning, as `vkf translate --tune`: "auto" (the device's
                          tuning file in its pipeline cache directory, made by a first tuning
                          run where there is none), "off" or a tuning file; NULL or "": the
                          device's as it is */
  double tune_budget_seconds; /* auto's first tuning run; default 30 */
} vkf_translator_options;

void vkf_translator_options_init(vkf_translator_options* options);

/* model: a checkpoint file, or a directory (its latest checkpoint). options may be NULL. */
vkf_status vkf_translator_load(vkf_device device, const char* model,
                               const vkf_translator_options* options, vkf_translator* out);
/* Translates `count` lines (UTF-8). On success *out is an array of `count` NUL-terminated
 * translations ("" for an empty or invalid line), freed with vkf_translations_free. */
vkf_status vkf_translate(vkf_translator translator, const char* const* lines, size_t count,
                         char*** out);
void vkf_translations_free(char** translations, size_t count);
void vkf_translator_free(vkf_translator translator);

/* Batching across requests (a service's): lines submitted at any time are decoded together.
 * Waiting lines join the running batch, oldest first, as its lines finish and free their slots
 * (in-flight batching); a line's translation equals vkf_translate's up to the rounding another
 * batch shape can move. One
 * session per translator at a time (no vkf_translate meanwhile); free it before the translator.
 * Not thread-safe: one thread drives it (vkf_session_step) and submits. */
typedef struct vkf_session_s* vkf_session;
vkf_status vkf_session_open(vkf_translator translator, vkf_session* out);
/* Queues `count` lines as one request; *id (never 0) names it in vkf_session_take. */
vkf_status vkf_session_submit(vkf_session session, const char* const* lines, size_t count,
                              uint64_t* id);
/* As vkf_session_submit, with this request's own limit on each line's output: at most
 * max_length tokens (the end-of-sentence token included), below the translator's
 * max_len_a/max_len_b; 0: the translator's limit alone. */
vkf_status vkf_session_submit_limited(vkf_session session, const char* const* lines, size_t count,
                                      uint32_t max_length, uint64_t* id);
/* Drops an unfinished request: its lines leave the queue and free their slots in the running
 * batch. VKF_ERROR_INVALID_ARGUMENT for an unknown or finished id. */
vkf_status vkf_session_cancel(vkf_session session, uint64_t id);
/* Runs one unit of device work (an encoder pass for a new batch or for lines joining the running
 * one, or one decoder step). *busy is set to 0
 * when there was nothing to do (no line waiting or running), else 1. */
vkf_status vkf_session_step(vkf_session session, int* busy);
/* The next finished request, if any: *id (0 when none), and *out an array of *count
 * translations freed with vkf_translations_free. */
vkf_status vkf_session_take(vkf_session session, uint64_t* id, char*** out, size_t* count);
void vkf_session_free(vkf_session session);

#ifdef __cplusplus
}
#endif

#endif /* VKFORMER_H */
