#include "targets/cost.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <utility>
#include <vector>

#include "ir/assert.h"
#include "ir/digraph.h"
#include "ir/graph.h"

namespace amk::targets {

namespace {

// AMK's task time in two parts: memory (exposed by the pipelining depth) and compute.
struct Parts {
  double mem_us = 0, compute_us = 0;
};

// What AMK's formula reads of a target and a depth, worked out once for all of a program's tasks.
struct Rates {
  double exposed, bw, tf;
  Rates(const ir::Target& tg, int64_t depth)
      : exposed(std::max(0.5, 1.0 / (1.0 + 0.6 * static_cast<double>(depth)))),
        bw(tg.hbm_bandwidth_gbs.as_double()),
        tf(tg.fp16_tflops.as_double()) {}
  std::array<double, 3> key() const { return {exposed, bw, tf}; }
};

Parts task_parts(const ir::TaskLoad& load, const Rates& r) {
  const double hbm = r.bw > 0 ? load.bytes / (r.bw * 1e3 * 0.80) : 0.0;
  return {hbm * r.exposed, r.tf > 0 ? load.flops / (r.tf * 1e6 * 0.70) : 0.0};
}

double finish(const Parts& q, ir::Op op) {
  return std::max(q.mem_us, q.compute_us) + 1.5 + (op == ir::Op::GEMV_TILE ? 0.05 : 0.0);
}

// The rates AMK's formula weighs p's tasks by on `tg`.
Rates rates_of(const ir::Program& p, const ir::Target& tg) {
  return Rates(tg, p.config ? p.config->depth() : 2);
}

// AMK's formula's task times into `t` (`in`: the walk's input of a program, whose loads and ops it
// reads, not the program's task records); their sum.
double amk_times(const Rates& rates, const WalkInput& in, std::vector<double>& t) {
  const size_t n = in.op.size();
  t.resize(n);
  double total = 0;
  for (size_t i = 0; i < n; ++i) {
    t[i] = finish(task_parts({in.bytes[i], in.flops[i]}, rates), in.op[i]);
    total += t[i];
  }
  return total;
}

}  // namespace

std::optional<double> Estimator::CriticalPath::of(const ir::Program& p, const ir::Graph& g,
                                                  const Times& t, bool same_tasks) {
  if (!same_tasks || !valid || times_version != t.version) {
    const ir::ScheduleGraph deps(p, g, ir::QueueEdges::None);
    length = deps.acyclic()
                 ? std::optional<double>((*ir::longest_lengths<1>(deps, {std::span(t.t)}))[0])
                 : std::nullopt;
    times_version = t.version;
    valid = true;
  }
  return length;
}

namespace {

// AMK's formula over the task times `t`, whose critical path (nullopt: the dependencies hold a
// cycle) is `critical`: its makespan and critical path into `r` (whose total_us is their sum).
void amk_paths(const ir::Program& p, const ir::Target& tg, const ir::Graph& g,
               const ir::ScheduleGraph* queues, const std::vector<double>& t,
               std::optional<double> critical, CostEstimate& r) {
  if (!critical) {
    r.cyclic = true;
    r.amk_makespan_us = r.total_us;
    return;
  }
  const std::span<const double> ct(t);
  r.critical_path_us = *critical;
  if (!r.sm_assigned) {
    const double sms = std::max(1.0, tg.num_sms.as_double());
    r.amk_makespan_us = std::max(r.critical_path_us, r.total_us / sms);
    return;
  }
  // SMs assigned: each SM's queue runs in list order, an unassigned task on SM 0 (AMK's loader).
  std::optional<ir::ScheduleGraph> own;
  const ir::ScheduleGraph& queued = placed_queues(p, g, queues, own);
  if (const auto len = ir::longest_lengths<1>(queued, {ct})) {
    r.amk_makespan_us = (*len)[0];
  } else {
    r.cyclic = true;
    r.amk_makespan_us = r.total_us;
  }
}

// Whether two walk inputs have the same program part: the counter slots and the per-task loads
// (the same for every placement of one program's tasks).
bool same_program_part(const WalkInput& a, const WalkInput& b) {
  return a.slots == b.slots && a.out == b.out && a.wait_off == b.wait_off && a.waits == b.waits &&
         a.bytes == b.bytes && a.flops == b.flops && a.streams == b.streams &&
         a.dequant == b.dequant && a.chain == b.chain && a.op == b.op;
}

// Whether two walk inputs have the same placement part (the rest: what a search's programs of
// one structure differ in), the fields that tell them apart first.
bool same_placement_part(const WalkInput& a, const WalkInput& b) {
  // Each field is in one of the two parts: a field added stops this compiling until it is.
  [[maybe_unused]] const auto& [bytes, flops, streams, dequant, chain, op, worker, order, wait_off,
                                waits, out, est, slots, acyclic] = a;
  return a.acyclic == b.acyclic && a.worker == b.worker && a.order == b.order && a.est == b.est;
}

}  // namespace

double streamed_weight_bytes(const ir::Program& p) {
  const auto nb = static_cast<int64_t>(p.buffers.size());
  auto weight = [&](int64_t b) {
    return b >= 0 && b < nb && p.buffers[static_cast<size_t>(b)].kind == ir::BufferKind::WEIGHT;
  };
  // The tables EMBED tasks gather from, with the bytes they gather (-1: read whole).
  std::vector<std::pair<int64_t, double>> tables;
  for (const ir::Task& t : p.tasks) {
    if (t.op != ir::Op::EMBED) continue;
    for (int64_t b : t.inputs) {
      if (!weight(b)) continue;
      auto it =
          std::find_if(tables.begin(), tables.end(), [&](const auto& e) { return e.first == b; });
      if (it == tables.end()) it = tables.insert(tables.end(), {b, 0.0});
      const ir::Buffer& table = p.buffers[static_cast<size_t>(b)];
      const int64_t out = t.outputs.empty() ? -1 : t.outputs.front();
      if (it->second < 0 || out < 0 || out >= nb || table.shape.size() < 2 ||
          table.shape.front() <= 0 || table.shape.back() <= 0) {
        it->second = -1;
        continue;
      }
      // Its rows: the output's elements over a row's; each row is the table's bytes over its rows.
      const double rows = static_cast<double>(p.buffers[static_cast<size_t>(out)].numel()) /
                          static_cast<double>(table.shape.back());
      it->second +=
          rows * static_cast<double>(table.nbytes()) / static_cast<double>(table.shape.front());
    }
  }
  // A table another task reads too is streamed whole: a tied lm_head, found first from the end
  // (the last op of a step), where the scan stops once every table is read whole.
  size_t gathered_only =
      std::count_if(tables.begin(), tables.end(), [](const auto& e) { return e.second >= 0; });
  for (auto t = p.tasks.rbegin(); t != p.tasks.rend() && gathered_only > 0; ++t)
    if (t->op != ir::Op::EMBED)
      for (int64_t b : t->inputs)
        for (auto& [id, gathered] : tables)
          if (id == b && gathered >= 0) {
            gathered = -1;
            --gathered_only;
          }
  auto total = static_cast<double>(p.total_weight_bytes());
  for (const auto& [id, gathered] : tables) {
    const auto whole = static_cast<double>(p.buffers[static_cast<size_t>(id)].nbytes());
    if (gathered >= 0 && gathered < whole) total -= whole - gathered;
  }
  return total;
}

double weight_floor_us(const ir::Program& p, const ir::Target& tg) {
  return tg.bandwidth_bound_us(streamed_weight_bytes(p));
}

double task_time_us(const ir::Program& p, const ir::Task& t, const ir::Target& tg, int64_t depth) {
  return finish(task_parts(ir::task_load(p, t), Rates(tg, depth)), t.op);
}

CostEstimate estimate(const ir::Program& p, const ir::Target& tg, const Runtime& rt) {
  return estimate(p, tg, rt, ir::Graph::build(p));
}

CostEstimate estimate(const ir::Program& p, const ir::Target& tg) {
  return estimate(p, tg, default_runtime(tg));
}

CostEstimate estimate(const ir::Program& p, const ir::Target& tg, const Runtime& rt,
                      const ir::Graph& g, const ir::ScheduleGraph* queues) {
  return Estimator()(p, tg, rt, g, queues);
}

// An estimate and what decides it: the walk's input and machine, AMK's task times, and what the
// formulas read of the target.
struct Estimator::Entry {
  WalkInput in;  // its placement part only (the program part is Estimator::program_'s)
  uint64_t program_version = 0;
  std::array<double, 3> rates{};  // AMK's times are those of its program part at these rates
  std::optional<Machine> machine;
  double floor_us = 0, sms = 0;
  uint64_t used = 0;
  CostEstimate result;
};

Estimator::Estimator() = default;
Estimator::~Estimator() = default;
Estimator::Estimator(Estimator&&) noexcept = default;
Estimator& Estimator::operator=(Estimator&&) noexcept = default;

CostEstimate Estimator::operator()(const ir::Program& p, const ir::Target& tg, const Runtime& rt,
                                   const ir::Graph& g, const ir::ScheduleGraph* queues,
                                   bool same_tasks) {
  AMK_ASSERT(g.num_tasks() == p.tasks.size(), "estimate: a graph of another program");
  CostEstimate r;
  r.runtime = rt.name;
  r.sm_assigned = p.sm_assigned();
  // Same tasks and buffers as the last call: the same loads and weights streamed.
  const bool reuse = same_tasks && called_ && program_.bytes.size() == p.tasks.size();
  called_ = true;
  if (!reuse) {
    streamed_bytes_ = streamed_weight_bytes(p);
    path_.valid = false;  // (an estimate recalled below would leave it another program's)
  }
  r.floor_us = tg.bandwidth_bound_us(streamed_bytes_);
  std::optional<ir::ScheduleGraph> own;  // the placed program's queues, built once for all
  if (r.sm_assigned) queues = &placed_queues(p, g, queues, own);
  // Reused, the program part (counter slots, loads) is the one in_ holds already: the last
  // call's, of the same tasks.
  fill_walk_input(in_, p, g, queues, /*keep_program_part=*/reuse);
  // A walk input is its program part and its placement part; program_ holds the last call's
  // program part, and its version tells the estimates kept which program part was theirs.
  if (!reuse && !same_program_part(program_, in_)) {
    program_.slots = in_.slots;
    program_.out = in_.out;
    program_.wait_off = in_.wait_off;
    program_.waits = in_.waits;
    program_.copy_loads(in_);
    ++program_version_;
  }
  // AMK's times: those of the program part at the rates, worked out once for both.
  const Rates rates = rates_of(p, tg);
  if (!times_.valid || times_.program_version != program_version_ || times_.rates != rates.key()) {
    times_.total = amk_times(rates, in_, times_.t);
    times_.program_version = program_version_;
    times_.rates = rates.key();
    times_.valid = true;
    ++times_.version;
  }
  r.total_us = times_.total;
  const Machine m(p.config ? &*p.config : nullptr, tg, rt);
  const double sms = tg.num_sms.as_double();
  // The walk's input holds the SM queues of AMK's loader, not those of another runtime's graph,
  // where a task may be in none.
  const bool recallable = !p.runtime || p.runtime->kind == ir::RuntimeKind::Amk;
  ++clock_;
  if (recallable)
    for (Entry& e : recent_)
      if (e.machine == m && e.floor_us == r.floor_us && e.sms == sms &&
          e.result.sm_assigned == r.sm_assigned && e.rates == times_.rates &&
          e.program_version == program_version_ && same_placement_part(e.in, in_)) {
        e.used = clock_;
        ++recalled_;
        r = e.result;
        r.runtime = rt.name;
        return r;
      }
  amk_paths(p, tg, g, queues, times_.t, path_.of(p, g, times_, reuse), r);
  r.bytes_in_flight = m.in_flight;
  r.worker_gbs = m.stream * 1e-3;
  const Walk w = sim_.run(in_, m, false, program_version_);
  r.bandwidth_us = w.bytes / m.hbm;
  if (!w.acyclic) {  // a deadlock has no schedule: the tasks one after another, as AMK's Σt
    r.cyclic = true;
    const TaskCoster cost(p, tg, rt, p.config ? &*p.config : nullptr);
    for (const ir::Task& t : p.tasks) r.queue_us += cost(t);
  } else {
    r.queue_us = w.makespan;
    r.breakdown = w.breakdown;
  }
  r.makespan_us = bounded_makespan(r.queue_us, w, m, r.floor_us);
  if (recallable) remember(m, sms, r);
  return r;
}

// Keeps the estimate just made, in place of the least recently used one when kRecall are kept
// (in_ is left holding that one's memory for its placement part).
void Estimator::remember(const Machine& m, double sms, const CostEstimate& r) {
  Entry* e = nullptr;
  if (recent_.size() < kRecall) {
    e = &recent_.emplace_back();
  } else {
    e = &*std::min_element(recent_.begin(), recent_.end(),
                           [](const Entry& a, const Entry& b) { return a.used < b.used; });
  }
  // The estimate's placement part moves in; the old one's memory is the next's.
  e->in.worker.swap(in_.worker);
  e->in.order.swap(in_.order);
  e->in.est.swap(in_.est);
  e->in.acyclic = in_.acyclic;
  e->program_version = program_version_;
  e->rates = times_.rates;
  e->machine = m;
  e->floor_us = r.floor_us;
  e->sms = sms;
  e->used = clock_;
  e->result = r;
}

TaskCoster::TaskCoster(const ir::Program& p, const ir::Target& tg, const Runtime& rt,
                       const ir::ScheduleConfig* knobs)
    : p_(p), m_(knobs, tg, rt) {}

double TaskCoster::operator()(const ir::Task& t) const {
  return (*this)(ir::task_load(p_, t));
}

double TaskCoster::operator()(const ir::TaskLoad& l) const {
  return m_.dispatch + m_.exec(l, 0.0, m_.workers) + m_.sync;
}

TaskTimes predicted_times(const ir::Program& p, const ir::Target& tg, const Runtime& rt,
                          const ir::Graph& g) {
  const Walk w =
      simulate(walk_input(p, g, nullptr), Machine(p.config ? &*p.config : nullptr, tg, rt), true);
  TaskTimes r;
  r.acyclic = w.acyclic;
  if (!w.acyclic) return r;
  r.start_us = w.ready;
  r.finish_us = w.finish;
  r.worker = w.worker;
  r.critical = w.path;
  return r;
}

}  // namespace amk::targets
