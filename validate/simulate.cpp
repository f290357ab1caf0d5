#include "validate/simulate.h"

#include <algorithm>
#include <deque>
#include <queue>
#include <set>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "ir/csr.h"
#include "ir/opcodes.h"
#include "ir/rng.h"

namespace amk::validate {
namespace {

// Wait bookkeeping shared by both simulations: per task, the threshold needed on each distinct
// counter slot it waits on (the max when it waits twice), and each slot's start value.
struct Waits {
  std::vector<int64_t> need;  // parallel to g.wait_slots(t) (CSR by task)
  std::vector<uint32_t> off;
  std::vector<int64_t> init;              // per slot
  std::vector<int64_t> prev_sm, next_sm;  // per task: neighbours in its SM queue (-1: none)

  Waits(const ir::Program& p, const ir::Graph& g, bool sm_queues) {
    const uint32_t n = g.num_tasks();
    off.assign(n + 1, 0);
    for (uint32_t t = 0; t < n; ++t)
      off[t + 1] = off[t] + static_cast<uint32_t>(g.wait_slots(t).size());
    need.assign(off[n], 0);
    for (uint32_t t = 0; t < n; ++t) {
      auto slots = g.wait_slots(t);
      for (const ir::Wait& w : p.tasks[t].waits)
        for (size_t k = 0; k < slots.size(); ++k)
          if (g.slot_counter(slots[k]) == w.counter)
            need[off[t] + k] = std::max(need[off[t] + k], w.threshold);
    }
    init.assign(g.num_slots(), 0);
    for (uint32_t s = 0; s < g.num_slots(); ++s)
      if (g.slot_exists(s)) init[s] = p.counters[static_cast<size_t>(g.slot_counter(s))].init;
    prev_sm.assign(n, -1);
    next_sm.assign(n, -1);
    if (sm_queues) {
      std::unordered_map<int64_t, uint32_t> last;
      for (uint32_t t = 0; t < n; ++t) {
        if (!p.tasks[t].sm) continue;
        auto it = last.find(*p.tasks[t].sm);
        if (it != last.end()) {
          prev_sm[t] = it->second;
          next_sm[it->second] = t;
        }
        last[*p.tasks[t].sm] = t;
      }
    }
  }
  int64_t need_of(const ir::Graph& g, uint32_t t, uint32_t slot) const {
    auto slots = g.wait_slots(t);
    for (size_t k = 0; k < slots.size(); ++k)
      if (slots[k] == slot) return need[off[t] + k];
    return 0;
  }
};

std::vector<Stuck> stuck_tasks(const ir::Program& p, const ir::Graph& g, const Waits& w,
                               const std::vector<int64_t>& value,
                               const std::vector<uint8_t>& fired) {
  std::vector<Stuck> out;
  for (uint32_t t = 0; t < g.num_tasks(); ++t) {
    if (fired[t]) continue;
    Stuck s;
    s.task = t;
    auto slots = g.wait_slots(t);
    bool found = false;
    for (const ir::Wait& wt : p.tasks[t].waits) {
      for (size_t k = 0; k < slots.size() && !found; ++k) {
        if (g.slot_counter(slots[k]) != wt.counter) continue;
        if (value[slots[k]] < wt.threshold) {
          s.counter = wt.counter;
          s.threshold = wt.threshold;
          s.value = value[slots[k]];
          found = true;
        }
      }
      if (found) break;
    }
    if (!found && w.prev_sm[t] >= 0) {
      auto h = static_cast<uint32_t>(w.prev_sm[t]);
      while (w.prev_sm[h] >= 0 && !fired[static_cast<uint32_t>(w.prev_sm[h])])
        h = static_cast<uint32_t>(w.prev_sm[h]);
      s.sm_head = h;
    }
    out.push_back(s);
  }
  return out;
}

}  // namespace

CounterSim simulate_counters(const ir::Program& p, const ir::Graph& g, bool sm_queues) {
  const uint32_t n = g.num_tasks();
  Waits w(p, g, sm_queues);
  std::vector<int64_t> value = w.init;
  std::vector<uint32_t> unsat(n, 0);
  std::vector<uint64_t> ready_sweep(n, 0);
  std::vector<uint8_t> fired(n, 0);
  using Ev = std::pair<uint64_t, uint32_t>;  // (sweep, task): AMK fires in list order per sweep
  std::priority_queue<Ev, std::vector<Ev>, std::greater<>> heap;
  for (uint32_t t = 0; t < n; ++t) {
    auto slots = g.wait_slots(t);
    for (size_t k = 0; k < slots.size(); ++k) unsat[t] += value[slots[k]] < w.need[w.off[t] + k];
    unsat[t] += w.prev_sm[t] >= 0;
    if (!unsat[t]) heap.emplace(0, t);
  }
  CounterSim r;
  auto release = [&](uint32_t t, uint64_t sweep) {
    ready_sweep[t] = std::max(ready_sweep[t], sweep);
    if (--unsat[t] == 0) heap.emplace(ready_sweep[t], t);
  };
  while (!heap.empty()) {
    auto [sweep, q] = heap.top();
    heap.pop();
    fired[q] = 1;
    r.order.push_back(q);
    r.sweeps = std::max(r.sweeps, sweep + 1);
    uint32_t s = g.out_slot(q);
    ++value[s];
    for (uint32_t t : g.waiters(s))
      if (!fired[t] && value[s] == w.need_of(g, t, s)) release(t, q < t ? sweep : sweep + 1);
    if (w.next_sm[q] >= 0) release(static_cast<uint32_t>(w.next_sm[q]), sweep);
  }
  r.stuck = stuck_tasks(p, g, w, value, fired);
  return r;
}

namespace {

using Region = ir::TileRegion;

// A tile's region as the validator has it (a foreign graph's kernels included).
Region region_of(const ir::Program& p, const ir::Task& t) {
  return ir::tile_region(t.op, ir::ParamTable::of(t),
                         p.runtime && p.runtime->kind != ir::RuntimeKind::Amk);
}

// One adversary: the static facts of a program's buffers, then seeded runs that fire ready tasks
// in an order of the seed's choosing and check every step for races.
class Adversary {
 public:
  Adversary(const ir::Program& p, const ir::Graph& g, const AdversarialOptions& opt)
      : p_(p), g_(g), opt_(opt), n_(g.num_tasks()), nb_(p.buffers.size()), w_(p, g, opt.sm_queues) {
    ir::index_buffer_tasks(p, &rd_, &wr_, nullptr);
    buffer_facts();
    touches();
  }

  Adversarial run() {
    for (uint32_t si = 0; si < opt_.seeds; ++si) {
      const uint64_t seed = opt_.first_seed + si;
      const uint32_t done = run_seed(seed);
      ++out_.seeds_run;
      if (done < n_ && out_.stuck.empty()) out_.stuck = stuck_tasks(p_, g_, w_, value_, fired_);
      if (out_.races.size() >= opt_.max_races) break;
    }
    return std::move(out_);
  }

 private:
  bool valid(int64_t b) const { return b >= 0 && static_cast<size_t>(b) < nb_; }
  std::string label(uint32_t t) const {
    return fmt::format("task {} ({})", t, p_.tasks[t].display());
  }

  // Per buffer: transient (it must be written before it is read), written by a group of disjoint
  // tiles under one counter (they may run together), its page.
  void buffer_facts() {
    transient_.assign(nb_, 0);
    tile_group_.assign(nb_, 0);
    page_.assign(nb_, -1);
    for (size_t b = 0; b < nb_; ++b) {
      const ir::Buffer& buf = p_.buffers[b];
      auto ws = wr_.of(static_cast<int64_t>(b));
      transient_[b] =
          !ir::is_readonly(buf.kind) && !(buf.kind == ir::BufferKind::KV_CACHE && ws.empty());
      bool group = ws.size() > 1;
      for (uint32_t t : ws) group = group && p_.tasks[t].out_counter == p_.tasks[ws[0]].out_counter;
      if (group) {
        std::vector<Region> rs;
        for (uint32_t t : ws) rs.push_back(region_of(p_, p_.tasks[t]));
        for (size_t i = 0; i < rs.size() && group; ++i)
          for (size_t j = i + 1; j < rs.size() && group; ++j) group = !ir::overlaps(rs[i], rs[j]);
      }
      tile_group_[b] = group;
    }
    if (!p_.pages) return;
    occupants_.resize(p_.pages->pages.size());
    for (auto [b, pg] : p_.pages->buffer_to_page)
      if (valid(b) && pg >= 0 && static_cast<size_t>(pg) < occupants_.size()) {
        page_[static_cast<size_t>(b)] = pg;
        occupants_[static_cast<size_t>(pg)].push_back(b);
      }
  }

  // The distinct buffers each task touches, and each buffer's user count (for page liveness).
  void touches() {
    touch_off_.assign(n_ + 1, 0);
    users_total_.assign(nb_, 0);
    for (uint32_t t = 0; t < n_; ++t) {
      const size_t start = touch_.size();
      for (const auto* list : {&p_.tasks[t].inputs, &p_.tasks[t].outputs})
        for (int64_t b : *list)
          if (valid(b) && std::find(touch_.begin() + static_cast<std::ptrdiff_t>(start),
                                    touch_.end(), b) == touch_.end())
            touch_.push_back(b);
      touch_off_[t + 1] = static_cast<uint32_t>(touch_.size());
      for (size_t k = start; k < touch_.size(); ++k) ++users_total_[static_cast<size_t>(touch_[k])];
    }
  }

  void add_race(Race r) {
    if (out_.races.size() >= opt_.max_races) return;
    if (seen_.emplace(static_cast<int>(r.kind), r.task, r.buffer).second)
      out_.races.push_back(std::move(r));
  }

  void enable(uint32_t t) {
    enabled_[t] = 1;
    ready_.push_back(t);
    for (int64_t b : p_.tasks[t].inputs)
      if (valid(b)) ++enabled_r_[static_cast<size_t>(b)];
    for (int64_t b : p_.tasks[t].outputs)
      if (valid(b)) ++enabled_w_[static_cast<size_t>(b)];
  }

  // The next ready task: seed 0 the oldest (FIFO), seed 1 the newest (LIFO), others at random.
  uint32_t pick(uint64_t seed, ir::Rng& rng) {
    uint32_t t;
    if (seed == 0) {
      t = ready_.front();
      ready_.pop_front();
    } else if (seed == 1) {
      t = ready_.back();
      ready_.pop_back();
    } else {
      const size_t k = rng.below(ready_.size());
      t = ready_[k];
      ready_[k] = ready_.back();
      ready_.pop_back();
    }
    enabled_[t] = 0;
    for (int64_t b : p_.tasks[t].inputs)
      if (valid(b)) --enabled_r_[static_cast<size_t>(b)];
    for (int64_t b : p_.tasks[t].outputs)
      if (valid(b)) --enabled_w_[static_cast<size_t>(b)];
    return t;
  }

  // Runs one seed from the counters' initial values; returns the number of tasks that fired.
  uint32_t run_seed(uint64_t seed) {
    ir::Rng rng = ir::Rng::seeded(seed, 0xD1B54A32D192ED03ull);
    value_ = w_.init;
    unsat_.assign(n_, 0);
    fired_.assign(n_, 0);
    enabled_.assign(n_, 0);
    fired_writers_.assign(nb_, 0);
    users_fired_.assign(nb_, 0);
    enabled_r_.assign(nb_, 0);
    enabled_w_.assign(nb_, 0);
    live_.assign(occupants_.size(), 0);
    ready_.clear();
    for (uint32_t t = 0; t < n_; ++t) {
      auto slots = g_.wait_slots(t);
      for (size_t k = 0; k < slots.size(); ++k)
        unsat_[t] += value_[slots[k]] < w_.need[w_.off[t] + k];
      unsat_[t] += w_.prev_sm[t] >= 0;
      if (!unsat_[t]) enable(t);
    }
    uint32_t done = 0;
    while (!ready_.empty()) {
      const uint32_t t = pick(seed, rng);
      check_reads(seed, t);
      check_writes(seed, t);
      fire(t);
      ++done;
    }
    return done;
  }

  // Reads: every other writer of the buffer must have fired.
  void check_reads(uint64_t seed, uint32_t t) {
    for (int64_t b : p_.tasks[t].inputs) {
      if (!valid(b) || !transient_[static_cast<size_t>(b)]) continue;
      auto ws = wr_.of(b);
      const auto self = static_cast<uint32_t>(std::count(ws.begin(), ws.end(), t));
      if (fired_writers_[static_cast<size_t>(b)] + self >= ws.size()) continue;
      uint32_t other = t;
      for (uint32_t x : ws)
        if (x != t && !fired_[x]) other = x;
      add_race({Race::Kind::ReadBeforeWrite, seed, t, b, other,
                fmt::format("[seed {}] {} reads buffer #{} ('{}') before writer {} wrote it", seed,
                            label(t), b, p_.buffers[static_cast<size_t>(b)].name, label(other))});
    }
  }

  // Writes: no reader, and no overlapping writer, of the buffer may be ready at the same time, and
  // no other occupant of its page may be live.
  void check_writes(uint64_t seed, uint32_t t) {
    for (int64_t b : p_.tasks[t].outputs) {
      if (!valid(b)) continue;
      const auto bi = static_cast<size_t>(b);
      if (enabled_r_[bi] > 0) {
        uint32_t other = t;
        for (uint32_t x : rd_.of(b))
          if (enabled_[x] && x != t) other = x;
        if (other != t)
          add_race({Race::Kind::WriteWhileReaderReady, seed, t, b, other,
                    fmt::format("[seed {}] {} writes buffer #{} ('{}') while its reader {} is "
                                "ready to run",
                                seed, label(t), b, p_.buffers[bi].name, label(other))});
      }
      if (enabled_w_[bi] > 0 && !tile_group_[bi]) {
        const Region mine = region_of(p_, p_.tasks[t]);
        for (uint32_t x : wr_.of(b))
          if (enabled_[x] && x != t && ir::overlaps(mine, region_of(p_, p_.tasks[x]))) {
            add_race({Race::Kind::WriteWhileWriterReady, seed, t, b, x,
                      fmt::format("[seed {}] {} and {} both write buffer #{} ('{}') and are "
                                  "ready at the same time",
                                  seed, label(t), label(x), b, p_.buffers[bi].name)});
            break;
          }
      }
      if (page_[bi] >= 0) check_page(seed, t, b);
    }
  }

  bool live(size_t b) const { return users_fired_[b] > 0 && users_fired_[b] < users_total_[b]; }

  void check_page(uint64_t seed, uint32_t t, int64_t b) {
    const auto bi = static_cast<size_t>(b);
    const auto pg = static_cast<size_t>(page_[bi]);
    if (live_[pg] <= (live(bi) ? 1u : 0u)) return;
    int64_t other = -1;
    for (int64_t x : occupants_[pg])
      if (x != b && live(static_cast<size_t>(x))) other = x;
    add_race({Race::Kind::PageClobber, seed, t, b, other,
              fmt::format("[seed {}] {} writes buffer #{} ('{}') on page {} while buffer #{} on "
                          "the same page is still live",
                          seed, label(t), b, p_.buffers[bi].name, pg, other)});
  }

  // Task t completes: its writes, its buffers' liveness, its counter and the tasks that opens.
  void fire(uint32_t t) {
    for (int64_t b : p_.tasks[t].outputs)
      if (valid(b)) ++fired_writers_[static_cast<size_t>(b)];
    for (uint32_t k = touch_off_[t]; k < touch_off_[t + 1]; ++k) {
      const auto bi = static_cast<size_t>(touch_[k]);
      const bool was = live(bi);
      ++users_fired_[bi];
      const bool is = users_fired_[bi] < users_total_[bi];
      if (page_[bi] >= 0 && was != is) {
        const auto pg = static_cast<size_t>(page_[bi]);
        live_[pg] = is ? live_[pg] + 1 : live_[pg] - 1;
      }
    }
    fired_[t] = 1;
    const uint32_t s = g_.out_slot(t);
    ++value_[s];
    for (uint32_t c : g_.waiters(s))
      if (!fired_[c] && value_[s] == w_.need_of(g_, c, s) && --unsat_[c] == 0) enable(c);
    if (w_.next_sm[t] >= 0) {
      const auto c = static_cast<uint32_t>(w_.next_sm[t]);
      if (--unsat_[c] == 0) enable(c);
    }
  }

  const ir::Program& p_;
  const ir::Graph& g_;
  const AdversarialOptions& opt_;
  const uint32_t n_;
  const size_t nb_;
  Waits w_;
  ir::BufferTasks rd_, wr_;
  // Static facts.
  std::vector<uint8_t> transient_, tile_group_;
  std::vector<int64_t> page_;
  std::vector<uint32_t> users_total_, touch_off_;
  std::vector<int64_t> touch_;
  std::vector<std::vector<int64_t>> occupants_;
  // One run.
  std::vector<int64_t> value_;
  std::vector<uint32_t> unsat_, fired_writers_, users_fired_, enabled_r_, enabled_w_, live_;
  std::vector<uint8_t> fired_, enabled_;
  std::deque<uint32_t> ready_;
  // Over all runs.
  Adversarial out_;
  std::set<std::tuple<int, uint32_t, int64_t>> seen_;
};

}  // namespace

Adversarial simulate_adversarial(const ir::Program& p, const ir::Graph& g,
                                 const AdversarialOptions& opt) {
  return Adversary(p, g, opt).run();
}

}  // namespace amk::validate
