#include <array>

#include "engine/ops/basic.h"
#include "tests/support/vk_test.h"

using namespace vkf;

VKF_TEST_CASE("fill and axpy through the recorder", "[engine][recorder]") {
  Device& dev = test::device();
  for (uint32_t n : {1u, 255u, 257u, 100003u}) {
    auto x = test::random_floats(n, n);
    Buffer bx = dev.allocate(n * 4, "x"), by = dev.allocate(n * 4, "y");
    Buffer scalars = dev.allocate(64, "scalars", MemoryKind::host);
    reinterpret_cast<float*>(scalars.mapped())[3] = -2.5f;
    dev.upload(bx, x);
    Recorder rec(dev);
    ops::fill(dev, rec, by, n, 1.25f);
    ops::axpy(dev, rec, bx, by, scalars, 3, n);
    rec.finish().run();
    auto y = dev.download<float>(by, n);
    std::vector<double> want(n);
    for (uint32_t i = 0; i < n; ++i) want[i] = -2.5 * double(x[i]) + 1.25;
    CHECK(test::tolerance_ratio(y, want, 1e-6, 1e-6) <= 1.0);
  }
}

VKF_TEST_CASE("a recorded sequence replays with changed scalars", "[engine][recorder]") {
  Device& dev = test::device();
  const uint32_t n = 1000;
  Buffer bx = dev.allocate(n * 4, "x"), by = dev.allocate(n * 4, "y");
  Buffer scalars = dev.allocate(16, "scalars", MemoryKind::host);
  dev.upload(bx, std::vector<float>(n, 1.0f));
  Recorder rec(dev);
  ops::fill(dev, rec, by, n, 0.0f);
  ops::axpy(dev, rec, bx, by, scalars, 0, n);
  Sequence seq = rec.finish();
  auto* alpha = reinterpret_cast<float*>(scalars.mapped());
  for (float a : {1.0f, 2.0f, -3.5f}) {
    *alpha = a;
    seq.run();
    CHECK(dev.download<float>(by, n)[n - 1] == a);
  }
}

VKF_TEST_CASE("dependent dispatches get barriers, independent ones none", "[engine][recorder]") {
  Device& dev = test::device();
  const uint32_t n = 4096;
  Buffer a = dev.allocate(n * 4, "a"), b = dev.allocate(n * 4, "b"), c = dev.allocate(n * 4, "c");
  Buffer scalars = dev.allocate(16, "scalars", MemoryKind::host);
  reinterpret_cast<float*>(scalars.mapped())[0] = 1.0f;

  Recorder independent(dev);
  ops::fill(dev, independent, a, n, 1.0f);
  ops::fill(dev, independent, b, n, 2.0f);
  ops::fill(dev, independent, c, n, 3.0f);
  CHECK(independent.barrier_count() == 0);
  // Disjoint halves of one buffer are independent too.
  ops::fill(dev, independent, BufferRef(a).slice(0, 2048), 512, 4.0f);
  CHECK(independent.barrier_count() == 1);  // a was written above: WAW
  independent.finish().run();

  Recorder chain(dev);
  ops::fill(dev, chain, a, n, 1.0f);           // write a
  ops::axpy(dev, chain, a, b, scalars, 0, n);  // read a (RAW), read-write b
  ops::axpy(dev, chain, b, c, scalars, 0, n);  // read b (RAW)
  // Writing a again: its last read was before the barrier that b needed, so no new barrier.
  ops::fill(dev, chain, a, n, 5.0f);
  CHECK(chain.barrier_count() == 2);
  Sequence seq = chain.finish();
  CHECK(seq.barrier_count() == 2);
  seq.run();
  CHECK(dev.download<float>(c, n)[0] == 3.0f + 2.0f + 1.0f);
  CHECK(dev.download<float>(a, n)[0] == 5.0f);
}

VKF_TEST_CASE("without the derived barriers, synchronization validation reports hazards",
              "[engine][recorder]") {
  REQUIRE(test::instance()->validation_enabled());
  Device& dev = test::device();
  const uint32_t n = 4096;
  Buffer a = dev.allocate(n * 4, "a"), b = dev.allocate(n * 4, "b");
  Buffer scalars = dev.allocate(16, "scalars", MemoryKind::host);
  reinterpret_cast<float*>(scalars.mapped())[0] = 1.0f;
  for (bool derive : {true, false}) {
    Recorder rec(dev, {.derive_barriers = derive});
    ops::fill(dev, rec, a, n, 1.0f);
    ops::fill(dev, rec, b, n, 0.0f);
    ops::axpy(dev, rec, a, b, scalars, 0, n);
    rec.finish().run();
    auto messages = test::instance()->validation_log().take();
    bool hazard = false;
    for (const auto& m : messages) {
      UNSCOPED_INFO("validation: " << m);
      if (m.find("SYNC-HAZARD") != std::string::npos) hazard = true;
    }
    CHECK(hazard == !derive);
  }
}

VKF_TEST_CASE("dispatch arguments are checked", "[engine][recorder]") {
  Device& dev = test::device();
  Buffer a = dev.allocate(16, "a");
  Recorder rec(dev);
  const Kernel& fill = dev.kernel({"fill", 1, 8, {256}});
  struct {
    uint32_t n;
    float v;
  } push{4, 0};
  REQUIRE_THROWS_WITH(rec.dispatch(fill, {out(a), out(a)}, push, {1, 1, 1}),
                      Catch::Contains("takes 1 buffers"));
  REQUIRE_THROWS_WITH(rec.dispatch(fill, {out(a)}, push, {0, 1, 1}),
                      Catch::Contains("workgroup count"));
  REQUIRE_THROWS_WITH(dev.kernel({"no_such_shader", 1, 0, {}}), Catch::Contains("no_such_shader"));
  // A storage binding off the device's offset alignment (a power of two up to 256; lavapipe's
  // is 16), then one on it.
  Buffer wide = dev.allocate(1024, "wide");
  const uint64_t storage_align = dev.info().min_storage_offset_alignment;
  if (storage_align > 4) {
    REQUIRE_THROWS_WITH(rec.dispatch(fill, {out(BufferRef(wide).slice(4, 16))}, push, {1, 1, 1}),
                        Catch::Contains("storage-buffer offset alignment"));
  }
  rec.dispatch(fill, {out(BufferRef(wide).slice(storage_align, 16))}, push, {1, 1, 1});
  // Texel-buffer bindings (KernelSpec::texel_buffers) take a view format; storage buffers none.
  REQUIRE_THROWS_WITH(
      rec.dispatch(fill, {in_texels(a, VK_FORMAT_R32G32B32A32_SFLOAT)}, push, {1, 1, 1}),
      Catch::Contains("is no texel buffer"));
  Buffer big = dev.allocate(4096, "big");
  KernelSpec texel_spec{"matmul_texel", 4, 44, {}};  // A and B (bindings 0, 1) as texels
  texel_spec.texel_buffers = 0b11;
  const Kernel& texel = dev.kernel(texel_spec);
  std::array<uint32_t, 11> mm_push{};
  const VkFormat rgba32f = VK_FORMAT_R32G32B32A32_SFLOAT;
  REQUIRE_THROWS_WITH(
      rec.dispatch(texel, {in(big), in(big), out(big), in(big)}, mm_push, {1, 1, 1}),
      Catch::Contains("is a texel buffer and needs a format"));
  const uint64_t align = dev.info().texel_buffer_alignment;
  REQUIRE(align >= 4);
  const BufferRef off = BufferRef(big).slice(align / 2, 1024);
  REQUIRE_THROWS_WITH(
      rec.dispatch(texel, {in_texels(off, rgba32f), in_texels(big, rgba32f), out(big), in(big)},
                   mm_push, {1, 1, 1}),
      Catch::Contains("is no multiple of"));
  REQUIRE_THROWS_WITH(
      rec.dispatch(texel,
                   {in_texels(big, VK_FORMAT_R8_UNORM), in_texels(big, rgba32f), out(big), in(big)},
                   mm_push, {1, 1, 1}),
      Catch::Contains("unsupported texel-buffer format"));
}

VKF_TEST_CASE("profiling gives per-dispatch times and a per-kernel table", "[engine][profile]") {
  Device& dev = test::device();
  if (dev.info().timestamp_valid_bits == 0) {
    WARN("device has no timestamps; profiling gives no times");
    return;
  }
  const uint32_t n = 1 << 16;
  Buffer a = dev.allocate(n * 4, "a");
  Recorder rec(dev, {.profile = true});
  for (int i = 0; i < 3; ++i) ops::fill(dev, rec, a, n, float(i));
  Sequence seq = rec.finish();
  seq.run();
  auto t = seq.timings();
  REQUIRE(t.size() == 3);
  for (const auto& k : t) CHECK(k.milliseconds >= 0.0);
  std::string table = profile_table(t);
  CHECK_THAT(table, Catch::Contains("fill") && Catch::Contains("3"));
}

VKF_TEST_CASE("a first dispatch's wait, its compile included, is not judged by the steady timeout",
              "[engine][recorder]") {
  // Mesa's lavapipe compiles a pipeline at its first dispatch: Mesa 25.0 took 436 s for one
  // attention kernel, past the 600 s fence timeout with the others. Here the steady timeout is
  // 1 us, which no submission meets; the first one is judged by the first-dispatch limit and
  // reports its progress, a later one by the steady timeout.
  DeviceOptions o;
  o.timeout_seconds = 1e-6;
  o.first_dispatch_progress_seconds = 1e-4;
  std::vector<uint32_t> told;
  o.on_first_dispatch_wait = [&](uint32_t kernels, double) { told.push_back(kernels); };
  auto dev = test::new_device(o);
  // Enough work (48 MiB written) that a run outlasts the 0.1 ms progress slice, compiled or not.
  const uint32_t n = 1 << 22;
  // Host-visible: an upload or download waits with the steady timeout too.
  Buffer a = dev->allocate(n * 4, "a", MemoryKind::host);
  Buffer b = dev->allocate(n * 4, "b", MemoryKind::host);
  Buffer scalars = dev->allocate(16, "scalars", MemoryKind::host);
  reinterpret_cast<float*>(scalars.mapped())[0] = 2.0f;
  auto record = [&] {
    Recorder rec(*dev);
    ops::fill(*dev, rec, a, n, 1.0f);
    ops::fill(*dev, rec, b, n, 0.5f);
    ops::axpy(*dev, rec, a, b, scalars, 0, n);
    return rec.finish();
  };
  Sequence first = record();
  REQUIRE_NOTHROW(first.run());
  CHECK(reinterpret_cast<const float*>(b.mapped())[n - 1] == 2.5f);
  REQUIRE_FALSE(told.empty());
  CHECK(told.front() == 2);  // fill and axpy, new on this device
  // The same kernels in a new sequence: nothing new, the steady timeout.
  Sequence again = record();
  CHECK_THROWS_WITH(again.run(), Catch::Contains("timed out") && Catch::Contains("may be hung"));
}
