#include "lower/lower.h"

#include <chrono>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "lower/assign.h"
#include "lower/config.h"
#include "lower/emit.h"
#include "lower/fuse.h"
#include "lower/graph.h"
#include "lower/pages.h"
#include "lower/tensor_map.h"
#include "lower/tile.h"

namespace amk::lower {

LowerResult lower(const ModelSpec& m, const targets::TargetSpec& t,
                  const std::optional<ir::ScheduleConfig>& cfg, const LowerOptions& opt) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  LowerResult r;
  if (std::string e = check_model(m); !e.empty()) {
    r.error = fmt::format("model {}: {}", m.name, e);
    return r;
  }
  if (opt.batch < 1 || opt.pos < 0 || opt.pos >= m.max_seq) {
    r.error = opt.batch < 1 ? fmt::format("batch must be >= 1 (got {})", opt.batch)
                            : fmt::format("pos {} is outside the KV cache [0, {}) of model {}",
                                          opt.pos, m.max_seq, m.name);
    return r;
  }
  if (opt.quant != Quant::None && opt.quant_group < 1) {
    r.error = "the quantisation group must be >= 1";
    return r;
  }
  Plan p;
  p.model = &m;
  p.target = &t;
  p.opt = opt;
  auto knobs = parse_knobs(cfg, t, r.error);
  if (!knobs) return r;
  p.knobs = std::move(*knobs);
  p.program.target = t.record;
  p.program.config = cfg;
  auto step = [&](const char* name, auto&& fn) {
    const auto s = clock::now();
    const size_t before = p.log.size();
    std::string err = fn();
    if (opt.log)
      p.log.insert(p.log.begin() + static_cast<std::ptrdiff_t>(before),
                   fmt::format("{:<12} {:>7.3f} ms  {} tasks", name,
                               std::chrono::duration<double, std::milli>(clock::now() - s).count(),
                               p.tasks.size()));
    if (!err.empty()) r.error = std::move(err);
    return r.error.empty();
  };
  const bool ok = step("graph",
                       [&] {
                         p.graph = build_decoder_graph(m);
                         return std::string();
                       }) &&
                  step("tile",
                       [&] {
                         tile(p);
                         return std::string();
                       }) &&
                  step("fuse", [&] { return fuse(p); }) &&
                  step("deps",
                       [&] {
                         derive_dependencies(p);
                         return std::string();
                       }) &&
                  step("assign", [&] { return assign_workers(p); }) &&
                  step("pages", [&] { return allocate_pages(p); }) &&
                  step("emit", [&] { return emit(p); });
  if (opt.log) r.log = std::move(p.log);
  if (!ok) return r;
  nlohmann::ordered_json meta = {
      {"model", m.source},      {"gpu", t.record.name},
      {"regime", "decode"},     {"pos", opt.pos},
      {"kv_len", opt.pos + 1},  {"dtype", std::string(ir::name(opt.dtype))},
      {"n_layers", m.n_layers}, {"weight_bytes", p.program.total_weight_bytes()}};
  if (opt.quant != Quant::None) {
    meta["quantized"] = true;
    meta["quant"] = opt.quant == Quant::Int8 ? "int8" : "int4";
  }
  p.program.meta = ir::JsonValue(std::move(meta));
  r.program = std::move(p.program);
  r.seconds = std::chrono::duration<double>(clock::now() - t0).count();
  return r;
}

}  // namespace amk::lower
