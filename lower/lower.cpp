#include "lower/lower.h"

#include <chrono>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/json_io.h"
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

// A key for the tasks, buffers and dependencies tile, fuse and deps derive from the knobs: what
// the tiling comes to (configs that differ only in knobs it ignores share a structure) and the
// fusion groups.
std::string structure_key(Plan& p) {
  std::string key = tiling_key(p) + "|";
  for (const auto& group : p.knobs.fusion) key += fmt::format("{};", fmt::join(group, ","));
  return key;
}

// The state after tile, fuse and deps: what a (tiling, fusion) point determines. An entry is
// swapped into the plan for a run (the later passes leave it as it is) and back out after it; a
// miss overwrites the least recently used entry in place, so its storage is reused.
struct Structure {
  std::string key;  // empty: not filled
  uint64_t used = 0;
  uint64_t filled = 0;  // the run that filled it (tells refills apart)
  std::vector<ir::Buffer> buffers;
  std::vector<PlanTask> tasks;
  std::vector<std::string> group_notes, group_names;
  std::vector<uint32_t> dep_off, dep_list;

  void swap_with(Plan& p) {
    tasks.swap(p.tasks);
    group_notes.swap(p.group_notes);
    group_names.swap(p.group_names);
    dep_off.swap(p.dep_off);
    dep_list.swap(p.dep_list);
  }
};

// A warm lowerer keeps structures while their tasks total at most kCachedTasks (some 24
// Llama-3.2-1B structures, about 60 MB: the tilings of a search's last neighbourhoods, which the
// next ones revisit), and at least kMinStructures. A miss fills a new entry while the budget
// allows, else it overwrites the least recently used one.
constexpr size_t kMinStructures = 2, kMaxStructures = 32;
constexpr size_t kCachedTasks = 120'000;

// What assign and pages decided for a structure and the knobs they read, kept so that a config
// differing from an earlier one only in knobs a pass does not read (a search's neighbours: the
// page allocation, threads and smem leave the placement as it was) takes the decision again.
// `structure` is the Lowerer's (entry, Structure::filled) pair; {-1, 0}: not filled.
struct Placement {
  std::pair<ptrdiff_t, uint64_t> structure{-1, 0};
  uint64_t used = 0;
  Knobs::Sm sm = Knobs::Sm::None;
  std::vector<std::pair<int64_t, int64_t>> sm_map;
  int64_t depth = 0;
  std::vector<int64_t> sms;  // the decision: Plan::sm, order, pos and the log line
  std::vector<uint32_t> order, pos;
  std::string log;
  bool reads(const std::pair<ptrdiff_t, uint64_t>& st, const Knobs& k) const {
    return structure == st && sm == k.sm && sm_map == k.sm_map && depth == k.depth;
  }
};
struct PagePlan {
  std::pair<ptrdiff_t, uint64_t> structure{-1, 0};
  uint64_t used = 0;
  Knobs::Pages mode = Knobs::Pages::None;
  std::vector<uint32_t> order;  // the emission order they were allocated for
  ir::PageAllocation pages;     // the decision, and its log line
  std::string log;
};
constexpr size_t kDecisions = 16;  // kept per pass and lowerer
constexpr size_t kRefusals = 64;   // structures the fusion refused, kept per lowerer

// The entry of `memo` whose `same` holds (then `hit`), else the least recently used one.
template <class T, class Same>
T& recall(std::vector<T>& memo, uint64_t clock, bool& hit, Same same) {
  auto it = std::find_if(memo.begin(), memo.end(), same);
  hit = it != memo.end();
  if (!hit)
    it = std::min_element(memo.begin(), memo.end(),
                          [](const T& a, const T& b) { return a.used < b.used; });
  it->used = clock;
  return *it;
}

}  // namespace

struct Lowerer::Impl {
  Impl(const ModelSpec& model, const targets::TargetSpec& target, const LowerOptions& o, bool w)
      : m(model), t(target), opt(o), warm(w) {}
  const ModelSpec& m;
  const targets::TargetSpec& t;
  LowerOptions opt;
  bool warm;
  bool graph_built = false;           // p.graph
  std::vector<Structure> cache;       // up to kMaxStructures entries when warm, one when cold
  std::vector<Placement> placements;  // kDecisions entries when warm
  std::vector<PagePlan> page_plans;   // likewise
  uint64_t clock = 0;                 // run count: Structure::used
  Plan p;
  // What the program holds from earlier runs, as (entry, Structure::filled): the buffers of
  // `buffers_of`; the tasks, counters and waits `emitted` in `emitted_order`. {-1, 0}: nothing.
  std::pair<ptrdiff_t, uint64_t> buffers_of{-1, 0}, emitted{-1, 0};
  std::vector<uint32_t> emitted_order;
  int64_t meta_weight_bytes = -1;  // the meta below is for programs with these weight bytes
  std::string meta_config;         // and this config (its canonical text)
  ir::JsonValue meta;
  bool has_program = false;
  uint64_t hits = 0;
  // Structures the fusion refused, with its errors (kRefusals at most, oldest dropped first): a
  // refusal depends on the structure alone, so a config that comes back to one is refused at once
  // instead of being tiled again.
  std::vector<std::pair<std::string, ir::Diagnostics>> refused;
};

Lowerer::Lowerer(const ModelSpec& m, const targets::TargetSpec& t, const LowerOptions& opt,
                 bool warm)
    : impl_(new Impl(m, t, opt, warm)) {
  impl_->p.keep_tasks = warm;
  impl_->cache.reserve(warm ? kMaxStructures : 1);
  impl_->cache.resize(1);
  impl_->placements.resize(warm ? kDecisions : 0);
  impl_->page_plans.resize(warm ? kDecisions : 0);
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
  impl_->buffers_of = impl_->emitted = {-1, 0};
  ir::Program out = std::move(impl_->p.program);
  impl_->p.program = ir::Program{};  // whole for the next run (a moved-from one has no versions)
  return out;
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
  if (opt.batch < 1 || opt.batch > kMaxBatch)
    return failed({ir::error(
        "lower.option", fmt::format("batch must be in [1, {}] (got {})", kMaxBatch, opt.batch))});
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
  p.sm.clear();
  p.order.clear();
  p.pos.clear();
  if (!w.graph_built) step("graph", done([&] { p.graph = build_decoder_graph(m); }));
  w.graph_built = true;
  std::string key = structure_key(p);
  if (w.warm)
    for (const auto& [k, errors] : w.refused)
      if (k == key) {
        if (opt.log) r.log.push_back("  structure: refused before, as below");
        return failed(errors);
      }
  auto entry = std::find_if(w.cache.begin(), w.cache.end(),
                            [&](const Structure& s) { return !s.key.empty() && s.key == key; });
  const bool hit = w.warm && entry != w.cache.end();
  if (!hit) {  // an entry that holds no structure (unfilled, or its fill failed: a config the
               // fusion refuses), else a new one within the budget, else the least recently used
    entry = std::find_if(w.cache.begin(), w.cache.end(),
                         [](const Structure& s) { return s.key.empty(); });
    if (entry == w.cache.end()) {
      size_t kept = 0;
      for (const Structure& e : w.cache) kept += e.tasks.size();
      const size_t n = w.cache.size();
      if (n < kMaxStructures && (n < kMinStructures || kept + kept / n <= kCachedTasks)) {
        w.cache.emplace_back();
        entry = w.cache.end() - 1;
      } else {
        entry = std::min_element(
            w.cache.begin(), w.cache.end(),
            [](const Structure& a, const Structure& b) { return a.used < b.used; });
      }
    }
  }
  Structure& s = *entry;
  const std::pair<ptrdiff_t, uint64_t> id{entry - w.cache.begin(), s.filled};
  s.used = ++w.clock;
  s.swap_with(p);
  bool ok = true;
  if (hit) {
    ++w.hits;
    ok = step("structure", done([&] {  // an earlier run's
                if (w.buffers_of != id) p.program.buffers = s.buffers;
                w.buffers_of = id;
              }));
  } else {
    w.buffers_of = w.emitted = {-1, 0};
    s.key.clear();
    s.filled = w.clock;
    p.program.buffers.clear();
    p.group_notes.clear();
    p.group_names.clear();
    ok = step("tile", done([&] { tile(p); })) &&  //
         step("fuse", [&] { return fuse(p); }) &&
         step("deps", done([&] { derive_dependencies(p); }));
    if (!ok && w.warm) {
      if (w.refused.size() == kRefusals) w.refused.erase(w.refused.begin());
      w.refused.emplace_back(key, r.diagnostics);
    }
    if (ok && w.warm) {
      s.key = std::move(key);
      s.buffers = p.program.buffers;
      w.buffers_of = {id.first, s.filled};
    }
  }
  // Assign and pages, or what they decided before for this structure and the knobs they read.
  const bool recallable = w.warm && !opt.amk_compat && !opt.reference;
  const std::pair<ptrdiff_t, uint64_t> st{id.first, s.filled};
  ok = ok && step("assign", [&]() -> ir::Status {
         if (!recallable || p.knobs.sm == Knobs::Sm::RoundRobin) return assign_workers(p);
         bool same = false;
         Placement& d = recall(w.placements, w.clock, same,
                               [&](const Placement& e) { return e.reads(st, p.knobs); });
         if (same) {
           p.sm = d.sms;
           p.order = d.order;
           p.pos = d.pos;
           p.log.push_back(d.log);
           return {};
         }
         d.structure = {-1, 0};
         ir::Status status = assign_workers(p);
         if (!status) return status;
         d = {st,   w.clock, p.knobs.sm, p.knobs.sm_map, p.knobs.depth,
              p.sm, p.order, p.pos,      p.log.back()};
         return status;
       });
  ok = ok && step("pages", [&]() -> ir::Status {
         if (!recallable || p.knobs.pages == Knobs::Pages::None) return allocate_pages(p);
         bool same = false;
         PagePlan& d = recall(w.page_plans, w.clock, same, [&](const PagePlan& e) {
           return e.structure == st && e.mode == p.knobs.pages && e.order == p.order;
         });
         if (same) {
           p.program.pages = d.pages;
           p.log.push_back(d.log);
           return {};
         }
         d.structure = {-1, 0};
         ir::Status status = allocate_pages(p);
         if (!status) return status;
         d.structure = st;
         d.mode = p.knobs.pages;
         d.order = p.order;
         d.pages = *p.program.pages;
         d.log = p.log.back();
         return status;
       });
  p.tasks_emitted = ok && hit && w.emitted == id && w.emitted_order == p.order;
  w.emitted = {-1, 0};
  ok = ok && step("emit", [&] { return emit(p); });
  if (ok && w.warm) {
    w.emitted = {id.first, s.filled};
    w.emitted_order = p.order;
  }
  s.swap_with(p);  // the entry keeps the structure (emptied by a cold emit's moves)
  if (opt.log) r.log = p.log;
  if (!ok) return r;
  // AMK names a Python class in meta.model; amk names the model spec and the config's hash, so a
  // committed program says what produced it (--amk-compat keeps AMK's bytes).
  std::string config_text = opt.amk_compat ? std::string() : cfg ? ir::config_key(*cfg) : "auto";
  if (const int64_t bytes = p.program.total_weight_bytes();
      bytes != w.meta_weight_bytes || config_text != w.meta_config) {
    nlohmann::ordered_json meta = {{"model", opt.amk_compat ? m.source : m.name},
                                   {"gpu", t.record.name},
                                   {"regime", "decode"},
                                   {"pos", opt.pos},
                                   {"kv_len", opt.pos + 1},
                                   {"dtype", std::string(ir::name(opt.dtype))},
                                   {"n_layers", m.n_layers},
                                   {"weight_bytes", bytes}};
    if (opt.quant != Quant::None) {
      meta["quantized"] = true;
      meta["quant"] = std::string(name(opt.quant));
    }
    if (!opt.amk_compat) meta["config_hash"] = fmt::format("{:016x}", ir::config_hash(config_text));
    w.meta = ir::JsonValue(std::move(meta));
    w.meta_weight_bytes = bytes;
    w.meta_config = std::move(config_text);
  }
  p.program.meta = w.meta;
  w.has_program = true;
  r.seconds = std::chrono::duration<double>(clock::now() - t0).count();
  return r;
}

std::optional<ir::DType> parse_lower_dtype(std::string_view s) {
  const std::optional<ir::DType> d = ir::parse_dtype(s);
  if (d && (*d == ir::DType::F32 || *d == ir::DType::BF16 || *d == ir::DType::F16)) return d;
  return std::nullopt;
}

std::optional<Quant> parse_quant(std::string_view s) {
  if (s == "none") return Quant::None;
  if (s == "int8") return Quant::Int8;
  if (s == "int4") return Quant::Int4;
  return std::nullopt;
}

std::string_view name(Quant q) {
  return q == Quant::Int8 ? "int8" : q == Quant::Int4 ? "int4" : "none";
}

LowerResult lower(const ModelSpec& m, const targets::TargetSpec& t,
                  const std::optional<ir::ScheduleConfig>& cfg, const LowerOptions& opt) {
  Lowerer l(m, t, opt, /*warm=*/false);
  LowerResult r = l.run(cfg);
  if (!ir::has_errors(r.diagnostics)) r.value = l.take();
  return r;
}

}  // namespace amk::lower
