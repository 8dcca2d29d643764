#pragma once
// vkf::Translator's insides, shared by model/api/translator.cpp and batch_session.cpp (not an
// installed entry header: hosts include model/api/translator.h).
#include "model/api/translator.h"
#include "model/decode/translator.h"
#include "model/device_weights.h"
#include "model/loaded_model.h"
#include "model/op_problems.h"

namespace vkf {

inline model::decode::TranslateOptions decode_options(const TranslatorOptions& o) {
  model::decode::TranslateOptions d;
  d.beam = o.beam;
  d.alpha = o.alpha;
  d.max_len_a = o.max_len_a;
  d.max_len_b = o.max_len_b;
  d.nbest = o.nbest;
  d.batch_size = o.batch_size;
  d.session_min_slots = o.session_min_slots;
  d.timed = o.timed;
  return d;
}

struct Translator::Impl {
  Impl(Device& dev, const std::string& path, const TranslatorOptions& options)
      : device(dev),
        model(model::load_model(path, options.vocab)),
        precision(model::resolve_precision(options.precision, dev.info())),
        // Before the decoder is recorded: its kernels follow the tuning.
        tuning(model::apply_tuning(
            dev, options.tuning,
            model::model_op_problems(model.checkpoint.config,
                                     model::decoding_work(options.beam, options.batch_size,
                                                          model::activation_dtype(precision)),
                                     dev.info()),
            options.tuning.note)),
        weights(dev, model.checkpoint.config, 0, precision),
        translator(dev, weights, decode_options(options)) {
    weights.upload_checked(model.checkpoint.params, model.path);
    // The host copy is not needed once the weights are on the device.
    std::vector<float>().swap(model.checkpoint.params);
  }
  Device& device;
  model::LoadedModel model;
  model::Precision precision;
  std::string tuning;  // what apply_tuning did
  model::DeviceWeights weights;
  model::decode::Translator translator;
};

}  // namespace vkf
