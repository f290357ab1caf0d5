#include "lower/lower.h"

#include "ir/cache.h"
#include "ir/choice.h"

#include <atomic>
#include <chrono>
#include <memory>

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

// A new Lowerer::tasks_stamp, unique among the process's lowerers.
uint64_t fresh_stamp() {
  static std::atomic<uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

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

  // The program this structure was emitted into last: its buffers, counters and tasks (held by
  // Plan::program while this entry is the staged one, see Lowerer::Impl::stage), which of them
  // are this structure's, and the emission order of the tasks. A run that comes back to the
  // structure in that order only moves the SMs (Plan::tasks_emitted).
  struct Emitted {
    std::vector<ir::Buffer> buffers;
    std::vector<ir::Counter> counters;
    std::vector<ir::Task> tasks;
    std::vector<uint32_t> order;
    bool has_buffers = false, has_tasks = false;
    // Lowerer::tasks_stamp of these tasks: set when they are emitted in full, kept while runs
    // only move their SMs, 0 while there are none.
    uint64_t stamp = 0;
    void swap_with(ir::Program& program) {
      buffers.swap(program.buffers);
      counters.swap(program.counters);
      tasks.swap(program.tasks);
    }
  } emitted;

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
// Of those, the kEmittedKept most recently used keep the program they were emitted into (some
// 2.3 MB per Llama-3.2-1B structure): as many as a search's evaluator keeps validators.
constexpr size_t kEmittedKept = 8;

// What assign and pages decided for a structure and the knobs they read, kept so that a config
// differing from an earlier one only in knobs a pass does not read (a search's neighbours: the
// page allocation and smem leave the placement as it was; the threads weigh its tasks) takes the
// decision again.
// `structure` is the Lowerer's (entry, Structure::filled) pair; {-1, 0}: not filled.
struct Placement {
  std::pair<ptrdiff_t, uint64_t> structure{-1, 0};
  uint64_t used = 0;
  Knobs::Sm sm = Knobs::Sm::None;
  std::vector<std::pair<int64_t, int64_t>> sm_map;
  int64_t depth = 0, threads = 0;
  std::vector<int64_t> sms;  // the decision: Plan::sm, order, pos and the log line
  std::vector<uint32_t> order, pos;
  std::string log;
  bool reads(const std::pair<ptrdiff_t, uint64_t>& st, const Knobs& k) const {
    return structure == st && sm == k.sm && sm_map == k.sm_map && depth == k.depth &&
           threads == k.threads;
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
constexpr size_t kDecisions = 64;  // kept per pass and lowerer
constexpr size_t kRefusals = 64;   // structures the fusion refused, kept per lowerer

class Passes;

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
  // The entry whose Structure::Emitted parts Plan::program holds (-1: none); every other entry
  // holds its own.
  ptrdiff_t staged = -1;
  int64_t meta_weight_bytes = -1;  // the meta below is for programs with these weight bytes
  std::string meta_config;         // and this config (its canonical text)
  ir::JsonValue meta;
  bool has_program = false;
  uint64_t hits = 0;
  uint64_t recalled = 0;  // runs whose tasks were as emitted before (Plan::tasks_emitted)
  // Structures the fusion refused, with its errors (kRefusals at most, oldest dropped first): a
  // refusal depends on the structure alone, so a config that comes back to one is refused at once
  // instead of being tiled again.
  std::vector<std::pair<std::string, ir::Diagnostics>> refused;

  // Points the plan at this lowerer's model, target and options (what every pass reads).
  void bind() {
    p.model = &m;
    p.target = &t;
    p.opt = opt;
  }

  // The fusion's errors when it refused `key` before (warm), else nullptr.
  const ir::Diagnostics* refusal(const std::string& key) const {
    if (warm)
      for (const auto& [k, errors] : refused)
        if (k == key) return &errors;
    return nullptr;
  }
  // The cache entry for `key` (`hit`: it holds that structure), else one to fill: an empty one,
  // a new one within the budget, or the least recently used.
  Structure& enter(const std::string& key, bool& hit);
  // Puts the program's buffers, counters and tasks back into the staged entry and takes `s`'s
  // (storage only, for an entry just refilled); past kEmittedKept entries holding a program, the
  // least recently used lets its go.
  void stage(Structure& s, bool hit);
  // tile -> fuse -> deps into the plan, or (hit) the structure `s` holds.
  bool structure(Structure& s, bool hit, std::string key, Passes& passes, LowerResult& r);
  // assign_workers, or the placement decided before for structure `st` and the knobs it reads.
  ir::Status assign(const std::pair<ptrdiff_t, uint64_t>& st, bool recallable);
  // The placement views of the last kDags structures placed (a search works out placements for
  // a few structures at a time; each view holds some 1 MB for Llama-3.2-1B).
  struct DagEntry {
    std::pair<ptrdiff_t, uint64_t> structure{-1, 0};
    uint64_t used = 0;
    std::shared_ptr<PlacementDag> dag;
  };
  static constexpr size_t kDags = 4;
  std::vector<DagEntry> dags;
  // The view of structure `st`: kept, or a new one in place of the least recently used.
  PlacementDag* dag_of(const std::pair<ptrdiff_t, uint64_t>& st);
  // allocate_pages, or the page plan decided before for `st`, the mode and the order.
  ir::Status pages(const std::pair<ptrdiff_t, uint64_t>& st, bool recallable);
  // meta: the model, target, position, dtype, weight bytes and config hash.
  void set_meta(const std::optional<ir::ScheduleConfig>& cfg);
};

Lowerer::Lowerer(const ModelSpec& m, const targets::TargetSpec& t, const LowerOptions& opt,
                 bool warm)
    : impl_(new Impl(m, t, opt, warm)) {
  impl_->p.keep_tasks = warm;
  impl_->cache.reserve(warm ? kMaxStructures : 1);
  impl_->cache.resize(1);
  impl_->placements.resize(warm ? kDecisions : 0);
  impl_->page_plans.resize(warm ? kDecisions : 0);
  impl_->dags.resize(warm ? Impl::kDags : 0);
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
  if (impl_->staged >= 0) {  // its parts leave with the program
    Structure::Emitted& e = impl_->cache[static_cast<size_t>(impl_->staged)].emitted;
    e.has_buffers = e.has_tasks = false;
  }
  ir::Program out = std::move(impl_->p.program);
  impl_->p.program = ir::Program{};  // whole for the next run (a moved-from one has no versions)
  return out;
}

uint64_t Lowerer::cache_hits() const {
  return impl_->hits;
}

const std::string& Lowerer::structure() const {
  AMK_ASSERT(impl_->has_program, "Lowerer::structure() before a successful run()");
  return impl_->cache[static_cast<size_t>(impl_->staged)].key;
}

uint64_t Lowerer::emission_order() const {
  AMK_ASSERT(impl_->has_program, "Lowerer::emission_order() before a successful run()");
  uint64_t h = 0;
  for (uint32_t v : impl_->p.order) {
    h = (h ^ v) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
  }
  return h;
}

uint64_t Lowerer::emits_recalled() const {
  return impl_->recalled;
}

uint64_t Lowerer::tasks_stamp() const {
  AMK_ASSERT(impl_->has_program, "Lowerer::tasks_stamp() before a successful run()");
  return impl_->warm ? impl_->cache[static_cast<size_t>(impl_->staged)].emitted.stamp : 0;
}

std::string Lowerer::structure_of(const ir::ScheduleConfig& cfg) {
  Impl& w = *impl_;
  ir::Result<Knobs> knobs = parse_knobs(cfg, w.t);
  if (!knobs) return {};
  Plan& p = w.p;
  if (!w.graph_built) p.graph = build_decoder_graph(w.m);
  w.graph_built = true;
  w.bind();
  std::swap(p.knobs, *knobs);  // the last run's knobs go back after
  std::string key = structure_key(p);
  std::swap(p.knobs, *knobs);
  return key;
}

namespace {

// The options a lowering takes, checked before any pass.
ir::Status check_options(const ModelSpec& m, const LowerOptions& opt) {
  if (ir::Status st = check_model(m); !st) return st;
  if (opt.batch < 1 || opt.batch > kMaxBatch)
    return ir::error("lower.option",
                     fmt::format("batch must be in [1, {}] (got {})", kMaxBatch, opt.batch));
  if (opt.pos < 0 || opt.pos >= m.max_seq)
    return ir::error("lower.option",
                     fmt::format("pos {} is outside the KV cache [0, {}) of model {}", opt.pos,
                                 m.max_seq, m.name));
  if (opt.quant != Quant::None && opt.quant_group < 1)
    return ir::error("lower.option", "the quantisation group must be >= 1");
  // An I4 weight [N, K] (--amk-compat) packs each row on whole bytes, which only an even K sizes.
  if (opt.quant == Quant::Int4 && opt.amk_compat && (m.hidden % 2 != 0 || m.intermediate % 2 != 0))
    return ir::error("lower.option",
                     fmt::format("int4 needs even rows: model {} has hidden {} and intermediate {}",
                                 m.name, m.hidden, m.intermediate));
  return {};
}

// Runs the passes of one lowering, each timed and logged (LowerOptions::log) and its diagnostics
// kept; a pass runs only while no error has been reported.
class Passes {
 public:
  Passes(Plan& p, LowerResult& r) : p_(p), r_(r) {}
  // Runs `fn` (a pass returning ir::Status) as pass `name`; false once an error was reported.
  template <class Fn>
  bool step(const char* name, Fn&& fn) {
    if (ir::has_errors(r_.diagnostics)) return false;
    const auto s = std::chrono::steady_clock::now();
    const size_t before = p_.log.size();
    ir::Status st = fn();
    if (p_.opt.log)
      p_.log.insert(p_.log.begin() + static_cast<std::ptrdiff_t>(before),
                    fmt::format("{:<12} {:>7.3f} ms  {} tasks", name,
                                std::chrono::duration<double, std::milli>(
                                    std::chrono::steady_clock::now() - s)
                                    .count(),
                                p_.tasks.size()));
    ir::append(r_.diagnostics, std::move(st.diagnostics));
    return !ir::has_errors(r_.diagnostics);
  }
  // As step(), for a pass that cannot fail.
  template <class Fn>
  bool always(const char* name, Fn&& fn) {
    return step(name, [&]() -> ir::Status {
      fn();
      return {};
    });
  }

 private:
  Plan& p_;
  LowerResult& r_;
};

}  // namespace

Structure& Lowerer::Impl::enter(const std::string& key, bool& hit) {
  auto held = std::find_if(cache.begin(), cache.end(),
                           [&](const Structure& s) { return !s.key.empty() && s.key == key; });
  hit = warm && held != cache.end();
  // Else an entry that holds no structure (unfilled, or its fill failed: a config the fusion
  // refuses), else a new one within the budget, else the least recently used.
  if (!hit)
    held =
        std::find_if(cache.begin(), cache.end(), [](const Structure& s) { return s.key.empty(); });
  Structure& entry = held != cache.end()
                         ? *held
                         : ir::entry_to_fill(cache, kMinStructures, kMaxStructures, kCachedTasks,
                                             [](const Structure& e) { return e.tasks.size(); });
  entry.used = ++clock;
  return entry;
}

void Lowerer::Impl::stage(Structure& s, bool hit) {
  const ptrdiff_t e = &s - cache.data();
  if (!hit) s.emitted.has_buffers = s.emitted.has_tasks = false;
  if (staged == e) return;
  if (staged >= 0) cache[static_cast<size_t>(staged)].emitted.swap_with(p.program);
  s.emitted.swap_with(p.program);
  staged = e;
  size_t holding = 1;  // s, after this run
  for (const Structure& x : cache)
    holding += &x != &s && (x.emitted.has_buffers || x.emitted.has_tasks);
  if (holding <= kEmittedKept) return;
  Structure* oldest = nullptr;
  for (Structure& x : cache)
    if (&x != &s && (x.emitted.has_buffers || x.emitted.has_tasks) &&
        (!oldest || x.used < oldest->used))
      oldest = &x;
  oldest->emitted = {};
}

bool Lowerer::Impl::structure(Structure& s, bool hit, std::string key, Passes& passes,
                              LowerResult& r) {
  if (hit) {
    ++hits;
    return passes.always("structure", [&] {  // an earlier run's
      if (!s.emitted.has_buffers) p.program.buffers = s.buffers;
      s.emitted.has_buffers = true;
    });
  }
  s.key.clear();
  s.filled = clock;
  p.program.buffers.clear();
  p.group_notes.clear();
  p.group_names.clear();
  const bool ok = passes.always("tile", [&] { tile(p); }) &&
                  passes.step("fuse", [&] { return fuse(p); }) &&
                  passes.always("deps", [&] { derive_dependencies(p); });
  if (!ok && warm) {
    if (refused.size() == kRefusals) refused.erase(refused.begin());
    refused.emplace_back(std::move(key), r.diagnostics);
  }
  if (ok && warm) {
    s.key = std::move(key);
    s.buffers = p.program.buffers;
    s.emitted.has_buffers = true;
  }
  return ok;
}

ir::Status Lowerer::Impl::assign(const std::pair<ptrdiff_t, uint64_t>& st, bool recallable) {
  if (!recallable || p.knobs.sm == Knobs::Sm::RoundRobin) return assign_workers(p);
  bool same = false;
  Placement& d =
      recall(placements, clock, same, [&](const Placement& e) { return e.reads(st, p.knobs); });
  if (same) {
    p.sm = d.sms;
    p.order = d.order;
    p.pos = d.pos;
    p.log.push_back(d.log);
    return {};
  }
  d.structure = {-1, 0};
  p.dag = dag_of(st);
  ir::Status status = assign_workers(p);
  p.dag = nullptr;
  if (!status) return status;
  d = {.structure = st,
       .used = clock,
       .sm = p.knobs.sm,
       .sm_map = p.knobs.sm_map,
       .depth = p.knobs.depth,
       .threads = p.knobs.threads,
       .sms = p.sm,
       .order = p.order,
       .pos = p.pos,
       .log = p.log.back()};
  return status;
}

PlacementDag* Lowerer::Impl::dag_of(const std::pair<ptrdiff_t, uint64_t>& st) {
  bool same = false;
  DagEntry& e = recall(dags, clock, same, [&](const DagEntry& x) { return x.structure == st; });
  if (!same) {
    e.structure = st;
    e.dag = new_placement_dag();
  }
  return e.dag.get();
}

ir::Status Lowerer::Impl::pages(const std::pair<ptrdiff_t, uint64_t>& st, bool recallable) {
  if (!recallable || p.knobs.pages == Knobs::Pages::None) return allocate_pages(p);
  bool same = false;
  PagePlan& d = recall(page_plans, clock, same, [&](const PagePlan& e) {
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
}

// AMK names a Python class in meta.model; amk names the model spec and the config's hash, so a
// committed program says what produced it (--amk-compat keeps AMK's bytes).
void Lowerer::Impl::set_meta(const std::optional<ir::ScheduleConfig>& cfg) {
  std::string config_text = opt.amk_compat ? std::string() : cfg ? ir::config_key(*cfg) : "auto";
  if (const int64_t bytes = p.program.total_weight_bytes();
      bytes != meta_weight_bytes || config_text != meta_config) {
    nlohmann::ordered_json j = {{"model", opt.amk_compat ? m.source : m.name},
                                {"gpu", t.record.name},
                                {"regime", "decode"},
                                {"pos", opt.pos},
                                {"kv_len", opt.pos + 1},
                                {"dtype", std::string(ir::name(opt.dtype))},
                                {"n_layers", m.n_layers},
                                {"weight_bytes", bytes}};
    if (opt.quant != Quant::None) {
      j["quantized"] = true;
      j["quant"] = std::string(ir::quant_name(opt.quant));
    }
    if (!opt.amk_compat) j["config_hash"] = fmt::format("{:016x}", ir::config_hash(config_text));
    meta = ir::JsonValue(std::move(j));
    meta_weight_bytes = bytes;
    meta_config = std::move(config_text);
  }
  p.program.meta = meta;
}

// The passes in order: graph (once per lowerer) -> tile -> fuse -> deps (or the structure an
// earlier run left for this tiling and fusion) -> assign -> pages (or an earlier decision for the
// knobs they read) -> emit.
LowerResult Lowerer::run(const std::optional<ir::ScheduleConfig>& cfg) {
  const auto t0 = std::chrono::steady_clock::now();
  Impl& w = *impl_;
  Plan& p = w.p;
  w.has_program = false;
  LowerResult r;
  ir::Result<Knobs> knobs = parse_knobs(cfg, w.t);
  if (ir::Status st = check_options(w.m, w.opt); !st || !knobs) {
    r.diagnostics = !st ? std::move(st.diagnostics) : std::move(knobs.diagnostics);
    return r;
  }
  w.bind();
  p.log.clear();
  p.knobs = std::move(*knobs);
  p.program.target = w.t.record;
  p.program.config = cfg;
  p.program.pages.reset();
  p.sm.clear();
  p.order.clear();
  p.pos.clear();
  Passes passes(p, r);
  if (!w.graph_built) passes.always("graph", [&] { p.graph = build_decoder_graph(w.m); });
  w.graph_built = true;
  std::string key = structure_key(p);
  if (const ir::Diagnostics* refusal = w.refusal(key)) {
    if (w.opt.log) r.log.push_back("  structure: refused before, as below");
    r.diagnostics = *refusal;
    return r;
  }
  bool hit = false;
  Structure& s = w.enter(key, hit);
  w.stage(s, hit);
  s.swap_with(p);
  bool ok = w.structure(s, hit, std::move(key), passes, r);
  const std::pair<ptrdiff_t, uint64_t> st{&s - w.cache.data(), s.filled};
  const bool recallable = w.warm && !w.opt.amk_compat && !w.opt.reference;
  ok = ok && passes.step("assign", [&] { return w.assign(st, recallable); });
  ok = ok && passes.step("pages", [&] { return w.pages(st, recallable); });
  Structure::Emitted& out = s.emitted;
  p.tasks_emitted = ok && hit && out.has_tasks && out.order == p.order;
  out.has_tasks = false;
  w.recalled += p.tasks_emitted;
  if (!p.tasks_emitted) out.stamp = 0;
  ok = ok && passes.step("emit", [&] { return emit(p); });
  if (ok && w.warm) {
    out.has_tasks = true;
    out.order = p.order;
    if (out.stamp == 0) out.stamp = fresh_stamp();
  }
  s.swap_with(p);  // the entry keeps the structure (emptied by a cold emit's moves)
  if (w.opt.log) r.log = p.log;
  if (!ok) return r;
  w.set_meta(cfg);
  w.has_program = true;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

ir::Result<ir::DType> lower_dtype_named(std::string_view what, std::string_view s) {
  static constexpr ir::Choice<ir::DType> kDTypes[] = {
      {"F32", ir::DType::F32}, {"BF16", ir::DType::BF16}, {"F16", ir::DType::F16}};
  return ir::choose<ir::DType>(what, s, kDTypes);
}

ir::Result<Quant> quant_named(std::string_view what, std::string_view s, bool none_word) {
  static constexpr ir::Choice<Quant> kQuants[] = {
      {"none", Quant::None}, {"int8", Quant::Int8}, {"int4", Quant::Int4}};
  return ir::choose<Quant>(what, s, std::span(kQuants).subspan(none_word ? 0 : 1));
}

LowerResult lower(const ModelSpec& m, const targets::TargetSpec& t,
                  const std::optional<ir::ScheduleConfig>& cfg, const LowerOptions& opt) {
  Lowerer l(m, t, opt, /*warm=*/false);
  LowerResult r = l.run(cfg);
  if (!ir::has_errors(r.diagnostics)) r.value = l.take();
  return r;
}

}  // namespace amk::lower
