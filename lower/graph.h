// The model's op graph for one decode step (AMK's _build_decoder_graph): 17 nodes per layer + 3.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lower/model.h"

namespace amk::lower {

/// Graph ops (AMK's graph.py op strings).
enum class NodeOp : uint8_t { Embed, RmsNorm, Linear, Rope, KvAppend, Attention, Swiglu, Add };

/// A node: `name` is AMK's ("L0.q_proj", "final_norm"), `role` the name without the layer prefix.
struct Node {
  NodeOp op = NodeOp::Add;
  std::string name;
  std::string role;
  int64_t layer = -1;                 ///< -1 for embed, final_norm, lm_head
  std::vector<std::string> inputs;    ///< tensor names read ("token_id", "L0.an", ...)
  std::string output;                 ///< tensor written ("L0.q", "L0.kcache", ...)
  std::string weight;                 ///< state-dict key ("" when none)
  std::vector<int64_t> weight_shape;  ///< [N_out, K_in] for linear, [H] for norms, [V, H] for embed
  int64_t heads = 0;                  ///< rope: heads in the tensor; kv_append: kv heads
};

/// The decoder graph of `m` in AMK's node order.
std::vector<Node> build_decoder_graph(const ModelSpec& m);

}  // namespace amk::lower
