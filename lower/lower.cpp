#include "lower/lower.h"

#include <chrono>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "lower/assign.h"
#include "lower/config.h"
#include "lower/deps.h"
#include "lower/emit.h"
#include "lower/fuse.h"
#include "lower/graph.h"
#include "lower/pages.h"
#include "lower/tile.h"

namespace amk::lower {

LowerResult lower(const ModelSpec& m, const targets::TargetSpec& t,
                  const std::optional<ir::ScheduleConfig>& cfg, const LowerOptions& opt) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  LowerResult r;
  auto failed = [&](ir::Diagnostics d) {
    ir::append(r.diagnostics, std::move(d));
    return r;
  };
  if (ir::Status st = check_model(m); !st) return failed(std::move(st.diagnostics));
  if (opt.batch < 1)
    return failed(
        {ir::error("lower.option", fmt::format("batch must be >= 1 (got {})", opt.batch))});
  if (opt.pos < 0 || opt.pos >= m.max_seq)
    return failed(
        {ir::error("lower.option", fmt::format("pos {} is outside the KV cache [0, {}) of model {}",
                                               opt.pos, m.max_seq, m.name))});
  if (opt.quant != Quant::None && opt.quant_group < 1)
    return failed({ir::error("lower.option", "the quantisation group must be >= 1")});
  Plan p;
  p.model = &m;
  p.target = &t;
  p.opt = opt;
  ir::Result<Knobs> knobs = parse_knobs(cfg, t);
  if (!knobs) return failed(std::move(knobs.diagnostics));
  p.knobs = std::move(*knobs);
  p.program.target = t.record;
  p.program.config = cfg;
  auto step = [&](const char* name, auto&& fn) {
    const auto s = clock::now();
    const size_t before = p.log.size();
    ir::Status st = fn();
    if (opt.log)
      p.log.insert(p.log.begin() + static_cast<std::ptrdiff_t>(before),
                   fmt::format("{:<12} {:>7.3f} ms  {} tasks", name,
                               std::chrono::duration<double, std::milli>(clock::now() - s).count(),
                               p.tasks.size()));
    ir::append(r.diagnostics, std::move(st.diagnostics));
    return !ir::has_errors(r.diagnostics);
  };
  auto done = [](auto f) {  // a pass that cannot fail
    return [f]() -> ir::Status {
      f();
      return {};
    };
  };
  const bool ok = step("graph", done([&] { p.graph = build_decoder_graph(m); })) &&
                  step("tile", done([&] { tile(p); })) &&  //
                  step("fuse", [&] { return fuse(p); }) &&
                  step("deps", done([&] { derive_dependencies(p); })) &&
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
  r.value = std::move(p.program);
  r.seconds = std::chrono::duration<double>(clock::now() - t0).count();
  return r;
}

}  // namespace amk::lower
