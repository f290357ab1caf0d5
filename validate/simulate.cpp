#include "validate/simulate.h"

#include <algorithm>
#include <deque>
#include <queue>
#include <set>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

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

struct Region {
  bool whole = true;
  int64_t r0 = 0, r1 = -1, c0 = 0, c1 = 0;
};

// A GEMV/GEMM tile's output columns (and GEMM rows); in another runtime's graph, the rectangle
// a kernel's (NOP's) m_off/M_tile/n_off/N_tile give, as the validator's tile regions have it.
Region region_of(const ir::Program& p, const ir::Task& t) {
  Region r;
  const bool kernel = t.op == ir::Op::NOP && p.runtime && p.runtime->kind != ir::RuntimeKind::Amk;
  if (t.op != ir::Op::GEMV_TILE && t.op != ir::Op::GEMM_TILE && !kernel) return r;
  auto n_off = t.int_param("n_off"), n_tile = t.int_param("N_tile");
  if (!n_off || !n_tile || *n_off < 0 || *n_tile <= 0) return r;
  r.whole = false;
  r.c0 = *n_off;
  r.c1 = *n_off + *n_tile;
  auto m_off = t.int_param("m_off"), m_tile = t.int_param("M_tile");
  if ((t.op == ir::Op::GEMM_TILE || kernel) && m_off && m_tile && *m_off >= 0 && *m_tile > 0) {
    r.r0 = *m_off;
    r.r1 = *m_off + *m_tile;
  }
  return r;
}

bool overlaps(const Region& a, const Region& b) {
  if (a.whole || b.whole) return true;
  bool rows = a.r1 < 0 || b.r1 < 0 || (a.r0 < b.r1 && b.r0 < a.r1);
  return rows && a.c0 < b.c1 && b.c0 < a.c1;
}

struct BufferUse {
  std::vector<uint32_t> off, list;  // CSR: per buffer, tasks (duplicates kept)
  void build(size_t nb, const ir::Program& p, bool reads) {
    off.assign(nb + 1, 0);
    for (const ir::Task& t : p.tasks)
      for (int64_t b : reads ? t.inputs : t.outputs)
        if (b >= 0 && static_cast<size_t>(b) < nb) ++off[static_cast<size_t>(b) + 1];
    for (size_t i = 0; i < nb; ++i) off[i + 1] += off[i];
    list.resize(off[nb]);
    std::vector<uint32_t> fill(off.begin(), off.end() - 1);
    for (uint32_t id = 0; id < p.tasks.size(); ++id)
      for (int64_t b : reads ? p.tasks[id].inputs : p.tasks[id].outputs)
        if (b >= 0 && static_cast<size_t>(b) < nb) list[fill[static_cast<size_t>(b)]++] = id;
  }
  std::span<const uint32_t> of(int64_t b) const {
    auto i = static_cast<size_t>(b);
    return {list.data() + off[i], off[i + 1] - off[i]};
  }
};

}  // namespace

Adversarial simulate_adversarial(const ir::Program& p, const ir::Graph& g,
                                 const AdversarialOptions& opt) {
  const uint32_t n = g.num_tasks();
  const size_t nb = p.buffers.size();
  Waits w(p, g, opt.sm_queues);
  BufferUse rd, wr;
  rd.build(nb, p, true);
  wr.build(nb, p, false);
  auto valid = [&](int64_t b) { return b >= 0 && static_cast<size_t>(b) < nb; };

  // Static facts per buffer.
  std::vector<uint8_t> transient(nb, 0), tile_group(nb, 0);
  std::vector<int64_t> page(nb, -1);
  std::vector<uint32_t> users_total(nb, 0);
  for (size_t b = 0; b < nb; ++b) {
    const ir::Buffer& buf = p.buffers[b];
    transient[b] = !ir::is_readonly(buf.kind) && !(buf.kind == ir::BufferKind::KV_CACHE &&
                                                   wr.of(static_cast<int64_t>(b)).empty());
    auto ws = wr.of(static_cast<int64_t>(b));
    bool group = ws.size() > 1;
    for (uint32_t t : ws) group = group && p.tasks[t].out_counter == p.tasks[ws[0]].out_counter;
    if (group) {  // disjoint tiles under one counter may run together
      std::vector<Region> rs;
      for (uint32_t t : ws) rs.push_back(region_of(p, p.tasks[t]));
      for (size_t i = 0; i < rs.size() && group; ++i)
        for (size_t j = i + 1; j < rs.size() && group; ++j) group = !overlaps(rs[i], rs[j]);
    }
    tile_group[b] = group;
  }
  // Distinct buffers each task touches (for page liveness).
  std::vector<uint32_t> touch_off(n + 1, 0);
  std::vector<int64_t> touch;
  for (uint32_t t = 0; t < n; ++t) {
    size_t start = touch.size();
    for (const auto* list : {&p.tasks[t].inputs, &p.tasks[t].outputs})
      for (int64_t b : *list)
        if (valid(b) && std::find(touch.begin() + static_cast<std::ptrdiff_t>(start), touch.end(),
                                  b) == touch.end())
          touch.push_back(b);
    touch_off[t + 1] = static_cast<uint32_t>(touch.size());
    for (size_t k = start; k < touch.size(); ++k) ++users_total[static_cast<size_t>(touch[k])];
  }
  std::vector<std::vector<int64_t>> occupants;
  if (p.pages) {
    occupants.resize(p.pages->pages.size());
    for (auto [b, pg] : p.pages->buffer_to_page)
      if (valid(b) && pg >= 0 && static_cast<size_t>(pg) < occupants.size()) {
        page[static_cast<size_t>(b)] = pg;
        occupants[static_cast<size_t>(pg)].push_back(b);
      }
  }

  Adversarial out;
  std::set<std::tuple<int, uint32_t, int64_t>> seen;
  auto add_race = [&](Race r) {
    if (out.races.size() >= opt.max_races) return;
    if (seen.emplace(static_cast<int>(r.kind), r.task, r.buffer).second)
      out.races.push_back(std::move(r));
  };
  auto label = [&](uint32_t t) { return fmt::format("task {} ({})", t, p.tasks[t].display()); };

  std::vector<int64_t> value;
  std::vector<uint32_t> unsat, fired_writers, users_fired, enabled_r, enabled_w, live;
  std::vector<uint8_t> fired, enabled;
  for (uint32_t si = 0; si < opt.seeds; ++si) {
    const uint64_t seed = opt.first_seed + si;
    const int strategy = seed == 0 ? 0 : seed == 1 ? 1 : 2;  // FIFO, LIFO, random
    uint64_t rng = seed * 0x9E3779B97F4A7C15ull + 0xD1B54A32D192ED03ull;
    auto next = [&] {
      rng ^= rng << 13;
      rng ^= rng >> 7;
      rng ^= rng << 17;
      return rng;
    };
    value = w.init;
    unsat.assign(n, 0);
    fired.assign(n, 0);
    enabled.assign(n, 0);
    fired_writers.assign(nb, 0);
    users_fired.assign(nb, 0);
    enabled_r.assign(nb, 0);
    enabled_w.assign(nb, 0);
    live.assign(occupants.size(), 0);
    std::deque<uint32_t> ready;
    auto enable = [&](uint32_t t) {
      enabled[t] = 1;
      ready.push_back(t);
      for (int64_t b : p.tasks[t].inputs)
        if (valid(b)) ++enabled_r[static_cast<size_t>(b)];
      for (int64_t b : p.tasks[t].outputs)
        if (valid(b)) ++enabled_w[static_cast<size_t>(b)];
    };
    for (uint32_t t = 0; t < n; ++t) {
      auto slots = g.wait_slots(t);
      for (size_t k = 0; k < slots.size(); ++k) unsat[t] += value[slots[k]] < w.need[w.off[t] + k];
      unsat[t] += w.prev_sm[t] >= 0;
      if (!unsat[t]) enable(t);
    }
    uint32_t done = 0;
    while (!ready.empty()) {
      uint32_t t;
      if (strategy == 0) {
        t = ready.front();
        ready.pop_front();
      } else if (strategy == 1) {
        t = ready.back();
        ready.pop_back();
      } else {
        size_t k = next() % ready.size();
        t = ready[k];
        ready[k] = ready.back();
        ready.pop_back();
      }
      const ir::Task& task = p.tasks[t];
      enabled[t] = 0;
      for (int64_t b : task.inputs)
        if (valid(b)) --enabled_r[static_cast<size_t>(b)];
      for (int64_t b : task.outputs)
        if (valid(b)) --enabled_w[static_cast<size_t>(b)];
      // Reads: every other writer of the buffer must have fired.
      for (int64_t b : task.inputs) {
        if (!valid(b) || !transient[static_cast<size_t>(b)]) continue;
        auto ws = wr.of(b);
        uint32_t self = static_cast<uint32_t>(std::count(ws.begin(), ws.end(), t));
        if (fired_writers[static_cast<size_t>(b)] + self < ws.size()) {
          uint32_t other = t;
          for (uint32_t x : ws)
            if (x != t && !fired[x]) other = x;
          add_race(
              {Race::Kind::ReadBeforeWrite, seed, t, b, other,
               fmt::format("[seed {}] {} reads buffer #{} ('{}') before writer {} wrote it", seed,
                           label(t), b, p.buffers[static_cast<size_t>(b)].name, label(other))});
        }
      }
      // Writes: no reader, and no overlapping writer, of the buffer may be ready at the same time.
      for (int64_t b : task.outputs) {
        if (!valid(b)) continue;
        auto bi = static_cast<size_t>(b);
        if (enabled_r[bi] > 0) {
          uint32_t other = t;
          for (uint32_t x : rd.of(b))
            if (enabled[x] && x != t) other = x;
          if (other != t)
            add_race(
                {Race::Kind::WriteWhileReaderReady, seed, t, b, other,
                 fmt::format("[seed {}] {} writes buffer #{} ('{}') while its reader {} is ready "
                             "to run",
                             seed, label(t), b, p.buffers[bi].name, label(other))});
        }
        if (enabled_w[bi] > 0 && !tile_group[bi]) {
          Region mine = region_of(p, task);
          for (uint32_t x : wr.of(b))
            if (enabled[x] && x != t && overlaps(mine, region_of(p, p.tasks[x]))) {
              add_race(
                  {Race::Kind::WriteWhileWriterReady, seed, t, b, x,
                   fmt::format("[seed {}] {} and {} both write buffer #{} ('{}') and are ready "
                               "at the same time",
                               seed, label(t), label(x), b, p.buffers[bi].name)});
              break;
            }
        }
        if (page[bi] >= 0) {
          auto pg = static_cast<size_t>(page[bi]);
          bool self_live = users_fired[bi] > 0 && users_fired[bi] < users_total[bi];
          if (live[pg] > (self_live ? 1u : 0u)) {
            int64_t other = -1;
            for (int64_t x : occupants[pg]) {
              auto xi = static_cast<size_t>(x);
              if (x != b && users_fired[xi] > 0 && users_fired[xi] < users_total[xi]) other = x;
            }
            add_race(
                {Race::Kind::PageClobber, seed, t, b, other,
                 fmt::format("[seed {}] {} writes buffer #{} ('{}') on page {} while buffer #{} "
                             "on the same page is still live",
                             seed, label(t), b, p.buffers[bi].name, pg, other)});
          }
        }
      }
      for (int64_t b : task.outputs)
        if (valid(b)) ++fired_writers[static_cast<size_t>(b)];
      for (uint32_t k = touch_off[t]; k < touch_off[t + 1]; ++k) {
        auto bi = static_cast<size_t>(touch[k]);
        bool was = users_fired[bi] > 0 && users_fired[bi] < users_total[bi];
        ++users_fired[bi];
        bool is = users_fired[bi] < users_total[bi];
        if (page[bi] >= 0 && was != is) {
          auto pg = static_cast<size_t>(page[bi]);
          live[pg] = is ? live[pg] + 1 : live[pg] - 1;
        }
      }
      fired[t] = 1;
      ++done;
      uint32_t s = g.out_slot(t);
      ++value[s];
      for (uint32_t c : g.waiters(s))
        if (!fired[c] && value[s] == w.need_of(g, c, s) && --unsat[c] == 0) enable(c);
      if (w.next_sm[t] >= 0) {
        auto c = static_cast<uint32_t>(w.next_sm[t]);
        if (--unsat[c] == 0) enable(c);
      }
    }
    ++out.seeds_run;
    if (done < n && out.stuck.empty()) out.stuck = stuck_tasks(p, g, w, value, fired);
    if (out.races.size() >= opt.max_races) break;
  }
  return out;
}

}  // namespace amk::validate
