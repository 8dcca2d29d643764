#include "engine/recorder.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <map>
#include <utility>

#include "engine/device.h"
#include "engine/error.h"

namespace vkf {
namespace {
constexpr uint32_t k_sets_per_pool = 128;
constexpr uint32_t k_max_buffers_per_set = 16;
// Texel buffers are rare (the matmul's operands on CPU devices): a quarter of a set at most.
constexpr uint32_t k_max_texel_buffers_per_set = 4;
constexpr uint32_t k_query_chunk = 4096;
}  // namespace

Sequence::Sequence(Sequence&& o) noexcept
    : device_(std::exchange(o.device_, nullptr)),
      cmd_(std::exchange(o.cmd_, VK_NULL_HANDLE)),
      pools_(std::move(o.pools_)),
      views_(std::move(o.views_)),
      fence_(std::move(o.fence_)),
      queries_(std::move(o.queries_)),
      names_(std::move(o.names_)),
      pipelines_(std::move(o.pipelines_)),
      first_dispatches_(o.first_dispatches_),
      queries_written_(o.queries_written_),
      barriers_(o.barriers_),
      pending_(std::exchange(o.pending_, false)) {}

Sequence& Sequence::operator=(Sequence&& o) noexcept {
  if (this != &o) {
    destroy();
    device_ = std::exchange(o.device_, nullptr);
    cmd_ = std::exchange(o.cmd_, VK_NULL_HANDLE);
    pools_ = std::move(o.pools_);
    views_ = std::move(o.views_);
    fence_ = std::move(o.fence_);
    queries_ = std::move(o.queries_);
    names_ = std::move(o.names_);
    pipelines_ = std::move(o.pipelines_);
    first_dispatches_ = o.first_dispatches_;
    queries_written_ = o.queries_written_;
    barriers_ = o.barriers_;
    pending_ = std::exchange(o.pending_, false);
  }
  return *this;
}

Sequence::~Sequence() {
  destroy();
}

void Sequence::destroy() {
  if (device_ == nullptr) return;
  if (fence_) {
    VkFence f = fence_.get();
    vkWaitForFences(device_->handle(), 1, &f, VK_TRUE, UINT64_MAX);
  }
  if (cmd_ != VK_NULL_HANDLE)
    vkFreeCommandBuffers(device_->handle(), device_->command_pool(), 1, &cmd_);
  cmd_ = VK_NULL_HANDLE;
  pools_.clear();
  views_.clear();
  queries_.reset();
  fence_.reset();
  device_ = nullptr;
}

void Sequence::submit(const SubmitSync& sync) {
  if (pending_) wait();
  if (!pipelines_.empty()) {  // the first submission: are any of its kernels new on the device?
    first_dispatches_ = device_->note_dispatched(pipelines_);
    pipelines_ = {};
  }
  device_->submit(cmd_, fence_.get(), "a recorded sequence", sync);
  pending_ = true;
}

void Sequence::wait() {
  if (!pending_) return;
  pending_ = false;
  device_->wait_fence(fence_.get(), "a recorded sequence", std::exchange(first_dispatches_, 0));
}

bool Sequence::ready() const {
  if (!pending_) return true;
  VkResult r = vkGetFenceStatus(device_->handle(), fence_.get());
  if (r == VK_NOT_READY) return false;
  check(r, "polling a recorded sequence on " + device_->label());
  return true;
}

double Sequence::gpu_milliseconds() const {
  if (!queries_ || queries_written_ < 2) return 0.0;
  uint64_t stamps[2] = {0, 0};
  for (uint32_t i = 0; i < 2; ++i)
    check(
        vkGetQueryPoolResults(device_->handle(), queries_.get(), i == 0 ? 0 : queries_written_ - 1,
                              1, sizeof(uint64_t), &stamps[i], sizeof(uint64_t),
                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
        "reading timestamps");
  return double(stamps[1] - stamps[0]) * device_->info().timestamp_period_ns * 1e-6;
}

std::vector<KernelTiming> Sequence::timings() const {
  std::vector<KernelTiming> out;
  if (!queries_ || names_.empty() || queries_written_ < names_.size() + 1) return out;
  std::vector<uint64_t> stamps(names_.size() + 1);
  check(vkGetQueryPoolResults(device_->handle(), queries_.get(), 0,
                              static_cast<uint32_t>(stamps.size()),
                              stamps.size() * sizeof(uint64_t), stamps.data(), sizeof(uint64_t),
                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
        "reading timestamps");
  double period = device_->info().timestamp_period_ns;
  for (size_t i = 0; i < names_.size(); ++i)
    out.push_back({names_[i], double(stamps[i + 1] - stamps[i]) * period * 1e-6});
  return out;
}

Recorder::Recorder(Device& device, const RecorderOptions& options)
    : device_(device), options_(options) {
  begin();
}

void Recorder::begin() {
  Device& device = device_;
  seq_.device_ = &device;
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = device.command_pool();
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  check(vkAllocateCommandBuffers(device.handle(), &ai, &seq_.cmd_),
        "allocating a command buffer on " + device.label());
  seq_.fence_ = OwnedFence(device.handle(), device.create_fence());
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  check(vkBeginCommandBuffer(seq_.cmd_, &bi), "beginning a command buffer");

  if ((options_.profile || options_.timed) && device.info().timestamp_valid_bits != 0) {
    query_capacity_ = options_.profile ? k_query_chunk : 2;
    VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = query_capacity_;
    VkQueryPool pool = VK_NULL_HANDLE;
    check(vkCreateQueryPool(device.handle(), &qi, nullptr, &pool), "creating a query pool");
    seq_.queries_ = OwnedQueryPool(device.handle(), pool);
    vkCmdResetQueryPool(seq_.cmd_, pool, 0, query_capacity_);
    vkCmdWriteTimestamp(seq_.cmd_, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, pool, queries_used_++);
  }
  // Whatever earlier submissions or the host wrote is visible to this sequence.
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask =
      VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                     VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  vkCmdPipelineBarrier(seq_.cmd_,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT |
                           VK_PIPELINE_STAGE_HOST_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1,
                       &mb, 0, nullptr, 0, nullptr);
}

Recorder::~Recorder() = default;

void Recorder::track(const std::vector<Arg>& args) {
  if (options_.derive_barriers) {
    bool hazard = false;
    for (const Arg& a : args) {
      bool writes = a.access != Access::read;
      for (const Range& p : pending_)
        if ((writes || p.write) && a.buffer.overlaps(p.buffer)) hazard = true;
    }
    if (hazard) {
      VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
      mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT |
                         VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT;
      mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                         VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
      VkPipelineStageFlags stages =
          VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
      vkCmdPipelineBarrier(seq_.cmd_, stages, stages, 0, 1, &mb, 0, nullptr, 0, nullptr);
      ++barriers_;
      pending_.clear();
    }
  }
  for (const Arg& a : args) pending_.push_back({a.buffer, a.access != Access::read});
}

VkDescriptorSet Recorder::allocate_set(const Kernel& kernel) {
  if (sets_left_ == 0) {
    const VkDescriptorPoolSize sizes[] = {
        {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, k_sets_per_pool * k_max_buffers_per_set},
        {VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, k_sets_per_pool * k_max_texel_buffers_per_set}};
    VkDescriptorPoolCreateInfo pi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    pi.maxSets = k_sets_per_pool;
    pi.poolSizeCount = 2;
    pi.pPoolSizes = sizes;
    VkDescriptorPool pool = VK_NULL_HANDLE;
    check(vkCreateDescriptorPool(device_.handle(), &pi, nullptr, &pool),
          "creating a descriptor pool on " + device_.label());
    seq_.pools_.emplace_back(device_.handle(), pool);
    sets_left_ = k_sets_per_pool;
  }
  VkDescriptorSetLayout layout = kernel.set_layout();
  VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  ai.descriptorPool = seq_.pools_.back().get();
  ai.descriptorSetCount = 1;
  ai.pSetLayouts = &layout;
  VkDescriptorSet set = VK_NULL_HANDLE;
  check(vkAllocateDescriptorSets(device_.handle(), &ai, &set), "allocating a descriptor set");
  --sets_left_;
  return set;
}

uint32_t texel_bytes(VkFormat format) {
  switch (format) {
    case VK_FORMAT_R32G32B32A32_SFLOAT:
      return 16;
    case VK_FORMAT_R16G16B16A16_SFLOAT:
      return 8;
    case VK_FORMAT_R32_SFLOAT:
    case VK_FORMAT_R32_SINT:
    case VK_FORMAT_R32_UINT:
      return 4;
    case VK_FORMAT_R16_SFLOAT:
      return 2;
    default:
      return 0;
  }
}

std::string texel_view_misfit(const DeviceInfo& info, const BufferRef& b, VkFormat format) {
  const uint32_t texel = texel_bytes(format);
  if (texel == 0) return "unsupported texel-buffer format";
  if ((format == VK_FORMAT_R32G32B32A32_SFLOAT && !info.texel_rgba32f) ||
      (format == VK_FORMAT_R16G16B16A16_SFLOAT && !info.texel_rgba16f))
    return "the device cannot read this format from a uniform texel buffer";
  const uint64_t align = std::max<uint64_t>(info.texel_buffer_alignment, 1);
  if (b.offset % align)
    return "texel-buffer offset " + std::to_string(b.offset) + " is no multiple of " +
           std::to_string(align);
  const VkDeviceSize texels = b.size / texel;
  if (texels == 0 || texels > info.max_texel_buffer_elements)
    return std::to_string(texels) + " texels, outside 1.." +
           std::to_string(info.max_texel_buffer_elements);
  return "";
}

VkBufferView Recorder::make_texel_view(const Arg& arg, const std::string& kernel, size_t binding) {
  const BufferRef& b = arg.buffer;
  if (const std::string why = texel_view_misfit(device_.info(), b, arg.texel_format); !why.empty())
    throw Error("kernel " + kernel + ", binding " + std::to_string(binding) + ": " + why);
  VkBufferViewCreateInfo vi{VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO};
  vi.buffer = b.buffer;
  vi.format = arg.texel_format;
  vi.offset = b.offset;
  vi.range = b.size / texel_bytes(arg.texel_format) * texel_bytes(arg.texel_format);
  VkBufferView view = VK_NULL_HANDLE;
  check(vkCreateBufferView(device_.handle(), &vi, nullptr, &view),
        "creating a texel-buffer view on " + device_.label());
  seq_.views_.emplace_back(device_.handle(), view);
  return view;
}

void Recorder::dispatch(const Kernel& kernel, std::initializer_list<Arg> args, const void* push,
                        uint32_t push_bytes, std::array<uint32_t, 3> groups) {
  dispatch(kernel, std::vector<Arg>(args), push, push_bytes, groups);
}

void Recorder::dispatch(const Kernel& kernel, const std::vector<Arg>& args, const void* push,
                        uint32_t push_bytes, std::array<uint32_t, 3> groups) {
  const KernelSpec& spec = kernel.spec();
  if (args.size() != spec.buffers)
    throw Error("kernel " + spec.name + " takes " + std::to_string(spec.buffers) +
                " buffers, got " + std::to_string(args.size()));
  if (push_bytes != spec.push_bytes)
    throw Error("kernel " + spec.name + " takes " + std::to_string(spec.push_bytes) +
                " bytes of push constants, got " + std::to_string(push_bytes));
  if (spec.buffers > k_max_buffers_per_set)
    throw Error("kernel " + spec.name + " binds more than 16 buffers");
  if (std::popcount(spec.texel_buffers) > int(k_max_texel_buffers_per_set) ||
      spec.texel_buffers >> spec.buffers)
    throw Error("kernel " + spec.name + ": texel-buffer bindings out of range");
  const auto& maxc = device_.info().max_workgroup_count;
  for (int i = 0; i < 3; ++i)
    if (groups[i] == 0 || groups[i] > maxc[i])
      throw Error("kernel " + spec.name + ": workgroup count " + std::to_string(groups[i]) +
                  " in dimension " + std::to_string(i) + " is outside 1.." +
                  std::to_string(maxc[i]));
  std::vector<VkBufferView> views(args.size(), VK_NULL_HANDLE);
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].buffer.valid())
      throw Error("kernel " + spec.name + ": binding " + std::to_string(i) + " has no buffer");
    const bool texel = (spec.texel_buffers >> i) & 1u;
    if (texel != (args[i].texel_format != VK_FORMAT_UNDEFINED))
      throw Error("kernel " + spec.name + ": binding " + std::to_string(i) +
                  (texel ? " is a texel buffer and needs a format" : " is no texel buffer"));
    if (texel) views[i] = make_texel_view(args[i], spec.name, i);
    // A storage binding's offset must be a multiple of the device's alignment; past it the
    // shader reads from wherever the driver rounded to (the validation layer's VUID-00328).
    const uint64_t align = device_.info().min_storage_offset_alignment;
    if (!texel && align > 1 && args[i].buffer.offset % align != 0)
      throw Error("kernel " + spec.name + ": binding " + std::to_string(i) + " starts at byte " +
                  std::to_string(args[i].buffer.offset) + ", which is no multiple of " +
                  device_.label() + "'s storage-buffer offset alignment (" + std::to_string(align) +
                  ")");
  }
  track(args);

  VkDescriptorSet set = allocate_set(kernel);
  std::vector<VkDescriptorBufferInfo> infos(args.size());
  std::vector<VkWriteDescriptorSet> writes(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const bool texel = (spec.texel_buffers >> i) & 1u;
    writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstSet = set;
    writes[i].dstBinding = static_cast<uint32_t>(i);
    writes[i].descriptorCount = 1;
    if (texel) {
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
      writes[i].pTexelBufferView = &views[i];
    } else {
      infos[i] = {args[i].buffer.buffer, args[i].buffer.offset, args[i].buffer.size};
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[i].pBufferInfo = &infos[i];
    }
  }
  vkUpdateDescriptorSets(device_.handle(), static_cast<uint32_t>(writes.size()), writes.data(), 0,
                         nullptr);
  vkCmdBindPipeline(seq_.cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, kernel.pipeline());
  if (std::find(seq_.pipelines_.begin(), seq_.pipelines_.end(), kernel.pipeline()) ==
      seq_.pipelines_.end())
    seq_.pipelines_.push_back(kernel.pipeline());
  vkCmdBindDescriptorSets(seq_.cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, kernel.layout(), 0, 1, &set, 0,
                          nullptr);
  if (push_bytes)
    vkCmdPushConstants(seq_.cmd_, kernel.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes,
                       push);
  vkCmdDispatch(seq_.cmd_, groups[0], groups[1], groups[2]);
  timestamp_after(spec.name);
}

void Recorder::copy(const BufferRef& src, const BufferRef& dst) {
  if (dst.size < src.size) throw Error("copy: destination smaller than source");
  track({in(src), out(dst.slice(0, src.size))});
  VkBufferCopy c{src.offset, dst.offset, src.size};
  vkCmdCopyBuffer(seq_.cmd_, src.buffer, dst.buffer, 1, &c);
  timestamp_after("copy");
}

void Recorder::fill(const BufferRef& dst, uint32_t pattern) {
  if (dst.offset % 4 || dst.size % 4) throw Error("fill: offset and size must be multiples of 4");
  track({out(dst)});
  vkCmdFillBuffer(seq_.cmd_, dst.buffer, dst.offset, dst.size, pattern);
  timestamp_after("fill");
}

void Recorder::timestamp_after(const std::string& name) {
  seq_.names_.push_back(name);
  if (!seq_.queries_ || !options_.profile) return;
  if (queries_used_ >= query_capacity_)
    throw Error("profiling: more than " + std::to_string(query_capacity_ - 1) +
                " dispatches in one sequence");
  vkCmdWriteTimestamp(seq_.cmd_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, seq_.queries_.get(),
                      queries_used_++);
}

Sequence Recorder::finish() {
  // Results become visible to the host and to whatever is submitted next.
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_SHADER_READ_BIT |
                     VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                     VK_ACCESS_TRANSFER_WRITE_BIT;
  vkCmdPipelineBarrier(seq_.cmd_,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
                           VK_PIPELINE_STAGE_TRANSFER_BIT,
                       0, 1, &mb, 0, nullptr, 0, nullptr);
  if (seq_.queries_ && !options_.profile)
    vkCmdWriteTimestamp(seq_.cmd_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, seq_.queries_.get(),
                        queries_used_++);
  check(vkEndCommandBuffer(seq_.cmd_), "ending a command buffer");
  seq_.queries_written_ = queries_used_;
  seq_.barriers_ = barriers_;
  return std::move(seq_);
}

Sequence Recorder::cut() {
  Sequence done = finish();
  seq_ = Sequence();
  pending_.clear();
  barriers_ = 0;
  sets_left_ = 0;  // the descriptor pools went with `done`
  query_capacity_ = 0;
  queries_used_ = 0;
  begin();
  return done;
}

std::string profile_table(const std::vector<KernelTiming>& timings) {
  std::map<std::string, std::pair<int, double>> by_name;
  double total = 0;
  for (const auto& t : timings) {
    by_name[t.name].first++;
    by_name[t.name].second += t.milliseconds;
    total += t.milliseconds;
  }
  std::vector<std::pair<std::string, std::pair<int, double>>> rows(by_name.begin(), by_name.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.second.second > b.second.second; });
  std::string s = "kernel                          calls    total ms   share\n";
  char line[160];
  for (const auto& [name, v] : rows) {
    std::snprintf(line, sizeof line, "%-30s %6d %11.3f %6.1f%%\n", name.c_str(), v.first, v.second,
                  total > 0 ? 100.0 * v.second / total : 0.0);
    s += line;
  }
  return s;
}

}  // namespace vkf
