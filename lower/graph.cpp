#include "lower/graph.h"

#include <fmt/format.h>

namespace amk::lower {

std::vector<Node> build_decoder_graph(const ModelSpec& m) {
  std::vector<Node> g;
  g.reserve(static_cast<size_t>(17 * m.n_layers + 3));
  const int64_t H = m.hidden, qd = m.q_dim(), kd = m.kv_dim(), I = m.intermediate;
  g.push_back({NodeOp::Embed,
               "embed",
               "embed",
               -1,
               {"token_id"},
               "h0",
               global_weight_key(m, "embed"),
               {m.vocab, H},
               0});
  std::string resid = "h0";
  for (int64_t L = 0; L < m.n_layers; ++L) {
    auto t = [&](const char* s) { return fmt::format("L{}.{}", L, s); };
    auto w = [&](const char* role) { return layer_weight_key(m, L, role); };
    auto add = [&](NodeOp op, const char* role, std::vector<std::string> in, std::string out,
                   std::string weight = {}, std::vector<int64_t> wshape = {}, int64_t heads = 0) {
      g.push_back({op, t(role), role, L, std::move(in), std::move(out), std::move(weight),
                   std::move(wshape), heads});
    };
    add(NodeOp::RmsNorm, "input_norm", {resid}, t("an"), w("input_norm"), {H});
    add(NodeOp::Linear, "q_proj", {t("an")}, t("q"), w("q"), {qd, H});
    add(NodeOp::Linear, "k_proj", {t("an")}, t("k"), w("k"), {kd, H});
    add(NodeOp::Linear, "v_proj", {t("an")}, t("v"), w("v"), {kd, H});
    add(NodeOp::Rope, "rope_q", {t("q"), "pos"}, t("qr"), {}, {}, m.n_heads);
    add(NodeOp::Rope, "rope_k", {t("k"), "pos"}, t("kr"), {}, {}, m.n_kv_heads);
    add(NodeOp::KvAppend, "k_append", {t("kr")}, t("kcache"), {}, {}, m.n_kv_heads);
    add(NodeOp::KvAppend, "v_append", {t("v")}, t("vcache"), {}, {}, m.n_kv_heads);
    add(NodeOp::Attention, "attention", {t("qr"), t("kcache"), t("vcache")}, t("attn"));
    add(NodeOp::Linear, "o_proj", {t("attn")}, t("o"), w("o"), {H, qd});
    add(NodeOp::Add, "attn_residual", {resid, t("o")}, t("h_attn"));
    add(NodeOp::RmsNorm, "post_norm", {t("h_attn")}, t("mn"), w("post_norm"), {H});
    add(NodeOp::Linear, "gate_proj", {t("mn")}, t("gate"), w("gate"), {I, H});
    add(NodeOp::Linear, "up_proj", {t("mn")}, t("up"), w("up"), {I, H});
    add(NodeOp::Swiglu, "swiglu", {t("gate"), t("up")}, t("act"));
    add(NodeOp::Linear, "down_proj", {t("act")}, t("d"), w("down"), {H, I});
    add(NodeOp::Add, "mlp_residual", {t("h_attn"), t("d")}, t("h_mlp"));
    resid = t("h_mlp");
  }
  g.push_back({NodeOp::RmsNorm,
               "final_norm",
               "final_norm",
               -1,
               {resid},
               "hf",
               global_weight_key(m, "final_norm"),
               {H},
               0});
  g.push_back({NodeOp::Linear,
               "lm_head",
               "lm_head",
               -1,
               {"hf"},
               "logits",
               global_weight_key(m, "lm_head"),
               {m.vocab, H},
               0});
  return g;
}

}  // namespace amk::lower
