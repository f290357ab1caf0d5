// AMK step 2 (wait satisfiability and the shared-counter all-join rule), then amk's counter rules.
//
// Counter.init: AMK's validator ignores it, the reference VM starts counters at init and AMK's CUDA
// loader resets them to 0. A wait on a counter with init != 0 therefore either holds before its
// producers ran (no happens-before, a hidden race) or means different things on different
// runtimes. The sound rule amk enforces: a counter with init != 0 may exist but must not be waited
// on; and init must fit a uint32.
#include <fmt/format.h>

#include "validate/context.h"

namespace amk::validate {

// The rules this file checks, in emission order (rules() lists every family's).
constexpr Rule kWaitNoProducer{"wait.no-producer",
                               "a wait on a counter no task increments (deadlock)", true};
constexpr Rule kWaitUnsatisfiable{
    "wait.unsatisfiable", "a threshold above the counter's producer count (deadlock)", true};
constexpr Rule kWaitPartialJoin{"wait.partial-join",
                                "a partial wait on a shared counter (which-producer race)", true};
constexpr Rule kCounterInit{"counter.init",
                            "a counter with init != 0 is waited below init + #producers "
                            "(pre-satisfied or partial: no happens-before)",
                            false};
constexpr Rule kCounterRange{"counter.range", "a counter init outside uint32", false};

std::span<const Rule> wait_rules() {
  static constexpr Rule kList[] = {kWaitNoProducer, kWaitUnsatisfiable, kWaitPartialJoin,
                                   kCounterInit, kCounterRange};
  return kList;
}

namespace {

// The slot of a task's wait: a counter id in range is its own slot (Graph numbers them so); an id
// out of range has the virtual slot the task's wait slots list for it.
uint32_t wait_slot(const Context& c, size_t id, const ir::Wait& w) {
  if (static_cast<uint64_t>(w.counter) < c.p.counters.size()) [[likely]]
    return static_cast<uint32_t>(w.counter);
  uint32_t slot = 0;
  for (uint32_t s : c.g.wait_slots(static_cast<uint32_t>(id)))
    if (c.g.slot_counter(s) == w.counter) slot = s;
  return slot;
}

// Reports what check_task_waits finds, in the rules' order.
[[gnu::noinline]] void report_task_waits(Context& c, size_t id) {
  const ir::Program& p = c.p;
  {
    const ir::Task& t = p.tasks[id];
    auto ref = [&] { return task_ref(t, id); };
    for (size_t k = 0; k < t.waits.size(); ++k) {
      const ir::Wait& w = t.waits[k];
      const uint32_t slot = wait_slot(c, id, w);
      const size_t np = c.g.producers(slot).size();
      auto ptr = [&] { return ir::task_pointer(id, fmt::format("waits/{}", k)); };
      if (np == 0) {
        c.error(kWaitNoProducer,
                fmt::format("{} waits on counter {} with NO producer, unsatisfiable (deadlock)",
                            ref(), w.counter),
                ptr());
      } else if (w.threshold > static_cast<int64_t>(np)) {
        c.error(
            kWaitUnsatisfiable,
            fmt::format("{} threshold {} > {} producers of counter {}, unsatisfiable (deadlock)",
                        ref(), w.threshold, np, w.counter),
            ptr() + "/threshold");
      } else if (np > 1 && w.threshold != static_cast<int64_t>(np)) {
        std::vector<ir::Note> notes;
        for (uint32_t q : c.g.producers(slot)) {
          if (notes.size() == 4) break;
          notes.push_back(
              {fmt::format("producer {}", task_ref(p.tasks[q], q)), ir::task_pointer(q)});
        }
        c.error(kWaitPartialJoin,
                fmt::format("{} partial wait threshold {} on shared counter {} ({} producers), "
                            "ambiguous which-producer RACE; a shared counter must be an all-join "
                            "(threshold == {})",
                            ref(), w.threshold, w.counter, np, np),
                ptr() + "/threshold", std::move(notes));
      }
      if (c.counter_ok(w.counter) && p.counters[static_cast<size_t>(w.counter)].init != 0) {
        int64_t init = p.counters[static_cast<size_t>(w.counter)].init;
        c.error(kCounterInit,
                fmt::format("{} waits on counter {} whose init is {}: the wait can hold before "
                            "its producers ran (the reference VM starts at init, the CUDA loader "
                            "at 0), so it orders nothing; waited counters must start at 0",
                            ref(), w.counter, init),
                ptr(), {{"the counter", fmt::format("/counters/{}/init", w.counter)}});
      }
    }
  }
}

}  // namespace

void check_task_waits(Context& c, size_t id) {
  // Whether report_task_waits has anything to say (every condition it reports on), flags or-ed.
  const ir::Task& t = c.p.tasks[id];
  unsigned report = 0;
  for (const ir::Wait& w : t.waits) {
    const uint32_t slot = wait_slot(c, id, w);
    const auto np = static_cast<int64_t>(c.g.producers(slot).size());
    report |= (np == 0) | (w.threshold > np) | ((np > 1) & (w.threshold != np)) |
              (c.counter_ok(w.counter) && c.p.counters[slot].init != 0);
  }
  if (report || !c.s.screens) report_task_waits(c, id);
}

void check_counters(Context& c) {
  const ir::Program& p = c.p;
  for (size_t k = 0; k < p.counters.size(); ++k) {
    int64_t init = p.counters[k].init;
    if (init < 0 || init > 0xFFFFFFFFll)
      c.error(kCounterRange,
              fmt::format("counter {} init {} does not fit a uint32 counter", k, init),
              fmt::format("/counters/{}/init", k));
  }
}

}  // namespace amk::validate
