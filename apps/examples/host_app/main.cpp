// host_app: a C++ program that embeds vkformer the way a game does. It makes its own Vulkan
// instance, device and queues (host_vulkan.cpp), hands them to vkformer (Device::adopt), records
// its own SPIR-V kernel (glow.comp) and a vkformer op into one sequence whose barriers vkformer
// derives, orders its own frame work after that sequence with a timeline semaphore, and then
// translates a few sentences a step at a time inside a loop of simulated frames, printing what
// the engine cost each frame.
//
//   host_app --model DIR [--validation] [--budget-ms MS] [--frame-ms MS] [--max-len-b N]
//            [SENTENCE...]
//
// --budget-ms 0 (the default) polls: a frame never waits for the device. A budget instead runs
// decoder steps to their end until it is spent. Exits 1 on an error or a wrong result, 3 when the
// validation layer reported anything.
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <thread>
#include <vector>
#include <vkformer/vkformer.hpp>

#include "host_vulkan.h"

namespace {

const uint32_t k_glow_spirv[] = {
#include "glow.inc"
};

struct GlowPush {
  uint32_t n;
  float gain;
};

struct Args {
  std::string model;
  bool validation = false;
  double budget_ms = 0;
  double frame_ms = 2;
  int max_len_b = 50;  // outputs up to the source's length + this
  std::vector<std::string> sentences;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    if (s == "--model" && i + 1 < argc) {
      a.model = argv[++i];
    } else if (s == "--validation") {
      a.validation = true;
    } else if (s == "--budget-ms" && i + 1 < argc) {
      a.budget_ms = std::stod(argv[++i]);
    } else if (s == "--frame-ms" && i + 1 < argc) {
      a.frame_ms = std::stod(argv[++i]);
    } else if (s == "--max-len-b" && i + 1 < argc) {
      a.max_len_b = std::stoi(argv[++i]);
    } else if (!s.empty() && s[0] != '-') {
      a.sentences.push_back(s);
    } else {
      throw std::runtime_error(
          "usage: host_app --model DIR [--validation] [--budget-ms MS] "
          "[--frame-ms MS] [--max-len-b N] [SENTENCE...]");
    }
  }
  if (a.model.empty()) throw std::runtime_error("host_app: --model DIR is required");
  if (a.sentences.empty())
    a.sentences = {"The package could not be installed.", "Show the current version.",
                   "This program is free software.", "Select the files to open."};
  return a;
}

// The host's own kernel and a vkformer op in one recorded sequence; the host's frame copies the
// result after it, ordered by a timeline value the sequence signals. Returns false on a wrong
// result.
bool kernel_and_op(host::Vulkan& vk, vkf::Device& dev) {
  const uint32_t n = 10007;  // no multiple of the workgroup size
  const float gain = 2.0f, glow = 0.25f, alpha = 0.5f;
  vkf::Buffer src = dev.allocate(n * 4, "host: frame input");
  vkf::Buffer mid = dev.allocate(n * 4, "host: glowed frame");
  vkf::Buffer acc = dev.allocate(n * 4, "host: accumulated frames");
  vkf::Buffer scalars = dev.allocate(16, "host: scalars", vkf::MemoryKind::host);
  vkf::Buffer readback = dev.allocate(n * 4, "host: read-back", vkf::MemoryKind::host);
  std::vector<float> input(n);
  for (uint32_t i = 0; i < n; ++i) input[i] = float(i % 13) * 0.125f;
  dev.upload(src, input);
  reinterpret_cast<float*>(scalars.mapped())[0] = alpha;

  dev.add_shader("host_glow", k_glow_spirv);
  const vkf::Kernel& k = dev.kernel({.name = "host_glow",
                                     .buffers = 2,
                                     .push_bytes = sizeof(GlowPush),
                                     .spec = {std::bit_cast<uint32_t>(glow)}});
  vkf::Recorder init(dev);
  vkf::ops::fill(dev, init, acc, n, 1.0f);
  init.finish().run();

  vkf::Recorder rec(dev, {.timed = true});
  rec.dispatch(k, {vkf::in(src), vkf::out(mid)}, GlowPush{n, gain}, vkf::groups_1d(n, 64));
  vkf::ops::axpy(dev, rec, mid, acc, scalars, 0, n);  // acc += alpha * mid: reads mid
  vkf::Sequence seq = rec.finish();
  std::printf("host kernel + vkformer axpy: one sequence, %u dispatches, %u derived barriers\n",
              seq.dispatch_count(), seq.barrier_count());

  vkf::Timeline timeline(dev);
  bool ok = true;
  for (uint64_t frame = 1; frame <= 3; ++frame) {
    seq.submit({.signal = {timeline.at(frame)}});
    // The frame's copy waits on the device for the engine's value; the host thread does not.
    vk.copy_after(acc.ref().buffer, acc.ref().offset, readback.ref().buffer, readback.ref().offset,
                  n * 4, timeline.handle(), frame);
    seq.wait();
    const float* got = reinterpret_cast<const float*>(readback.mapped());
    double worst = 0;
    for (uint32_t i = 0; i < n; ++i) {
      const double want = 1.0 + double(frame) * alpha * (double(input[i]) * gain + glow);
      worst = std::max(worst, std::fabs(double(got[i]) - want));
    }
    std::printf("  frame %llu: GPU %.3f ms, max error %.2g\n", (unsigned long long)frame,
                seq.gpu_milliseconds(), worst);
    ok &= worst < 1e-4;
  }
  return ok;
}

// Translates the sentences a step at a time, one poll (or one time budget) per simulated frame.
bool translate_in_frames(vkf::Device& dev, const Args& args) {
  vkf::Translator translator(dev, args.model,
                             {.beam = 2, .max_len_b = args.max_len_b, .timed = true});
  std::printf("model %s: %.2f MiB of weights on the device\n", translator.checkpoint().c_str(),
              double(translator.weight_bytes()) / (1 << 20));
  vkf::TranslationSteps steps = translator.start(args.sentences);
  const auto frame_time = std::chrono::duration<double, std::milli>(args.frame_ms);
  int frame = 0;
  double host_total = 0, gpu_total = 0;
  while (!steps.done()) {
    ++frame;
    std::this_thread::sleep_for(frame_time);  // the game's own frame work
    if (args.budget_ms > 0)
      steps.run_for(std::chrono::duration<double, std::milli>(args.budget_ms));
    else
      steps.poll();
    const vkf::StepReport r = steps.take_report();
    host_total += r.host_ms;
    gpu_total += r.gpu_ms;
    std::printf(
        "frame %4d: engine %.3f ms on the host, %.3f ms on the GPU, %u steps, %llu/%llu "
        "sentences\n",
        frame, r.host_ms, r.gpu_ms, r.units, (unsigned long long)r.sentences,
        (unsigned long long)steps.sentences());
  }
  const auto stepped = steps.results();
  std::printf(
      "%d frames: engine %.2f ms on the host, %.2f ms on the GPU; decoder buffers "
      "%.2f MiB\n",
      frame, host_total, gpu_total, double(translator.cache_bytes()) / (1 << 20));
  // The same sentences in one blocking call: the frames must not change the result.
  const auto whole = translator.translate(args.sentences);
  bool same = stepped.size() == whole.size();
  for (size_t i = 0; i < stepped.size(); ++i) {
    const std::string a = stepped[i].nbest.empty() ? "" : stepped[i].nbest[0].text;
    const std::string b = whole[i].nbest.empty() ? "" : whole[i].nbest[0].text;
    std::printf("  %s\n    -> %s\n", args.sentences[i].c_str(), a.c_str());
    same &= i < whole.size() && a == b;
  }
  if (!same) std::fprintf(stderr, "host_app: step-by-step and whole translations differ\n");
  return same;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args args = parse(argc, argv);
    host::Vulkan vk(args.validation);
    bool ok = true;
    {
      // vkformer borrows the host's objects: it destroys none of them and never waits on the
      // host's queue. It may take at most 256 MiB, and the frame queue's family reads its buffers.
      auto dev = vkf::Device::adopt(
          vkf::Instance::adopt(vk.instance), vk.physical, vk.device, vk.compute_queue,
          vk.compute_family,
          {.memory = {.limit_bytes = 256ull << 20, .shared_queue_families = {vk.frame_family}},
           .adopted = {.timeline_semaphore = true}});
      std::printf("vkformer on %s: its queue family %u, the frames' family %u\n",
                  dev->label().c_str(), vk.compute_family, vk.frame_family);
      ok &= kernel_and_op(vk, *dev);
      ok &= translate_in_frames(*dev, args);
    }
    if (vk.validation_messages > 0) {
      std::fprintf(stderr, "host_app: the validation layer reported %u messages\n",
                   vk.validation_messages.load());
      return 3;
    }
    if (!ok) return 1;
    std::printf("host_app: ok\n");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "host_app: error: %s\n", e.what());
    return 1;
  }
}
