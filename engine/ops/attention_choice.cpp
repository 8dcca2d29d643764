#include "engine/ops/attention_choice.h"

#include <nlohmann/json.hpp>

#include "engine/json_limits.h"
#include "engine/tuning.h"

namespace vkf::ops {
namespace {

const char* len_bucket(uint32_t x) {
  return x <= 16 ? "16" : x <= 64 ? "64" : x <= 256 ? "256" : x <= 1024 ? "1k" : "big";
}

const char* unroll_name(AttentionTiles::Unroll u) {
  return u == AttentionTiles::Unroll::rolled     ? "rolled"
         : u == AttentionTiles::Unroll::unrolled ? "unrolled"
                                                 : "auto-unroll";
}

}  // namespace

const char* attention_kernel_short_name(AttentionKernel k) {
  return k == AttentionKernel::forward ? "fwd" : k == AttentionKernel::backward_kv ? "bkv" : "bq";
}

std::string attention_shape_class(const AttentionProblem& p) {
  // Appended piece by piece: GCC 12 warns (-Wrestrict) on "literal" + std::to_string(...).
  std::string s = dtype_name(p.dtype);
  s += '/';
  s += attention_kernel_short_name(p.kernel);
  s += "/d";
  s += std::to_string(p.d_k);
  if (p.d_v != p.d_k) {
    s += 'x';
    s += std::to_string(p.d_v);
  }
  s += p.causal ? "/causal/q" : "/full/q";
  s += len_bucket(p.len_q);
  s += "/k";
  s += len_bucket(p.len_k);
  return s;
}

std::string describe(const AttentionTiles& t) {
  std::string s;
  if (t.path == AttentionPath::rows) {
    s = "rows";
    s += t.rows ? std::to_string(t.rows) : std::string("-default");
    s += ' ';
    s += unroll_name(t.unroll);
    return s;
  }
  s = t.path == AttentionPath::tiled ? "tiled wg" : "auto wg";
  s += std::to_string(t.workgroup);
  s += ' ';
  s += std::to_string(t.block_q);
  s += 'x';
  s += std::to_string(t.block_k);
  return s;
}

bool same_kernel(const AttentionTiles& a, const AttentionTiles& b) {
  if (a.path != b.path) return false;
  if (a.path == AttentionPath::rows) return a.rows == b.rows && a.unroll == b.unroll;
  return a.workgroup == b.workgroup && a.block_q == b.block_q && a.block_k == b.block_k;
}

AttentionChoice choose_attention(const DeviceInfo& info, const Tuning* tuning,
                                 const AttentionProblem& p) {
  std::string passed_over;
  if (tuning) {
    const std::string cls = attention_shape_class(p);
    if (auto it = tuning->of<AttentionFamily>().find(cls);
        it != tuning->of<AttentionFamily>().end()) {
      const std::string misfit = attention_tiles_misfit(info, p.kernel, it->second, p.d_k, p.d_v);
      if (misfit.empty()) {
        // A rows-path entry names no tiles: the default's, should a caller or
        // OpOverrides::attention_rows switch the path to tiled.
        AttentionTiles t = it->second;
        if (t.path == AttentionPath::rows) {
          const AttentionTiles d = attention_default_tiles(info, p.kernel, p.d_k, p.d_v);
          t.workgroup = d.workgroup, t.block_q = d.block_q, t.block_k = d.block_k;
        }
        return {t, ConfigSource::tuned,
                "tuned for " + cls + " (" + describe(t) + ", " + tuning->origin + ")"};
      }
      passed_over =
          "; the tuned " + describe(it->second) + " for " + cls + " was passed over: " + misfit;
    }
  }
  AttentionTiles t = attention_default_tiles(info, p.kernel, p.d_k, p.d_v);
  // The default's rows per lane are capped by the sequence when the kernel runs, and its unroll
  // follows the subgroup width: both left to the op.
  t.rows = 0;
  t.unroll = AttentionTiles::Unroll::automatic;
  const bool slow = t.path == AttentionPath::rows && slow_rows_compiler(info);
  return {t, ConfigSource::table,
          std::string("default: ") +
              (t.path == AttentionPath::rows ? "rows path (CPU device)" : "tiled path") + ", " +
              describe(t) +
              (slow ? " (1 row a lane, rolled: this driver takes minutes to compile more)" : "") +
              passed_over};
}

namespace {

const char* path_name(AttentionPath p) {
  return p == AttentionPath::rows ? "rows" : p == AttentionPath::tiled ? "tiled" : "automatic";
}

// The tuning file's words (describe() says "auto-unroll" for people).
const char* unroll_json_name(AttentionTiles::Unroll u) {
  return u == AttentionTiles::Unroll::rolled     ? "rolled"
         : u == AttentionTiles::Unroll::unrolled ? "unrolled"
                                                 : "automatic";
}

AttentionKernel parse_kernel(const std::string& s) {
  for (auto k :
       {AttentionKernel::forward, AttentionKernel::backward_kv, AttentionKernel::backward_q})
    if (s == attention_kernel_short_name(k)) return k;
  throw Error("attention kernel '" + s + "' is not fwd, bkv or bq");
}

}  // namespace

std::string AttentionFamily::dims(const Problem& p) {
  return std::string(dtype_name(p.dtype)) + " " + attention_kernel_short_name(p.kernel) + " " +
         std::to_string(p.d_k) + "x" + std::to_string(p.d_v) + " " + std::to_string(p.len_q) + "x" +
         std::to_string(p.len_k) + (p.causal ? " causal" : "");
}

nlohmann::json AttentionFamily::problem_json(const Problem& p) {
  return {{"dtype", dtype_name(p.dtype)},
          {"kernel", attention_kernel_short_name(p.kernel)},
          {"d_k", p.d_k},
          {"d_v", p.d_v},
          {"len_q", p.len_q},
          {"len_k", p.len_k},
          {"causal", p.causal}};
}

AttentionProblem AttentionFamily::problem_of(const nlohmann::json& j) {
  return {storage_dtype_of(j.at("dtype").get<std::string>()),
          parse_kernel(j.at("kernel").get<std::string>()),
          json_field<uint32_t>(j, "d_k"),
          json_field<uint32_t>(j, "d_v"),
          json_field<uint32_t>(j, "len_q"),
          json_field<uint32_t>(j, "len_k"),
          j.at("causal").get<bool>()};
}

nlohmann::json AttentionFamily::config_json(const Config& t) {
  return {{"path", path_name(t.path)},
          {"workgroup", t.workgroup},
          {"block_q", t.block_q},
          {"block_k", t.block_k},
          {"rows", t.rows},
          {"unroll", unroll_json_name(t.unroll)}};
}

AttentionTiles AttentionFamily::config_of(const nlohmann::json& j) {
  AttentionTiles t;
  const std::string path = j.at("path").get<std::string>();
  if (path == "rows")
    t.path = AttentionPath::rows;
  else if (path == "tiled")
    t.path = AttentionPath::tiled;
  else
    throw Error("attention path '" + path + "' is not tiled or rows");
  t.workgroup = json_field<uint32_t>(j, "workgroup");
  t.block_q = json_field<uint32_t>(j, "block_q");
  t.block_k = json_field<uint32_t>(j, "block_k");
  t.rows = json_field<uint32_t>(j, "rows");
  const std::string unroll = j.at("unroll").get<std::string>();
  if (unroll == "rolled")
    t.unroll = AttentionTiles::Unroll::rolled;
  else if (unroll == "unrolled")
    t.unroll = AttentionTiles::Unroll::unrolled;
  else if (unroll != "automatic")
    throw Error("attention unroll '" + unroll + "' is not rolled, unrolled or automatic");
  // Values the kernels size arrays or grids with: a hand-edited zero must not reach them.
  if (t.path == AttentionPath::tiled && (!t.workgroup || !t.block_q || !t.block_k))
    throw Error("attention configuration " + ops::describe(t) + " has a zero size");
  if (t.path == AttentionPath::rows && !t.rows)
    throw Error("attention configuration " + ops::describe(t) + " has no rows per lane");
  return t;
}

std::string AttentionFamily::misfit(const DeviceInfo& info, const Config& c, const Problem& p) {
  return attention_tiles_misfit(info, p.kernel, c, p.d_k, p.d_v);
}

}  // namespace vkf::ops
