#include "engine/tuning_file.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/error.h"
#include "engine/file_io.h"
#include "engine/json_limits.h"
#include "engine/kernel.h"

namespace vkf {
namespace {

using nlohmann::json;
constexpr const char* k_format = "vkformer-tuning/1";

std::string hex(const uint8_t* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += d[p[i] >> 4];
    s += d[p[i] & 15];
  }
  return s;
}

DType parse_dtype(const std::string& s) {
  if (s == "f32") return DType::f32;
  if (s == "f16") return DType::f16;
  throw Error("dtype '" + s + "' is not f32 or f16");
}

json config_json(const ops::MatmulConfig& c) {
  json j = {{"name", c.name},       {"workgroup", c.workgroup},
            {"bm", c.bm},           {"bn", c.bn},
            {"bk", c.bk},           {"tm", c.tm},
            {"tn", c.tn},           {"shared", c.shared},
            {"coopmat", c.coopmat}, {"khr", c.khr},
            {"stages", c.stages},   {"texel", nullptr}};
  if (c.texel) j["texel"] = *c.texel;
  if (c.nv2) j["nv2"] = true;  // absent in files from before the coopmat2 kernel, and for others
  if (c.split_k) j["split_k"] = *c.split_k;  // absent where the split was not tuned
  return j;
}

ops::MatmulConfig config_of(const json& j) {
  ops::MatmulConfig c;
  c.name = j.at("name").get<std::string>();
  c.workgroup = json_field<uint32_t>(j, "workgroup");
  c.bm = json_field<uint32_t>(j, "bm");
  c.bn = json_field<uint32_t>(j, "bn");
  c.bk = json_field<uint32_t>(j, "bk");
  c.tm = json_field<uint32_t>(j, "tm");
  c.tn = json_field<uint32_t>(j, "tn");
  c.shared = j.at("shared").get<bool>();
  c.coopmat = j.at("coopmat").get<bool>();
  c.khr = j.at("khr").get<bool>();
  c.stages = json_field<uint32_t>(j, "stages", 1u);  // files from before stages were one
  if (!j.at("texel").is_null()) c.texel = j.at("texel").get<bool>();
  c.nv2 = j.value("nv2", false);
  if (c.nv2 && (!c.coopmat || c.khr))
    throw Error("configuration '" + c.name + "' is a coopmat2 row without coopmat, or with khr");
  // Values the kernel divides by or sizes arrays with: a hand-edited zero must not reach it.
  if (!c.workgroup || !c.bm || !c.bn || !c.bk || !c.tm || !c.tn || c.bm % c.tm || c.bn % c.tn)
    throw Error("configuration '" + c.name +
                "' has a zero size or a tile not a multiple of its "
                "block");
  if (c.stages < 1 || c.stages > 2 || (c.stages == 2 && !c.khr))
    throw Error("configuration '" + c.name + "' has " + std::to_string(c.stages) +
                " stages (1, or 2 on a KHR row)");
  if (j.contains("split_k")) {
    c.split_k = json_field<uint32_t>(j, "split_k");
    if (*c.split_k < 1 || *c.split_k > ops::k_matmul_max_split_k)
      throw Error("configuration '" + c.name + "' splits k into " + std::to_string(*c.split_k) +
                  " slices (1 to " + std::to_string(ops::k_matmul_max_split_k) + ")");
  }
  return c;
}

const char* path_name(ops::AttentionPath p) {
  return p == ops::AttentionPath::rows    ? "rows"
         : p == ops::AttentionPath::tiled ? "tiled"
                                          : "automatic";
}

const char* unroll_name(ops::AttentionTiles::Unroll u) {
  return u == ops::AttentionTiles::Unroll::rolled     ? "rolled"
         : u == ops::AttentionTiles::Unroll::unrolled ? "unrolled"
                                                      : "automatic";
}

const char* reads_name(ops::RowKernelConfig::Reads r) {
  return r == ops::RowKernelConfig::Reads::texel     ? "texel"
         : r == ops::RowKernelConfig::Reads::storage ? "storage"
                                                     : "automatic";
}

const char* subgroup_name(ops::RowKernelConfig::Subgroup s) {
  return s == ops::RowKernelConfig::Subgroup::on    ? "on"
         : s == ops::RowKernelConfig::Subgroup::off ? "off"
                                                    : "automatic";
}

ops::AttentionKernel parse_kernel(const std::string& s) {
  for (auto k : {ops::AttentionKernel::forward, ops::AttentionKernel::backward_kv,
                 ops::AttentionKernel::backward_q})
    if (s == ops::attention_kernel_short_name(k)) return k;
  throw Error("attention kernel '" + s + "' is not fwd, bkv or bq");
}

json attention_json(const ops::AttentionTiles& t) {
  return {
      {"path", path_name(t.path)}, {"workgroup", t.workgroup}, {"block_q", t.block_q},
      {"block_k", t.block_k},      {"rows", t.rows},           {"unroll", unroll_name(t.unroll)}};
}

ops::AttentionTiles attention_of(const json& j) {
  ops::AttentionTiles t;
  const std::string path = j.at("path").get<std::string>();
  if (path == "rows")
    t.path = ops::AttentionPath::rows;
  else if (path == "tiled")
    t.path = ops::AttentionPath::tiled;
  else
    throw Error("attention path '" + path + "' is not tiled or rows");
  t.workgroup = json_field<uint32_t>(j, "workgroup");
  t.block_q = json_field<uint32_t>(j, "block_q");
  t.block_k = json_field<uint32_t>(j, "block_k");
  t.rows = json_field<uint32_t>(j, "rows");
  const std::string unroll = j.at("unroll").get<std::string>();
  if (unroll == "rolled")
    t.unroll = ops::AttentionTiles::Unroll::rolled;
  else if (unroll == "unrolled")
    t.unroll = ops::AttentionTiles::Unroll::unrolled;
  else if (unroll != "automatic")
    throw Error("attention unroll '" + unroll + "' is not rolled, unrolled or automatic");
  // Values the kernels size arrays or grids with: a hand-edited zero must not reach them.
  if (t.path == ops::AttentionPath::tiled && (!t.workgroup || !t.block_q || !t.block_k))
    throw Error("attention configuration " + ops::describe(t) + " has a zero size");
  if (t.path == ops::AttentionPath::rows && !t.rows)
    throw Error("attention configuration " + ops::describe(t) + " has no rows per lane");
  return t;
}

// "reads" of a LayerNorm or cross-entropy entry. Files written before the read path was tuned
// have none: the device's default reads.
ops::RowKernelConfig::Reads reads_of(const json& j, const char* family) {
  const std::string reads = j.value("reads", std::string("automatic"));
  if (reads == "texel") return ops::RowKernelConfig::Reads::texel;
  if (reads == "storage") return ops::RowKernelConfig::Reads::storage;
  if (reads != "automatic")
    throw Error(std::string(family) + " reads '" + reads + "' is not texel, storage or automatic");
  return ops::RowKernelConfig::Reads::automatic;
}

ops::LayerNormConfig layer_norm_of(const json& j) {
  ops::LayerNormConfig c;
  c.workgroup_size = json_field<uint32_t>(j, "workgroup_size");
  const std::string r = j.at("reduce").get<std::string>();
  if (!ops::parse_row_reduce(r, c.reduce) || c.reduce == ops::RowReduce::automatic)
    throw Error("LayerNorm reduction '" + r + "' is not shared, subgroup or subgroup_rows");
  if (!c.workgroup_size) throw Error("LayerNorm workgroup size 0");
  c.reads = reads_of(j, "LayerNorm");
  return c;
}

ops::RowKernelConfig row_kernel_of(const json& j) {
  ops::RowKernelConfig c;
  c.workgroup_size = json_field<uint32_t>(j, "workgroup_size");
  const std::string sg = j.at("subgroup").get<std::string>();
  if (sg == "on")
    c.subgroup = ops::RowKernelConfig::Subgroup::on;
  else if (sg == "off")
    c.subgroup = ops::RowKernelConfig::Subgroup::off;
  else
    throw Error("cross-entropy subgroup '" + sg + "' is not on or off");
  c.reads = reads_of(j, "cross-entropy");
  if (!c.workgroup_size) throw Error("cross-entropy workgroup size 0");
  return c;
}

ops::AdamConfig adam_of(const json& j) {
  ops::AdamConfig c;
  c.workgroup_size = json_field<uint32_t>(j, "workgroup_size");
  c.elems = json_field<uint32_t>(j, "elems");
  const std::string reads = j.at("reads").get<std::string>();
  if (reads == "texel")
    c.reads = ops::AdamConfig::Reads::texel;
  else if (reads != "storage")
    throw Error("Adam reads '" + reads + "' is not texel or storage");
  if (!c.workgroup_size || !c.elems)
    throw Error("Adam configuration " + ops::describe(c) + " has a zero size");
  return c;
}

json topk_json(const ops::TopKConfig& c) {
  json j = {{"path", c.path == ops::TopKPath::subgroup_rows ? "rows" : "chunks"},
            {"workgroup_size", c.workgroup_size}};
  if (c.path == ops::TopKPath::chunks) {
    j["per_thread"] = c.per_thread;
    j["prune"] = c.prune;
  }
  return j;
}

ops::TopKConfig topk_of(const json& j) {
  ops::TopKConfig c;
  const std::string path = j.at("path").get<std::string>();
  if (path == "rows")
    c.path = ops::TopKPath::subgroup_rows;
  else if (path == "chunks")
    c.path = ops::TopKPath::chunks;
  else
    throw Error("top-k path '" + path + "' is not rows or chunks");
  c.workgroup_size = json_field<uint32_t>(j, "workgroup_size");
  if (c.path == ops::TopKPath::chunks) {
    c.per_thread = json_field<uint32_t>(j, "per_thread");
    c.prune = j.at("prune").get<bool>();
  }
  if (!c.workgroup_size) throw Error("top-k workgroup size 0");
  return c;
}

// The evidence every family's entry carries, around its shape and configuration.
template <class P, class C>
json entry_json(const TunedEntry<P, C>& t, json shape, json config) {
  json rejected = json::array();
  for (const auto& [cfg, why] : t.rejected) rejected.push_back({{"config", cfg}, {"why", why}});
  return {{"class", t.shape_class},
          {"shape", std::move(shape)},
          {"config", std::move(config)},
          {"default", {{"name", t.default_name}, {"seconds", t.default_seconds}}},
          {"seconds", t.seconds},
          {"tried", t.tried},
          {"untried", t.untried},
          {"rejected", rejected}};
}

template <class P, class C>
void read_evidence(const json& e, TunedEntry<P, C>& t, const std::string& shape_class) {
  t.shape_class = e.at("class").get<std::string>();
  if (shape_class != t.shape_class)
    throw Error("class '" + t.shape_class + "' is not its shape's (" + shape_class + ")");
  t.default_name = e.at("default").at("name").get<std::string>();
  t.default_seconds = json_field<double>(e.at("default"), "seconds");
  t.seconds = json_field<double>(e, "seconds");
  t.tried = json_field<uint32_t>(e, "tried");
  t.untried = json_field<uint32_t>(e, "untried", 0u);  // files of the first format version lack it
  for (const json& r : e.at("rejected"))
    t.rejected.emplace_back(r.at("config").get<std::string>(), r.at("why").get<std::string>());
}

// The families after matmul are optional: a file written before them has none.
const json& family(const json& j, const char* name) {
  static const json none = json::array();
  return j.contains(name) ? j.at(name) : none;
}

}  // namespace

TuningKey TuningKey::of(const DeviceInfo& info) {
  return {
      info.vendor_id,      info.device_id,
      info.driver_version, hex(info.pipeline_cache_uuid.data(), info.pipeline_cache_uuid.size()),
      info.name,           info.driver_name + " " + info.driver_version_string()};
}

std::string TuningKey::mismatch(const TuningKey& d) const {
  if (vendor_id != d.vendor_id || device_id != d.device_id)
    return "it is for device '" + device_name + "', not '" + d.device_name + "'";
  if (driver_version != d.driver_version)
    return "it is for driver " + driver + ", this device runs " + d.driver;
  if (pipeline_cache_uuid != d.pipeline_cache_uuid)
    return "its pipelineCacheUUID " + pipeline_cache_uuid + " is not the driver's " +
           d.pipeline_cache_uuid + " (another build of driver " + d.driver + ")";
  return "";
}

std::string tuning_file_path(const std::string& dir, const DeviceInfo& info) {
  return dir.empty() ? "" : dir + "/" + device_cache_stem(info) + ".tuning.json";
}

void write_tuning_file(const std::string& path, const TuningFile& f) {
  json entries = json::array(), attention = json::array(), layer_norm = json::array(),
       cross_entropy = json::array(), topk = json::array(), adam = json::array();
  for (const TunedMatmul& t : f.matmul) {
    json shape = {{"dtype", dtype_name(t.shape.dtype)},
                  {"trans_a", t.shape.trans_a},
                  {"trans_b", t.shape.trans_b},
                  {"m", t.shape.m},
                  {"n", t.shape.n},
                  {"k", t.shape.k}};
    if (t.shape.workspace) shape["workspace"] = true;  // absent in files from before split-k
    entries.push_back(entry_json(t, std::move(shape), config_json(t.config)));
  }
  for (const TunedAttention& t : f.attention)
    attention.push_back(entry_json(t,
                                   {{"dtype", dtype_name(t.shape.dtype)},
                                    {"kernel", ops::attention_kernel_short_name(t.shape.kernel)},
                                    {"d_k", t.shape.d_k},
                                    {"d_v", t.shape.d_v},
                                    {"len_q", t.shape.len_q},
                                    {"len_k", t.shape.len_k},
                                    {"causal", t.shape.causal}},
                                   attention_json(t.config)));
  for (const TunedLayerNorm& t : f.layer_norm)
    layer_norm.push_back(entry_json(t,
                                    {{"dtype", dtype_name(t.shape.dtype)},
                                     {"backward", t.shape.backward},
                                     {"rows", t.shape.rows},
                                     {"d", t.shape.d}},
                                    {{"reduce", ops::row_reduce_name(t.config.reduce)},
                                     {"workgroup_size", t.config.workgroup_size},
                                     {"reads", reads_name(t.config.reads)}}));
  for (const TunedCrossEntropy& t : f.cross_entropy)
    cross_entropy.push_back(entry_json(
        t, {{"dtype", dtype_name(t.shape.dtype)}, {"rows", t.shape.rows}, {"vocab", t.shape.vocab}},
        {{"workgroup_size", t.config.workgroup_size},
         {"subgroup", subgroup_name(t.config.subgroup)},
         {"reads", reads_name(t.config.reads)}}));
  for (const TunedTopK& t : f.topk)
    topk.push_back(entry_json(t,
                              {{"dtype", dtype_name(t.shape.dtype)},
                               {"rows", t.shape.rows},
                               {"n", t.shape.n},
                               {"k", t.shape.k}},
                              topk_json(t.config)));
  for (const TunedAdam& t : f.adam)
    adam.push_back(entry_json(
        t, {{"n", t.shape.n}},
        {{"workgroup_size", t.config.workgroup_size},
         {"elems", t.config.elems},
         {"reads", t.config.reads == ops::AdamConfig::Reads::texel ? "texel" : "storage"}}));
  const json j = {{"format", k_format},
                  {"device",
                   {{"vendor_id", f.key.vendor_id},
                    {"device_id", f.key.device_id},
                    {"driver_version", f.key.driver_version},
                    {"pipeline_cache_uuid", f.key.pipeline_cache_uuid},
                    {"name", f.key.device_name},
                    {"driver", f.key.driver}}},
                  {"matmul", entries},
                  {"attention", attention},
                  {"layer_norm", layer_norm},
                  {"cross_entropy", cross_entropy},
                  {"topk", topk},
                  {"adam", adam}};
  std::error_code ec;
  if (const auto parent = std::filesystem::path(path).parent_path(); !parent.empty())
    std::filesystem::create_directories(parent, ec);
  // Unique temporary names and a rename (engine/file_io.h): two writers of one file leave one
  // of their files whole, never a mix or a missing file.
  write_file_atomically(path, j.dump(2) + "\n");
}

TuningFile read_tuning_file(const std::string& path) {
  const std::string text = read_whole_file(path, k_max_text_file_bytes, "the tuning file");
  try {
    const json j = parse_json(text, "its text");
    if (j.at("format").get<std::string>() != k_format)
      throw Error("format '" + j.at("format").get<std::string>() + "' is not " + k_format);
    TuningFile f;
    const json& d = j.at("device");
    f.key.vendor_id = json_field<uint32_t>(d, "vendor_id");
    f.key.device_id = json_field<uint32_t>(d, "device_id");
    f.key.driver_version = json_field<uint32_t>(d, "driver_version");
    f.key.pipeline_cache_uuid = d.at("pipeline_cache_uuid").get<std::string>();
    f.key.device_name = d.at("name").get<std::string>();
    f.key.driver = d.at("driver").get<std::string>();
    for (const json& e : j.at("matmul")) {
      TunedMatmul t;
      const json& s = e.at("shape");
      t.shape = {parse_dtype(s.at("dtype").get<std::string>()),
                 s.at("trans_a").get<bool>(),
                 s.at("trans_b").get<bool>(),
                 json_field<uint32_t>(s, "m"),
                 json_field<uint32_t>(s, "n"),
                 json_field<uint32_t>(s, "k"),
                 s.value("workspace", false)};
      read_evidence(e, t, ops::matmul_shape_class(t.shape));
      t.config = config_of(e.at("config"));
      f.matmul.push_back(std::move(t));
    }
    for (const json& e : family(j, "attention")) {
      TunedAttention t;
      const json& s = e.at("shape");
      t.shape = {parse_dtype(s.at("dtype").get<std::string>()),
                 parse_kernel(s.at("kernel").get<std::string>()),
                 json_field<uint32_t>(s, "d_k"),
                 json_field<uint32_t>(s, "d_v"),
                 json_field<uint32_t>(s, "len_q"),
                 json_field<uint32_t>(s, "len_k"),
                 s.at("causal").get<bool>()};
      read_evidence(e, t, ops::attention_shape_class(t.shape));
      t.config = attention_of(e.at("config"));
      f.attention.push_back(std::move(t));
    }
    for (const json& e : family(j, "layer_norm")) {
      TunedLayerNorm t;
      const json& s = e.at("shape");
      t.shape = {parse_dtype(s.at("dtype").get<std::string>()), s.at("backward").get<bool>(),
                 json_field<uint32_t>(s, "rows"), json_field<uint32_t>(s, "d")};
      read_evidence(e, t, ops::layer_norm_shape_class(t.shape));
      t.config = layer_norm_of(e.at("config"));
      f.layer_norm.push_back(std::move(t));
    }
    for (const json& e : family(j, "cross_entropy")) {
      TunedCrossEntropy t;
      const json& s = e.at("shape");
      t.shape = {parse_dtype(s.at("dtype").get<std::string>()), json_field<uint32_t>(s, "rows"),
                 json_field<uint32_t>(s, "vocab")};
      read_evidence(e, t, ops::cross_entropy_shape_class(t.shape));
      t.config = row_kernel_of(e.at("config"));
      f.cross_entropy.push_back(std::move(t));
    }
    for (const json& e : family(j, "topk")) {
      TunedTopK t;
      const json& s = e.at("shape");
      t.shape = {parse_dtype(s.at("dtype").get<std::string>()), json_field<uint32_t>(s, "rows"),
                 json_field<uint32_t>(s, "n"), json_field<uint32_t>(s, "k")};
      read_evidence(e, t, ops::topk_shape_class(t.shape));
      t.config = topk_of(e.at("config"));
      f.topk.push_back(std::move(t));
    }
    for (const json& e : family(j, "adam")) {
      // Entries from before Adam's elements an invocation and reads were searched (the
      // workgroup size alone, at one element through storage buffers) are dropped, so the
      // class runs the default until it is tuned again: on CPU devices that default is 1.8-2.9x
      // the old search's space (docs/performance.md).
      if (!e.at("config").contains("elems")) continue;
      TunedAdam t;
      t.shape = {json_field<uint32_t>(e.at("shape"), "n")};
      read_evidence(e, t, ops::adam_shape_class(t.shape));
      t.config = adam_of(e.at("config"));
      f.adam.push_back(std::move(t));
    }
    return f;
  } catch (const json::exception& e) {
    throw Error("the tuning file " + path + " is malformed: " + e.what());
  } catch (const Error& e) {
    throw Error("the tuning file " + path + " is malformed: " + e.what());
  }
}

std::shared_ptr<const Tuning> make_tuning(const TuningFile& file, const std::string& origin) {
  auto t = std::make_shared<Tuning>();
  t->origin = origin;
  for (const TunedMatmul& m : file.matmul) t->matmul[m.shape_class] = m.config;
  for (const TunedAttention& a : file.attention) t->attention[a.shape_class] = a.config;
  for (const TunedLayerNorm& l : file.layer_norm) t->layer_norm[l.shape_class] = l.config;
  for (const TunedCrossEntropy& c : file.cross_entropy) t->cross_entropy[c.shape_class] = c.config;
  for (const TunedTopK& k : file.topk) t->topk[k.shape_class] = k.config;
  for (const TunedAdam& a : file.adam) t->adam[a.shape_class] = a.config;
  return t;
}

TuningLoad load_tuning(const std::string& path, const DeviceInfo& info) {
  // A symlink loop or a folder that cannot be searched is an error (below), not "no file".
  std::error_code ec;
  if (path.empty() || (!std::filesystem::exists(path, ec) && !ec))
    return {nullptr, "no tuning file " + path};
  TuningFile f;
  try {
    f = read_tuning_file(path);
  } catch (const Error& e) {
    return {nullptr, std::string(e.what()) + "; ignored"};
  }
  if (const std::string why = f.key.mismatch(TuningKey::of(info)); !why.empty())
    return {nullptr, "the tuning file " + path + " is ignored: " + why};
  return {make_tuning(f, path), ""};
}

}  // namespace vkf
