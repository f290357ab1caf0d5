// MPK task_graph.json as print_task_graph() writes it (nlohmann's dump(2): keys sorted, empty
// tensor lists null, the task metadata union's five views of one 8-byte payload), and the MPK
// graph of an amk program.
#include <algorithm>
#include <cstdlib>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "formats/formats.h"
#include "formats/mpk.h"
#include "ir/graph.h"
#include "ir/pyjson.h"

namespace amk::formats {
namespace mpk {
namespace {

nlohmann::json tensor_json(const Tensor& x) {
  nlohmann::json j;
  j["base_ptr"] = x.base_ptr.raw;
  j["offset"] = x.offset;
  j["data_type"] = x.data_type;
  j["dims"] = std::vector<int64_t>(x.dims.values().begin(), x.dims.values().end());
  j["strides"] = std::vector<int64_t>(x.strides.values().begin(), x.strides.values().end());
  return j;
}

}  // namespace

// amk opcodes as MPK's task types (the nearest kernel MPK has).
int64_t task_type_of(ir::Op op) {
  switch (op) {
    case ir::Op::EMBED:
      return 101;
    case ir::Op::RMSNORM:
    case ir::Op::LAYERNORM:
      return 119;
    case ir::Op::GEMV_TILE:
    case ir::Op::GEMM_TILE:
      return 120;
    case ir::Op::ATTENTION_TILE:
      return 116;
    case ir::Op::ATTENTION_COMBINE:
      return 117;
    case ir::Op::SILU_MUL:
      return 118;
    case ir::Op::SAMPLE_ARGMAX:
      return 109;
    case ir::Op::ALLREDUCE_SHARD:
      return 107;
    default:
      return 121;  // TASK_IDENTITY
  }
}

void set_metadata(Task& t, int16_t request_id, uint16_t kv_idx, int32_t merge_task_offset) {
  // One 8-byte union: {int16 request_id, uint16 kv_idx, int32 merge_task_offset}, read as int32
  // expert_offset and task_offset from its first four bytes.
  t.request_id = request_id;
  t.kv_idx = kv_idx;
  t.merge_task_offset = merge_task_offset;
  const auto low = static_cast<uint32_t>(static_cast<uint16_t>(request_id)) |
                   static_cast<uint32_t>(kv_idx) << 16;
  t.expert_offset = t.task_offset = static_cast<int32_t>(low);
}

std::string write(const Graph& g) {
  nlohmann::json j;
  nlohmann::json events = nlohmann::json::array();
  for (const Event& e : g.events) {
    nlohmann::json x;
    x["event_type"] = e.event_type;
    x["num_triggers"] = e.num_triggers;
    x["first_task_id"] = e.first_task_id;
    x["last_task_id"] = e.last_task_id;
    events.push_back(std::move(x));
  }
  nlohmann::json tasks = nlohmann::json::array();
  for (const Task& t : g.tasks) {
    nlohmann::json x;
    x["task_type"] = t.task_type;
    x["variant_id"] = t.variant_id;
    for (const Tensor& in : t.inputs) x["inputs"].push_back(tensor_json(in));
    for (const Tensor& out : t.outputs) x["outputs"].push_back(tensor_json(out));
    if (t.inputs.empty()) x["inputs"] = nullptr;
    if (t.outputs.empty()) x["outputs"] = nullptr;
    x["trigger_event"] = t.trigger_event;
    x["dependent_event"] = t.dependent_event;
    x["request_id"] = t.request_id;
    x["expert_offset"] = t.expert_offset;
    x["kv_idx"] = t.kv_idx;
    x["merge_task_offset"] = t.merge_task_offset;
    x["task_offset"] = t.task_offset;
    tasks.push_back(std::move(x));
  }
  j["all_tasks"] = std::move(tasks);
  j["all_events"] = std::move(events);
  j["first_tasks"] = g.first_tasks;
  return j.dump(2);
}

}  // namespace mpk

namespace {

// A buffer access of a task as MPK's tensor description (offset in bytes); false when a dim or
// stride is past the int that MPK reads it as.
bool describe(const ir::Program& p, const ir::Task& t, int64_t b, bool output, mpk::Tensor& x) {
  const ir::Buffer& buf = p.buffers[static_cast<size_t>(b)];
  const detail::Region r = detail::region_of(p, t, b, output, mpk::kMaxDims);
  x.base_ptr.raw = buf.name;
  x.data_type = static_cast<int32_t>(mpk::data_type_code(buf.dtype));
  for (size_t k = 0; k < r.dims.size(); ++k) {
    if (r.dims[k] > INT32_MAX || std::abs(r.strides[k]) > INT32_MAX) return false;
    x.dims.push(static_cast<int32_t>(r.dims[k]));
    x.strides.push(static_cast<int32_t>(r.strides[k]));
  }
  x.offset = r.offset * ir::dtype_bits(buf.dtype) / 8;
  return true;
}

}  // namespace

ir::Result<std::string> export_mpk(const ir::Program& p) {
  // Levels of the dependency graph: level L's tasks trigger one event that level L + 1 waits on
  // (MPK gives a task one dependent event; a whole level is what every later task can wait for).
  const ir::Graph g = ir::Graph::build(p);
  if (!g.acyclic())
    return ir::error("export.cycle", "the program's dependency graph has a cycle: no MPK graph");
  std::vector<int64_t> level(p.tasks.size(), 0);
  int64_t levels = 0;
  for (uint32_t t : g.topo_order()) {
    for (uint32_t s : g.consumers(t)) level[s] = std::max(level[s], level[t] + 1);
    levels = std::max(levels, level[t] + 1);
  }
  std::vector<uint32_t> order(p.tasks.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return level[a] < level[b]; });
  mpk::Graph m;
  const auto n = static_cast<int64_t>(p.tasks.size()) + 2;
  auto ev = [](int64_t i) { return static_cast<uint64_t>(i); };
  // Events: 0 TERMINATION, 1 LAUNCH_DEPENDENT_TASKS [2, n), one per level boundary (EMPTY over the
  // next level's tasks), END_OF_TASK_GRAPH last.
  m.events.push_back({mpk::kTermination, 1, 0, 0, 0});
  m.events.push_back({mpk::kLaunchDependent, 1, 2, n, 0});
  std::vector<int64_t> first_of(static_cast<size_t>(levels) + 1, n);
  for (int64_t k = static_cast<int64_t>(order.size()) - 1; k >= 0; --k)
    first_of[static_cast<size_t>(level[order[static_cast<size_t>(k)]])] = k + 2;
  std::vector<int64_t> size(static_cast<size_t>(levels), 0);
  for (uint32_t t = 0; t < p.tasks.size(); ++t) ++size[static_cast<size_t>(level[t])];
  for (int64_t L = 0; L + 1 < levels; ++L)
    m.events.push_back({mpk::kEmpty, size[static_cast<size_t>(L)],
                        first_of[static_cast<size_t>(L) + 1], first_of[static_cast<size_t>(L) + 2],
                        0});
  const int64_t end = static_cast<int64_t>(m.events.size());
  m.events.push_back(
      {mpk::kEndOfTaskGraph, levels > 0 ? size[static_cast<size_t>(levels) - 1] : 1, 0, 0, 0});
  mpk::Task term, begin;
  term.task_type = mpk::kTerminate;
  begin.task_type = mpk::kBeginTaskGraph;
  begin.trigger_event = 1;
  m.tasks.push_back(term);
  m.tasks.push_back(begin);
  for (uint32_t t : order) {
    const ir::Task& task = p.tasks[t];
    if (task.inputs.size() > static_cast<size_t>(mpk::kMaxInputs) ||
        task.outputs.size() > static_cast<size_t>(mpk::kMaxOutputs))
      return ir::error("export.limit",
                       fmt::format("task {} ({}) has {} inputs and {} outputs; an MPK task holds "
                                   "at most {} and {}",
                                   t, task.display(), task.inputs.size(), task.outputs.size(),
                                   mpk::kMaxInputs, mpk::kMaxOutputs),
                       ir::task_pointer(t));
    mpk::Task x;
    x.task_type = mpk::task_type_of(task.op);
    x.variant_id = 0;
    mpk::set_metadata(x, 0, 65535, -1);
    for (bool output : {false, true}) {
      std::vector<mpk::Tensor> list;
      for (int64_t b : output ? task.outputs : task.inputs) {
        const std::string& name = p.buffers[static_cast<size_t>(b)].name;
        if (!ir::is_utf8(name))  // MPK names a tensor by it, in JSON written as UTF-8
          return ir::error("export.name",
                           fmt::format("task {} ({}): buffer {}'s name {} is not UTF-8 (a lone "
                                       "surrogate, as JSON's \\udc00 reads), and MPK's JSON "
                                       "names the tensor by it",
                                       t, task.display(), b, ir::py_repr_str(name)),
                           fmt::format("/buffers/{}/name", b));
        if (!describe(p, task, b, output, list.emplace_back()))
          return ir::error("export.limit",
                           fmt::format("task {} ({}): buffer {} has a dim or stride past the "
                                       "32-bit int MPK reads it as",
                                       t, task.display(), p.buffers[static_cast<size_t>(b)].name),
                           ir::task_pointer(t));
      }
      (output ? x.outputs : x.inputs) = m.store.add(std::span<const mpk::Tensor>(list));
    }
    const int64_t L = level[t];
    x.trigger_event = ev(L + 1 < levels ? 2 + L : end);
    if (L > 0) x.dependent_event = ev(2 + L - 1);
    if (L == 0) m.first_tasks.push_back(static_cast<int64_t>(m.tasks.size()));
    m.tasks.push_back(std::move(x));
  }
  return mpk::write(m);
}

}  // namespace amk::formats
