#include "engine/ops/attention_choice.h"

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
    if (auto it = tuning->attention.find(cls); it != tuning->attention.end()) {
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

}  // namespace vkf::ops
