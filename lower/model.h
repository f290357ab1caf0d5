// Llama-family decoder specs (schedules/*.json or a Hugging Face config.json) and weight keys.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/result.h"

namespace amk::lower {

/// Which state-dict key scheme the weights use.
enum class WeightKeys : uint8_t { Toy, HuggingFace };

/// A decoder-only Llama-family model (AMK's ModelConfig plus naming).
struct ModelSpec {
  std::string name;    ///< "toy-1L", or the config file's stem
  std::string source;  ///< meta.model of lowered programs (AMK: "models.toy.ToyLlama", "_HFModel")
  WeightKeys keys = WeightKeys::HuggingFace;
  int64_t hidden = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0, intermediate = 0, vocab = 0,
          n_layers = 0;
  double rms_eps = 1e-6;
  double rope_theta = 10000.0;
  int64_t max_seq = 256;
  bool tie_embeddings = false;
  std::string note;
  /// n_heads * head_dim.
  int64_t q_dim() const { return n_heads * head_dim; }
  /// n_kv_heads * head_dim.
  int64_t kv_dim() const { return n_kv_heads * head_dim; }
  bool operator==(const ModelSpec&) const = default;
};

/// Checks AMK's ModelConfig.validate() rules and sizes (a `model.invalid` error when broken).
ir::Status check_model(const ModelSpec& m);
/// Parses an amk model spec or a Hugging Face Llama config.json (told apart by their keys);
/// diagnostics name `origin`, the offending key's pointer and what the graph cannot express.
ir::Result<ModelSpec> parse_model(std::string_view text, std::string_view origin);
/// The spec file text (schedules/*.json format); parse_model round-trips it.
std::string write_model(const ModelSpec& m);
/// A built-in model by name ("llama-3.2-1b"), or a spec / config.json file by path.
ir::Result<ModelSpec> load_model(std::string_view name_or_path);
/// Names of the built-in models (schedules/), sorted.
std::vector<std::string> builtin_model_names();

/// State-dict key of a per-layer weight; `role` is one of input_norm, q, k, v, o, post_norm,
/// gate, up, down.
std::string layer_weight_key(const ModelSpec& m, int64_t layer, std::string_view role);
/// State-dict key of a global weight; `role` is one of embed, final_norm, lm_head (tied: embed's).
std::string global_weight_key(const ModelSpec& m, std::string_view role);

}  // namespace amk::lower
