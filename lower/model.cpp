#include "lower/model.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/fileio.h"
#include "ir/json_io.h"
#include "ir/pyjson.h"

std::span<const std::pair<std::string_view, std::string_view>> amk_builtin_model_files();

namespace amk::lower {

using json = nlohmann::ordered_json;

namespace {

constexpr int64_t kHfMaxSeqCap = 2048;  // KV caches are max_seq long; HF contexts reach 131072

// Typed field access with the key named in every error.
struct Fields {
  const json& j;
  ir::Diagnostic error;  // the first problem
  bool ok = true;
  bool fail(std::string_view key, std::string_view what) {
    if (ok) error = ir::error("model.field", std::string(what), "/" + ir::pointer_token(key));
    ok = false;
    return false;
  }
  bool has(const char* key) const { return j.contains(key) && !j[key].is_null(); }
  int64_t integer(const char* key, std::optional<int64_t> def = {}) {
    if (!has(key)) {
      if (!def) fail(key, "missing");
      return def.value_or(0);
    }
    const json& v = j[key];
    if (!v.is_number_integer()) return fail(key, "must be an integer"), 0;
    return v.get<int64_t>();
  }
  double real(const char* key, double def) {
    if (!has(key)) return def;
    const json& v = j[key];
    if (!v.is_number() || !std::isfinite(v.get<double>()))
      return fail(key, "must be a number"), def;
    return v.get<double>();
  }
  bool boolean(const char* key, bool def) {
    if (!has(key)) return def;
    if (!j[key].is_boolean()) return fail(key, "must be true or false"), def;
    return j[key].get<bool>();
  }
  std::string string(const char* key, std::string def) {
    if (!has(key)) return def;
    if (!j[key].is_string()) return fail(key, "must be a string"), def;
    return j[key].get<std::string>();
  }
};

ir::Result<ModelSpec> from_spec(const json& j, std::string_view origin) {
  static const char* kKnown[] = {"name",    "source",         "weight_keys", "hidden",
                                 "n_heads", "n_kv_heads",     "head_dim",    "intermediate",
                                 "vocab",   "n_layers",       "rms_eps",     "rope_theta",
                                 "max_seq", "tie_embeddings", "note"};
  for (auto it = j.begin(); it != j.end(); ++it)
    if (std::none_of(std::begin(kKnown), std::end(kKnown),
                     [&](const char* k) { return it.key() == k; }))
      return ir::error("model.field", "unknown field of a model spec",
                       "/" + ir::pointer_token(it.key()));
  Fields f{j, {}};
  ModelSpec m;
  m.name = f.string("name", std::string(origin));
  m.source = f.string("source", "_HFModel");
  const std::string keys = f.string("weight_keys", "hf");
  if (keys == "toy") {
    m.keys = WeightKeys::Toy;
  } else if (keys != "hf") {
    f.fail("weight_keys", "must be \"toy\" or \"hf\"");
  }
  m.hidden = f.integer("hidden");
  m.n_heads = f.integer("n_heads");
  m.n_kv_heads = f.integer("n_kv_heads", m.n_heads);
  m.head_dim = f.integer("head_dim", m.n_heads > 0 ? m.hidden / m.n_heads : 0);
  m.intermediate = f.integer("intermediate");
  m.vocab = f.integer("vocab");
  m.n_layers = f.integer("n_layers");
  m.rms_eps = f.real("rms_eps", 1e-6);
  m.rope_theta = f.real("rope_theta", 10000.0);
  m.max_seq = f.integer("max_seq", 256);
  m.tie_embeddings = f.boolean("tie_embeddings", false);
  m.note = f.string("note", "");
  if (!f.ok) return std::move(f.error);
  return m;
}

ir::Result<ModelSpec> from_hf(const json& j, std::string_view origin) {
  Fields f{j, {}};
  auto reject = [&](const char* key, std::string_view why) {
    f.fail(key, fmt::format("{}: amk's Llama graph cannot express it", why));
    return ir::Result<ModelSpec>(std::move(f.error));
  };
  const std::string type = f.string("model_type", "llama");
  if (type != "llama") return reject("model_type", fmt::format("'{}' is not a Llama model", type));
  for (const char* moe :
       {"num_local_experts", "num_experts", "n_routed_experts", "moe_intermediate_size"})
    if (f.has(moe)) return reject(moe, "mixture-of-experts layers");
  for (const char* mla : {"kv_lora_rank", "q_lora_rank"})
    if (f.has(mla)) return reject(mla, "multi-head latent attention (MLA)");
  if (f.boolean("attention_bias", false))
    return reject("attention_bias", "attention projection biases");
  if (f.boolean("mlp_bias", false)) return reject("mlp_bias", "MLP biases");
  const std::string act = f.string("hidden_act", "silu");
  if (act != "silu") return reject("hidden_act", fmt::format("activation '{}' (only silu)", act));
  if (f.has("rope_scaling")) {
    const json& rs = j["rope_scaling"];
    std::string rt = "default";
    if (rs.is_object() && rs.contains("rope_type") && rs["rope_type"].is_string())
      rt = rs["rope_type"].get<std::string>();
    else if (rs.is_object() && rs.contains("type") && rs["type"].is_string())
      rt = rs["type"].get<std::string>();
    if (rt != "default" && rt != "llama")
      return reject("rope_scaling", fmt::format("RoPE scaling '{}' (only unscaled RoPE)", rt));
  }
  ModelSpec m;
  m.name = std::string(origin);
  m.source = "_HFModel";
  m.keys = WeightKeys::HuggingFace;
  m.hidden = f.integer("hidden_size");
  m.n_heads = f.integer("num_attention_heads");
  m.n_kv_heads = f.integer("num_key_value_heads", m.n_heads);
  if (f.has("head_dim")) {
    m.head_dim = f.integer("head_dim");
  } else if (f.ok && m.n_heads > 0 && m.hidden % m.n_heads != 0) {
    f.fail("head_dim", fmt::format("missing, and hidden_size {} is not a multiple of "
                                   "num_attention_heads {}",
                                   m.hidden, m.n_heads));
  } else if (m.n_heads > 0) {
    m.head_dim = m.hidden / m.n_heads;
  }
  m.intermediate = f.integer("intermediate_size");
  m.vocab = f.integer("vocab_size");
  m.n_layers = f.integer("num_hidden_layers");
  m.rms_eps = f.real("rms_norm_eps", 1e-6);
  m.rope_theta = f.real("rope_theta", 10000.0);
  m.max_seq = std::min(f.integer("max_position_embeddings", kHfMaxSeqCap), kHfMaxSeqCap);
  m.tie_embeddings = f.boolean("tie_word_embeddings", false);
  m.note = "from a Hugging Face config.json";
  if (!f.ok) return std::move(f.error);
  return m;
}

}  // namespace

ir::Status check_model(const ModelSpec& m) {
  auto bad = [](std::string why) { return ir::Status(ir::error("model.invalid", std::move(why))); };
  auto pos = [&](int64_t v, const char* what) -> std::string {
    return v > 0 ? "" : fmt::format("{} must be positive (got {})", what, v);
  };
  for (auto [v, what] : {std::pair{m.hidden, "hidden"},
                         {m.n_heads, "n_heads"},
                         {m.n_kv_heads, "n_kv_heads"},
                         {m.head_dim, "head_dim"},
                         {m.intermediate, "intermediate"},
                         {m.vocab, "vocab"},
                         {m.n_layers, "n_layers"},
                         {m.max_seq, "max_seq"}})
    if (auto e = pos(v, what); !e.empty()) return bad(e);
  if (m.head_dim % 2)
    return bad(fmt::format("head_dim must be even for RoPE (got {})", m.head_dim));
  if (m.n_heads % m.n_kv_heads)
    return bad(
        fmt::format("n_heads {} must be a multiple of n_kv_heads {}", m.n_heads, m.n_kv_heads));
  if (!(m.rms_eps > 0)) return bad("rms_eps must be positive");
  if (!(m.rope_theta > 0)) return bad("rope_theta must be positive");
  constexpr int64_t kMaxDim = int64_t{1} << 24;
  for (int64_t v : {m.hidden, m.q_dim(), m.intermediate, m.vocab, m.max_seq})
    if (v > kMaxDim)
      return bad(fmt::format("a dimension of {} exceeds amk's limit {}", v, kMaxDim));
  if (m.n_layers > 4096) return bad("n_layers exceeds amk's limit 4096");
  return {};
}

ir::Result<ModelSpec> parse_model(std::string_view text, std::string_view origin) {
  ir::Result<ir::JsonValue> doc = ir::parse_json_object(text, "a model spec");
  ir::Result<ModelSpec> m = [&]() -> ir::Result<ModelSpec> {
    if (!doc) return std::move(doc.diagnostics);
    const json& j = doc->json();
    const bool hf =
        j.contains("hidden_size") || j.contains("model_type") || j.contains("num_hidden_layers");
    ir::Result<ModelSpec> r = hf ? from_hf(j, origin) : from_spec(j, origin);
    if (!r) return r;
    if (ir::Status st = check_model(*r); !st) return std::move(st.diagnostics);
    ir::append(r.diagnostics, std::move(doc.diagnostics));
    return r;
  }();
  ir::set_file(m.diagnostics, origin);
  return m;
}

std::string write_model(const ModelSpec& m) {
  json j = json::object();
  j["name"] = m.name;
  j["source"] = m.source;
  j["weight_keys"] = m.keys == WeightKeys::Toy ? "toy" : "hf";
  j["hidden"] = m.hidden;
  j["n_heads"] = m.n_heads;
  j["n_kv_heads"] = m.n_kv_heads;
  j["head_dim"] = m.head_dim;
  j["intermediate"] = m.intermediate;
  j["vocab"] = m.vocab;
  j["n_layers"] = m.n_layers;
  j["rms_eps"] = m.rms_eps;
  j["rope_theta"] = m.rope_theta;
  j["max_seq"] = m.max_seq;
  j["tie_embeddings"] = m.tie_embeddings;
  j["note"] = m.note;
  return ir::dump_text(j, 2) + "\n";
}

ir::Result<ModelSpec> load_model(std::string_view name_or_path) {
  auto file = ir::read_builtin_or_file(name_or_path, amk_builtin_model_files(), "schedules",
                                       "model", "a model spec or a Hugging Face config.json");
  if (!file) return std::move(file.diagnostics);
  return parse_model(file->second, file->first);
}

std::vector<std::string> builtin_model_names() {
  return ir::builtin_names(amk_builtin_model_files());
}

std::string layer_weight_key(const ModelSpec& m, int64_t layer, std::string_view role) {
  const bool toy = m.keys == WeightKeys::Toy;
  std::string_view attn = toy ? "attn" : "self_attn";
  const std::string pre =
      toy ? fmt::format("layers.{}.", layer) : fmt::format("model.layers.{}.", layer);
  if (role == "input_norm") return pre + (toy ? "input_norm" : "input_layernorm.weight");
  if (role == "post_norm") return pre + (toy ? "post_norm" : "post_attention_layernorm.weight");
  if (role == "q" || role == "k" || role == "v" || role == "o")
    return fmt::format("{}{}.{}_proj.weight", pre, attn, role);
  return fmt::format("{}mlp.{}_proj.weight", pre, role);  // gate, up, down
}

std::string global_weight_key(const ModelSpec& m, std::string_view role) {
  const bool toy = m.keys == WeightKeys::Toy;
  if (role == "embed" || (role == "lm_head" && m.tie_embeddings))
    return toy ? "embed.weight" : "model.embed_tokens.weight";
  if (role == "final_norm") return toy ? "final_norm" : "model.norm.weight";
  return "lm_head.weight";
}

}  // namespace amk::lower
