// MPK task_graph.json -> ir::Program (the file as construct_task_graph() reads it back).
#include <algorithm>
#include <array>
#include <functional>
#include <iterator>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "formats/formats.h"
#include "formats/id_index.h"
#include "formats/mpk.h"
#include "formats/sink.h"
#include "ir/checked.h"
#include "ir/json_cursor.h"
#include "ir/parallel.h"

namespace amk::formats {
namespace {

// A byte offset as elements of `et` (a 4-bit type has two per byte), or nullopt past int64.
std::optional<int64_t> element_offset(int64_t bytes, const detail::ElemType& et) {
  const std::optional<int64_t> whole = ir::checked_mul(bytes / et.bits, 8);
  if (!whole) return std::nullopt;
  return ir::checked_add(*whole, bytes % et.bits * 8 / et.bits);
}

using mpk::Event;
using mpk::Graph;
using mpk::Task;
using mpk::Tensor;

// The file as construct_task_graph() reads it back: each key's value with the type and range it
// reads it with, an unknown key a warning.
class Parser : public ir::JsonCursor {
 public:
  using JsonCursor::JsonCursor;

  // Takes what the reader of a piece of the tasks stored (ir/json_read_parallel.h).
  void adopt(Parser& piece) { store_.adopt(std::move(piece.store_)); }

  void graph(Graph& g) {
    static constexpr Field kFields[] = {{"all_tasks"}, {"all_events"}, {"first_tasks", false}};
    auto unknown = [&](std::string_view key) { this->unknown(key); };
    record(
        "an MPK task graph", "the task graph", nullptr, kFields,
        [&](size_t k) {
          if (k == 0) {
            records<Parser>(g.tasks, "all_tasks", [](Parser& p, Task& t) { p.task(t); });
          } else if (k == 1) {
            list(g.events, [&](Event& e) { event(e); });
          } else if (!null()) {
            int_list(g.first_tasks, 0, INT32_MAX);
          }
        },
        unknown);
  }
  // Gives `to` what the tasks read so far point into.
  void keep_store(detail::Blocks<Tensor>& to) { to.adopt(std::move(store_)); }

  void task(Task& t) {
    t.at = offset();
    // The required fields first, in the order their absence is reported.
    static constexpr Field kFields[] = {{"task_type"},         {"variant_id"},    {"trigger_event"},
                                        {"dependent_event"},   {"request_id"},    {"kv_idx"},
                                        {"merge_task_offset"}, {"expert_offset"}, {"task_offset"},
                                        {"inputs", false},     {"outputs", false}};
    auto unknown = [&](std::string_view key) { this->unknown(key); };
    record(
        "a task object", "a task", &task_keys_, kFields,
        [&](size_t k) {
          switch (k) {
            case 0:
              return int32(t.task_type);
            case 1:
              return (void)integer(t.variant_id, 0, UINT32_MAX);
            case 2:
              return (void)unsigned64(t.trigger_event);
            case 3:
              return (void)unsigned64(t.dependent_event);
            case 4:
              return int32(t.request_id);
            case 5:
              return int32(t.kv_idx);
            case 6:
              return int32(t.merge_task_offset);
            case 7:
              return int32(t.expert_offset);
            case 8:
              return int32(t.task_offset);
            case 9:
              return tensors(t.inputs, t.inputs_null, mpk::kMaxInputs, "MAX_INPUTS_PER_TASK");
            default:
              return tensors(t.outputs, t.outputs_null, mpk::kMaxOutputs, "MAX_OUTPUTS_PER_TASK");
          }
        },
        unknown);
  }

 private:
  ir::detail::KeyMemo task_keys_, tensor_keys_, event_keys_;
  std::vector<Tensor> scratch_;
  detail::Blocks<Tensor> store_;  // the tasks' tensors once read

  void unknown(std::string_view key) {
    warn("mpk.unknown-field",
         fmt::format("'{}' is not a field MPK reads (ignored)", std::string(key)), offset());
    skip();
  }
  // An int field that construct_task_graph reads with get<int>().
  void int32(int64_t& out) { (void)integer(out, INT32_MIN, INT32_MAX); }

  // The list, after those of the same key earlier in the task.
  void tensors(std::span<const Tensor>& out, bool& is_null, int cap, std::string_view cap_name) {
    if (null()) return;
    is_null = false;
    const size_t at = offset();
    scratch_.assign(out.begin(), out.end());  // the elements, then kept in store_
    list(scratch_, [&](Tensor& x) { tensor(x); });
    out = store_.add(std::span<const Tensor>(scratch_));
    if (out.size() > static_cast<size_t>(cap))
      error("mpk.limit",
            fmt::format("{} tensors, more than the runtime's {}={}", out.size(), cap_name, cap),
            at);
  }

  // False (the error reported) when the list or one of its values is not one MPK holds.
  bool extents(mpk::Extents& e, int64_t lo) {
    e.n = 0;
    return int_list_to(lo, INT32_MAX, [&](int64_t v) { e.push(static_cast<int32_t>(v)); });
  }

  // Whether the tensor's region in elements fits 64-bit arithmetic (its byte offset as elements
  // of its type, then its dims and strides).
  static bool region_fits(const Tensor& x, const detail::ElemType& et) {
    const std::optional<int64_t> first = element_offset(x.offset, et);
    if (!first) return false;
    std::array<int64_t, mpk::kMaxDims> dims{}, strides{};
    const size_t rank = x.dims.values().size();
    std::copy_n(x.dims.v.begin(), rank, dims.begin());
    std::copy_n(x.strides.v.begin(), rank, strides.begin());
    return detail::region_fits(static_cast<uint64_t>(*first), {dims.data(), rank},
                               {strides.data(), rank});
  }

  void tensor(Tensor& x) {
    const size_t at = offset();
    bool lists_ok = true;
    static constexpr Field kFields[] = {
        {"base_ptr"}, {"offset"}, {"data_type"}, {"dims"}, {"strides"}};
    auto unknown = [&](std::string_view key) { this->unknown(key); };
    const std::optional<uint64_t> seen = record(
        "a tensor object", "a tensor", &tensor_keys_, kFields,
        [&](size_t k) {
          switch (k) {
            case 0:
              if (raw_string(x.base_ptr))
                x.name_hash = std::hash<std::string_view>{}(
                    x.base_ptr.escaped ? std::string_view(x.base_ptr.value()) : x.base_ptr.raw);
              return;
            case 1:
              return (void)integer(x.offset, 0, INT64_MAX);
            case 2: {
              int64_t v = 0;
              if (integer(v, INT32_MIN, INT32_MAX)) x.data_type = static_cast<int32_t>(v);
              return;
            }
            case 3:
              lists_ok = extents(x.dims, 0) && lists_ok;
              return;
            default:
              lists_ok = extents(x.strides, INT32_MIN) && lists_ok;
              return;
          }
        },
        unknown);
    if (!seen || !lists_ok) return;  // a bad dims or strides value is the error to show
    bool shape_ok = false;
    if (x.dims.n != x.strides.n)
      error("mpk.tensor",
            fmt::format("dims has {} entries but strides has {}", x.dims.n, x.strides.n), at);
    else if (x.dims.n > static_cast<size_t>(mpk::kMaxDims))
      error("mpk.limit",
            fmt::format("{} dims, more than MAX_TENSOR_DIMS={}", x.dims.n, mpk::kMaxDims), at);
    else
      shape_ok = true;
    detail::ElemType et;
    if ((*seen >> 2 & 1u) && !mpk::elem_type(x.data_type, et))
      error("mpk.data-type", fmt::format("unknown data_type {}", x.data_type), at);
    else if (shape_ok && !region_fits(x, et))
      error(
          "mpk.tensor",
          fmt::format("offset {} with these dims and strides reaches past 2^63 elements", x.offset),
          at);
  }

  void event(Event& e) {
    static constexpr Field kFields[] = {
        {"event_type"}, {"num_triggers"}, {"first_task_id"}, {"last_task_id"}};
    auto unknown = [&](std::string_view key) { this->unknown(key); };
    record(
        "an event object", "an event", &event_keys_, kFields,
        [&](size_t k) {
          switch (k) {
            case 0:
              return int32(e.event_type);
            case 1:
              return (void)integer(e.num_triggers, 0, INT32_MAX);
            case 2:
              return (void)integer(e.first_task_id, 0, INT32_MAX);
            default:
              return (void)integer(e.last_task_id, 0, INT32_MAX);
          }
        },
        unknown);
  }
};

// Semantic checks and the program, reported against the parsed file's positions.
class Builder : public DiagnosticSink {
 public:
  Builder(std::string_view text, Graph& g, const ReadOptions& opt)
      : DiagnosticSink(text), g_(g), opt_(opt) {}

  ir::Diagnostics check() {
    const size_t nt = g_.tasks.size(), ne = g_.events.size();
    if (nt < 2 || g_.tasks[0].task_type != mpk::kTerminate ||
        g_.tasks[1].task_type != mpk::kBeginTaskGraph)
      report("mpk.layout",
             "MPK's layout starts with task 0 TERMINATE (0) and task 1 BEGIN_TASK_GRAPH (10)",
             "/all_tasks", nt > 0 ? g_.tasks[0].at : 0);
    if (ne < 2 || g_.events[0].event_type != mpk::kTermination ||
        g_.events[ne - 1].event_type != mpk::kEndOfTaskGraph)
      report("mpk.layout",
             "MPK's layout has event 0 TERMINATION (911) and the last event END_OF_TASK_GRAPH "
             "(910), which the schedulers are seeded with",
             "/all_events", ne > 0 ? g_.events[0].at : 0);
    for (size_t i = 0; i < ne; ++i) {
      const Event& e = g_.events[i];
      if (e.event_type < mpk::kEmpty ||
          (e.event_type > mpk::kLaunchDependent && e.event_type != mpk::kEndOfTaskGraph &&
           e.event_type != mpk::kTermination))
        report("mpk.event-type", fmt::format("unknown event_type {}", e.event_type),
               fmt::format("/all_events/{}/event_type", i), e.at);
      if (e.first_task_id > e.last_task_id || e.last_task_id > static_cast<int64_t>(nt))
        report("mpk.event-range",
               fmt::format("event {} covers tasks [{}, {}) but the graph has {} tasks", i,
                           e.first_task_id, e.last_task_id, nt),
               fmt::format("/all_events/{}", i), e.at);
    }
    gpu_ = gpu_of_first();
    for (size_t i = 0; i < nt; ++i) {
      event_ref(i, "trigger_event", g_.tasks[i].trigger_event);
      event_ref(i, "dependent_event", g_.tasks[i].dependent_event);
    }
    for (size_t k = 0; k < g_.first_tasks.size(); ++k)
      if (g_.first_tasks[k] >= static_cast<int64_t>(nt))
        report("mpk.task-ref", fmt::format("first task {} does not exist", g_.first_tasks[k]),
               fmt::format("/first_tasks/{}", k), 0);
    return take();
  }

  ir::Program build() {
    ir::Program p;
    p.meta.mut()["source_format"] = "mpk";
    ir::Runtime rt;
    rt.kind = ir::RuntimeKind::Mpk;
    rt.caps = opt_.launch.caps;
    rt.twaits = opt_.launch.twaits;  // not MPK's: the proof says so
    const int64_t sms = rt.given(ir::Cap::sms).value_or(opt_.num_sms > 0 ? opt_.num_sms : 132);
    const auto [dw, ds] = mpk_default_launch(sms);
    const int64_t workers = std::max<int64_t>(1, rt.given(ir::Cap::workers).value_or(dw));
    const int64_t schedulers = std::max<int64_t>(1, rt.given(ir::Cap::schedulers).value_or(ds));
    rt.set(ir::Cap::sms, {sms});
    rt.set(ir::Cap::workers, {workers});
    rt.set(ir::Cap::schedulers, {schedulers});
    // One counter per event; tasks that trigger no event count on one more.
    p.counters.reserve(g_.events.size() + 1);
    for (size_t i = 0; i < g_.events.size(); ++i) {
      const Event& e = g_.events[i];
      std::string note = "event " + std::to_string(i) + " (";
      note += event_name(e.event_type);
      note += ')';
      p.add_counter(std::move(note));
    }
    int64_t sink = -1;
    for (const Task& t : g_.tasks)
      if (t.trigger_event == mpk::kEventInvalid) {
        sink = p.add_counter("tasks that trigger no event");
        break;
      }
    const std::vector<int64_t> worker = mpk::placement(g_, workers, schedulers);
    // The tasks' own fields, and their tensor regions (inputs, outputs and tile params; buffers
    // and pages), are other members: they are filled side by side.
    p.tasks.resize(g_.tasks.size());
    rt.tasks.resize(g_.tasks.size());
    ir::run_parts(2, 2, [&](size_t part, size_t, size_t) {
      if (part == 0) {
        tasks(p, rt, worker, sink);
      } else {
        regions(p);
      }
    });
    p.runtime = std::move(rt);
    return p;
  }

  // Each task's label, counter, waits and worker, and its foreign identity.
  void tasks(ir::Program& p, ir::Runtime& rt, const std::vector<int64_t>& worker, int64_t sink) {
    const int64_t end_event = static_cast<int64_t>(g_.events.size()) - 1;
    for (size_t i = 0; i < g_.tasks.size(); ++i) {
      const Task& t = g_.tasks[i];
      ir::Task& task = p.tasks[i];
      const std::string_view tn = mpk::task_type_name(t.task_type);
      task.label = tn.empty() ? "task_type " + std::to_string(t.task_type) : std::string(tn);
      task.label += " v";
      task.label += std::to_string(t.variant_id);
      task.out_counter = t.trigger_event == mpk::kEventInvalid
                             ? sink
                             : static_cast<int64_t>(mpk::event_index(t.trigger_event));
      auto wait_on = [&](int64_t e) {
        const int64_t n = g_.events[static_cast<size_t>(e)].num_triggers;
        if (n <= 0 || e == task.out_counter) return;
        for (const ir::Wait& w : task.waits)
          if (w.counter == e) return;
        ir::Wait w;
        w.counter = e;
        w.threshold = n;  // num_triggers x iteration, iteration 1
        task.waits.push_back(w);
      };
      if (t.dependent_event != mpk::kEventInvalid)
        wait_on(static_cast<int64_t>(mpk::event_index(t.dependent_event)));
      if (i == 0 && end_event > 0) wait_on(end_event);  // TERMINATE: after the graph's end
      // A launched task starts once its launch event fired; one that waits on another event
      // follows it through that event's triggers already.
      if (launched_by_[i] >= 0 && task.waits.empty()) wait_on(launched_by_[i]);
      if (worker[i] >= 0) task.sm = worker[i];
      ir::ForeignTask& ft = rt.tasks[i];
      ft.id = i;
      ft.kind = static_cast<int32_t>(t.task_type);
      ft.variant = static_cast<int32_t>(t.variant_id);
    }
  }

  // Which launch event enqueues each task (-1: none).
  void launches() {
    launched_by_.assign(g_.tasks.size(), -1);
    for (size_t e = 0; e < g_.events.size(); ++e) {
      const Event& ev = g_.events[e];
      if (ev.event_type < mpk::kLaunchTasks || ev.event_type > mpk::kLaunchDependent) continue;
      for (int64_t t = ev.first_task_id; t < ev.last_task_id; ++t)
        if (launched_by_[static_cast<size_t>(t)] < 0)
          launched_by_[static_cast<size_t>(t)] = static_cast<int64_t>(e);
      if (ev.event_type != mpk::kLaunchDependent)
        warn("mpk.dynamic-placement",
             fmt::format("event {} launches tasks [{}, {}) on the workers of the scheduler that "
                         "receives it at run time: their queue order is not proved",
                         e, ev.first_task_id, ev.last_task_id),
             fmt::format("/all_events/{}", e), ev.at);
    }
  }

 private:
  Graph& g_;  // its tensors are let go once regions() took them
  const ReadOptions& opt_;
  std::vector<int64_t> launched_by_;
  uint64_t gpu_ = 0;  // the GPU of the graph's first local event id

  static std::string_view event_name(int64_t type) {
    switch (type) {
      case mpk::kEmpty:
        return "EMPTY";
      case mpk::kLaunchTasks:
        return "LAUNCH_TASKS";
      case mpk::kLaunchMassive:
        return "LAUNCH_MASSIVE_TASKS";
      case mpk::kLaunchDependent:
        return "LAUNCH_DEPENDENT_TASKS";
      case mpk::kEndOfTaskGraph:
        return "END_OF_TASK_GRAPH";
      case mpk::kTermination:
        return "TERMINATION";
      default:
        return "unknown";
    }
  }

  void event_ref(size_t task, std::string_view field, uint64_t id) {
    if (id == mpk::kEventInvalid) return;
    auto ptr = [&] { return fmt::format("/all_tasks/{}/{}", task, field); };
    const size_t at = g_.tasks[task].at;
    if (id & mpk::kNvshmemTag) {
      report("mpk.remote-event",
             fmt::format("{} {:#x} is an NVSHMEM (remote) event: amk checks one GPU's graph", field,
                         id),
             ptr(), at);
    } else if ((id >> 32) != gpu_) {
      report("mpk.event-ref",
             fmt::format("{} {:#x} names GPU {} but the graph's events belong to GPU {}", field, id,
                         id >> 32, gpu_),
             ptr(), at);
    } else if (mpk::event_index(id) >= g_.events.size()) {
      report("mpk.event-ref",
             fmt::format("{} {} does not exist ({} events)", field, mpk::event_index(id),
                         g_.events.size()),
             ptr(), at);
    }
  }
  uint64_t gpu_of_first() const {
    for (const Task& t : g_.tasks)
      for (uint64_t id : {t.trigger_event, t.dependent_event})
        if (id != mpk::kEventInvalid && !(id & mpk::kNvshmemTag)) return id >> 32;
    return 0;
  }

  // Tensor regions as buffers. The graph's tensors are let go once their accesses are taken, so
  // that the buffers and the tasks' lists reuse their memory (the tasks themselves are read
  // meanwhile by tasks()).
  void regions(ir::Program& p) {
    detail::RegionMap rm;
    // base_ptr -> tensor, numbered by first use: by the name's hash, then the name.
    detail::IdIndex ids;
    std::string names;               // the tensors' names, one after the other
    std::vector<size_t> name_at{0};  // tensor t's name is names[name_at[t], name_at[t + 1])
    auto tensor_of = [&](std::string_view name, const Tensor& x) {
      const uint32_t known = ids.find(x.name_hash, [&](uint32_t t) {
        return std::string_view(names).substr(name_at[t], name_at[t + 1] - name_at[t]) == name;
      });
      if (known != detail::IdIndex::kNone) return static_cast<int32_t>(known);
      detail::ElemType et;
      (void)mpk::elem_type(x.data_type, et);
      const int32_t id = rm.tensor(std::string(name), et);
      ids.add(x.name_hash, static_cast<uint32_t>(id));
      names += name;
      name_at.push_back(names.size());
      return id;
    };
    // Room for every tensor's access at its most dims (what is not used is never touched).
    const size_t n = g_.store.size<Tensor>();
    rm.reserve(n, 2 * mpk::kMaxDims * n);
    for (size_t i = 0; i < g_.tasks.size(); ++i) {
      Task& t = g_.tasks[i];
      for (bool write : {false, true})
        for (const Tensor& x : write ? t.outputs : t.inputs) {
          const std::string decoded = x.base_ptr.escaped ? x.base_ptr.value() : std::string();
          const std::string_view name = x.base_ptr.escaped ? decoded : x.base_ptr.raw;
          if (name == "nullptr" || name.empty()) continue;
          detail::ElemType et;
          (void)mpk::elem_type(x.data_type, et);
          std::array<int64_t, 2 * mpk::kMaxDims> ext{};
          const size_t rank = x.dims.values().size();
          std::copy_n(x.dims.v.begin(), rank, ext.begin());
          std::copy_n(x.strides.v.begin(), rank, ext.begin() + rank);
          rm.access(static_cast<uint32_t>(i), tensor_of(name, x), write,
                    element_offset(x.offset, et).value_or(0), {ext.data(), rank},
                    {ext.data() + rank, rank});
        }
    }
    g_.store = detail::Blocks<Tensor>();
    rm.build(p);
  }
};

}  // namespace

std::pair<int64_t, int64_t> mpk_default_launch(int64_t num_sms) {
  // mirage utils.get_configurations_from_gpu: workers by SM count, 4 x (SMs - workers) schedulers.
  int64_t w = 20;
  if (num_sms >= 160) {
    w = 144;
  } else if (num_sms >= 132) {
    w = 128;
  } else if (num_sms >= 108) {
    w = 96;
  } else if (num_sms >= 68) {
    w = 64;
  } else if (num_sms >= 40) {
    w = 30;
  }
  return {w, std::max<int64_t>(4, 4 * (num_sms - w))};
}

ir::Result<ir::Program> read_mpk(std::string_view text, const ReadOptions& opt) {
  Graph g;
  Parser parser(text);
  ir::Diagnostics d = parser.document("an MPK task graph", [&] { parser.graph(g); });
  parser.keep_store(g.store);  // however the read ended, g's tasks point into it
  if (!ir::has_errors(d)) {
    Builder b(text, g, opt);
    ir::append(d, b.check());
    if (!ir::has_errors(d)) {
      b.launches();
      ir::Program p = b.build();
      ir::append(d, b.take());
      ir::set_file(d, opt.origin);
      ir::Result<ir::Program> r(std::move(p));
      r.diagnostics = std::move(d);
      return r;
    }
  }
  ir::set_file(d, opt.origin);
  return d;
}

}  // namespace amk::formats
