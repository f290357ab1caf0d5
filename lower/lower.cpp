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

namespace {

// A key for the tasks, buffers and dependencies tile, fuse and deps derive from the knobs.
std::string structure_key(const Knobs& k) {
  auto opt = [](const std::optional<int64_t>& v) { return v ? std::to_string(*v) : "-"; };
  std::string key = fmt::format("{}|{}|{}|{}|", opt(k.n_tile), opt(k.base_width),
                                opt(k.n_partitions), opt(k.kv_block));
  for (const auto& group : k.fusion) key += fmt::format("{};", fmt::join(group, ","));
  return key;
}

// The state after tile, fuse and deps: what a (tiling, fusion) point determines.
struct Structure {
  std::string key;
  std::vector<ir::Buffer> buffers;
  std::vector<PlanTask> tasks;
  std::vector<std::string> group_notes, group_names;
  std::vector<uint32_t> dep_off, dep_list;
};

constexpr size_t kStructures = 4;  // kept per lowerer (a neighbourhood's tilings)

}  // namespace

struct Lowerer::Impl {
  const ModelSpec& m;
  const targets::TargetSpec& t;
  LowerOptions opt;
  bool warm;
  std::vector<Node> graph;
  bool graph_built = false;
  std::vector<Structure> cache;  // most recent last
  Plan p;
  bool has_program = false;
  uint64_t hits = 0;
};

Lowerer::Lowerer(const ModelSpec& m, const targets::TargetSpec& t, const LowerOptions& opt,
                 bool warm)
    : impl_(new Impl{m, t, opt, warm, {}, false, {}, {}, false, 0}) {
  impl_->p.keep_tasks = warm;
}
Lowerer::~Lowerer() = default;
Lowerer::Lowerer(Lowerer&&) noexcept = default;
Lowerer& Lowerer::operator=(Lowerer&&) noexcept = default;

const ir::Program& Lowerer::program() const {
  AMK_ASSERT(impl_->has_program, "Lowerer::program() before a successful run()");
  return impl_->p.program;
}

ir::Program Lowerer::take() {
  AMK_ASSERT(impl_->has_program, "Lowerer::take() before a successful run()");
  impl_->has_program = false;
  return std::move(impl_->p.program);
}

uint64_t Lowerer::cache_hits() const {
  return impl_->hits;
}

LowerResult Lowerer::run(const std::optional<ir::ScheduleConfig>& cfg) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  Impl& w = *impl_;
  const ModelSpec& m = w.m;
  const targets::TargetSpec& t = w.t;
  const LowerOptions& opt = w.opt;
  w.has_program = false;
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
  Plan& p = w.p;
  p.model = &m;
  p.target = &t;
  p.opt = opt;
  p.log.clear();
  ir::Result<Knobs> knobs = parse_knobs(cfg, t);
  if (!knobs) return failed(std::move(knobs.diagnostics));
  p.knobs = std::move(*knobs);
  p.program.target = t.record;
  p.program.config = cfg;
  p.program.pages.reset();
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
  const std::string key = structure_key(p.knobs);
  auto hit = std::find_if(w.cache.begin(), w.cache.end(),
                          [&](const Structure& s) { return s.key == key; });
  bool ok = true;
  if (hit != w.cache.end()) {
    ++w.hits;
    ok = step("structure", done([&] {  // tile, fuse and deps of an earlier run
           p.program.buffers = hit->buffers;
           p.tasks = hit->tasks;
           p.group_notes = hit->group_notes;
           p.group_names = hit->group_names;
           p.dep_off = hit->dep_off;
           p.dep_list = hit->dep_list;
         }));
    std::rotate(hit, hit + 1, w.cache.end());  // most recent last
  } else {
    p.program.buffers.clear();
    p.tasks.clear();
    p.group_notes.clear();
    p.group_names.clear();
    ok = step("graph", done([&] {
           if (!w.graph_built) p.graph = build_decoder_graph(m);
           w.graph_built = true;
         })) &&
         step("tile", done([&] { tile(p); })) &&  //
         step("fuse", [&] { return fuse(p); }) &&
         step("deps", done([&] { derive_dependencies(p); }));
    if (ok && w.warm) {
      if (w.cache.size() == kStructures) w.cache.erase(w.cache.begin());
      w.cache.push_back({key, p.program.buffers, p.tasks, p.group_notes, p.group_names, p.dep_off,
                         p.dep_list});
    }
  }
  ok = ok && step("assign", [&] { return assign_workers(p); }) &&
       step("pages", [&] { return allocate_pages(p); }) &&
       step("emit", [&] { return emit(p); });
  if (opt.log) r.log = p.log;
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
  w.has_program = true;
  r.seconds = std::chrono::duration<double>(clock::now() - t0).count();
  return r;
}

LowerResult lower(const ModelSpec& m, const targets::TargetSpec& t,
                  const std::optional<ir::ScheduleConfig>& cfg, const LowerOptions& opt) {
  Lowerer l(m, t, opt, /*warm=*/false);
  LowerResult r = l.run(cfg);
  if (!ir::has_errors(r.diagnostics)) r.value = l.take();
  return r;
}

}  // namespace amk::lower
