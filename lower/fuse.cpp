#include "lower/fuse.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace amk::lower {
namespace {

using json = nlohmann::ordered_json;

std::string role_of(const std::string& name) {
  if (name.size() > 1 && name[0] == 'L') {
    size_t dot = name.find('.');
    if (dot != std::string::npos &&
        std::all_of(name.begin() + 1, name.begin() + static_cast<std::ptrdiff_t>(dot),
                    [](char c) { return c >= '0' && c <= '9'; }))
      return name.substr(dot + 1);
  }
  return name;
}

const char* recipe_dtype(ir::DType d) {
  switch (d) {
    case ir::DType::BF16:
      return "bfloat16";
    case ir::DType::F16:
      return "float16";
    default:
      return "float32";
  }
}

json params_json(const std::vector<ir::Param>& ps) {
  json o = json::object();
  for (const ir::Param& q : ps) {
    switch (q.value.kind) {
      case ir::ParamValue::Kind::Int:
        o[q.key] = q.value.i;
        break;
      case ir::ParamValue::Kind::Float:
        o[q.key] = q.value.f;
        break;
      case ir::ParamValue::Kind::Bool:
        o[q.key] = q.value.i != 0;
        break;
      case ir::ParamValue::Kind::Other:
        o[q.key] = q.value.other.json();
        break;
    }
  }
  return o;
}

// Indexes built once per pass: task count and first task per group, readers per buffer, group
// per (layer, name).
struct Index {
  std::vector<uint32_t> group_size, group_task;                // group -> #tasks, its first task
  std::vector<uint32_t> readers;                               // buffer -> #tasks reading it
  std::map<std::pair<int64_t, std::string>, int64_t> by_name;  // (layer, name or role) -> group
  std::vector<char> taken;                                     // task already in a fusion
  std::vector<char> drop;                                      // task replaced
  // FUSED tasks, each with the task whose slot it takes (a handful: not one per task, which
  // cost a fresh megabyte per run)
  std::vector<std::pair<size_t, PlanTask>> insert_at;
  std::vector<std::string> kept;  // current group: members kept because others read their output

  explicit Index(const Plan& p)
      : group_size(p.group_names.size(), 0),
        group_task(p.group_names.size(), 0),
        readers(p.program.buffers.size(), 0),
        taken(p.tasks.size(), 0),
        drop(p.tasks.size(), 0) {
    for (size_t i = 0; i < p.tasks.size(); ++i) {
      const PlanTask& t = p.tasks[i];
      const auto g = static_cast<size_t>(t.group);
      for (size_t k = 0; k < t.task.inputs.size(); ++k)
        if (std::find(t.task.inputs.begin(), t.task.inputs.begin() + static_cast<std::ptrdiff_t>(k),
                      t.task.inputs[k]) == t.task.inputs.begin() + static_cast<std::ptrdiff_t>(k))
          ++readers[static_cast<size_t>(t.task.inputs[k])];
      if (group_size[g]++ > 0) continue;
      group_task[g] = static_cast<uint32_t>(i);
      if (t.node < 0) continue;
      const int64_t layer = p.graph[static_cast<size_t>(t.node)].layer;
      const std::string& name = p.group_names[g];
      by_name.emplace(std::pair{layer, name}, t.group);
      by_name.emplace(std::pair{layer, role_of(name)}, t.group);
    }
  }
};

// The task of each member (group ids, in order) into `idx`; why they cannot fuse, or "".
std::string member_tasks(const Plan& p, const Index& ix, const std::vector<int64_t>& members,
                         std::vector<size_t>& idx) {
  for (int64_t g : members) {
    const std::string& name = p.group_names[static_cast<size_t>(g)];
    const uint32_t n = ix.group_size[static_cast<size_t>(g)];
    if (n != 1)
      return fmt::format(
          "cannot fuse {}: it is {} tasks (a FUSED task writes one whole output; "
          "tile it as one, e.g. a larger gemv N_tile, or drop it from the group)",
          name, n);
    const std::array<size_t, 1> ts{ix.group_task[static_cast<size_t>(g)]};
    const ir::Task& t = p.tasks[ts[0]].task;
    if (t.op == ir::Op::KV_APPEND || t.op == ir::Op::FUSED || t.outputs.size() != 1)
      return fmt::format("cannot fuse {}: {} updates state in place", name, ir::name(t.op));
    if (ix.taken[ts[0]]) return fmt::format("cannot fuse {}: it is in two fusion groups", name);
    if (!idx.empty() && ts[0] < idx.back())
      return fmt::format("cannot fuse {}: list a group's ops in execution order", name);
    idx.push_back(ts[0]);
  }
  return "";
}

// Members whose output is read outside the group keep their task (recomputed in the FUSED one);
// the others are dropped.
void keep_read_outputs(const Plan& p, Index& ix, const std::vector<size_t>& idx,
                       const std::vector<int64_t>& produced) {
  for (size_t k = 0; k + 1 < idx.size(); ++k) {
    const int64_t b = produced[k];
    uint32_t inside = 0;  // members reading b
    for (size_t r : idx) {
      const auto& in = p.tasks[r].task.inputs;
      inside += std::find(in.begin(), in.end(), b) != in.end();
    }
    const bool outside = ix.readers[static_cast<size_t>(b)] > inside;
    const ir::Buffer& buf = p.program.buffers[static_cast<size_t>(b)];
    if (outside || buf.kind != ir::BufferKind::ACTIVATION) {
      ix.kept.push_back(fmt::format("{} ({})", p.tasks[idx[k]].task.label, buf.name));
    } else {
      ix.drop[idx[k]] = 1;
    }
  }
}

// Plans one FUSED task for `members` (group ids, in order); applied by fuse() in one rebuild.
std::string fuse_members(Plan& p, Index& ix, const std::vector<int64_t>& members) {
  std::vector<size_t> idx;  // task index per member
  if (std::string why = member_tasks(p, ix, members, idx); !why.empty()) return why;
  std::vector<int64_t> inputs;    // external inputs of the FUSED task, first use order
  std::vector<int64_t> produced;  // output buffer per member
  json steps = json::array();
  int64_t bytes = 0, flops = 0;
  std::string label;
  for (size_t k = 0; k < idx.size(); ++k) {
    const ir::Task& t = p.tasks[idx[k]].task;
    json args = json::array();
    bool linked = k == 0;
    for (int64_t b : t.inputs) {
      auto it = std::find(produced.begin(), produced.end(), b);
      if (it != produced.end()) {
        args.push_back({{"s", it - produced.begin()}});
        linked = true;
        continue;
      }
      auto in = std::find(inputs.begin(), inputs.end(), b);
      if (in == inputs.end()) in = inputs.insert(inputs.end(), b);
      args.push_back({{"in", in - inputs.begin()}});
    }
    if (!linked)
      return fmt::format(
          "cannot fuse {}: it does not read the output of an earlier op of the "
          "group (fusion groups are chains of adjacent ops)",
          t.label);
    const ir::Buffer& out = p.program.buffers[static_cast<size_t>(t.outputs[0])];
    json step = {{"op", static_cast<int>(t.op)}, {"args", args}};
    if (k + 1 == idx.size()) {
      step["out"] = "final";
    } else {
      step["out"] = static_cast<int64_t>(k);
      step["out_shape"] = out.shape;
      step["out_dtype"] = recipe_dtype(out.dtype);
    }
    step["params"] = params_json(t.params);
    steps.push_back(std::move(step));
    produced.push_back(t.outputs[0]);
    bytes += t.est_bytes;
    flops += t.est_flops;
    label += (label.empty() ? "" : "+") + t.label;
  }
  if (inputs.size() > static_cast<size_t>(ir::kMaxInputs))
    return fmt::format("cannot fuse {}: the FUSED task would read {} buffers (ABI max {})", label,
                       inputs.size(), ir::kMaxInputs);
  keep_read_outputs(p, ix, idx, produced);
  for (size_t i : idx) ix.taken[i] = 1;
  ix.drop[idx.back()] = 1;
  PlanTask f;
  f.task.op = ir::Op::FUSED;
  f.task.inputs = inputs;
  f.task.outputs = {produced.back()};
  f.task.params.push_back(
      {"recipe", ir::ParamValue::of_json(ir::JsonValue(json{{"steps", steps}}))});
  f.task.est_bytes = bytes;
  f.task.est_flops = flops;
  f.task.label = label;
  f.group = p.add_group(label);
  ix.insert_at.emplace_back(idx.back(), std::move(f));
  return "";
}

}  // namespace

ir::Status fuse(Plan& p) {
  if (p.opt.amk_compat || p.opt.reference || p.knobs.fusion.empty()) return {};
  Index ix(p);
  for (size_t gi = 0; gi < p.knobs.fusion.size(); ++gi) {
    const auto& names = p.knobs.fusion[gi];
    int fused = 0;
    ix.kept.clear();
    for (int64_t scope = -1; scope < p.model->n_layers; ++scope) {
      std::vector<int64_t> members;
      for (const std::string& want : names) {
        auto it = ix.by_name.find({scope, want});
        if (it == ix.by_name.end()) break;
        members.push_back(it->second);
      }
      if (members.size() != names.size()) continue;
      if (std::string e = fuse_members(p, ix, members); !e.empty())
        return ir::error("config.invalid", e, fmt::format("/config/fusion_grouping/{}", gi));
      ++fused;
    }
    if (fused == 0) {
      std::set<std::string> roles;
      for (const auto& [key, g] : ix.by_name)
        if (key.second.find('.') == std::string::npos || key.second.ends_with(".reshape"))
          roles.insert(role_of(key.second));
      std::string known;
      for (const std::string& r : roles) known += (known.empty() ? "" : ", ") + r;
      return ir::error("config.invalid",
                       fmt::format("no layer has all of its ops (op names: {})", known),
                       fmt::format("/config/fusion_grouping/{}", gi));
    }
    p.log.push_back(fmt::format("  fuse: group {} fused in {} place(s)", gi, fused));
    if (!ix.kept.empty())
      p.log.push_back(fmt::format(
          "  fuse: group {} kept {} member task(s) whose output is read outside the group "
          "(recomputed in the FUSED task), e.g. {}",
          gi, ix.kept.size(), ix.kept.front()));
  }
  std::sort(ix.insert_at.begin(), ix.insert_at.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  auto next = ix.insert_at.begin();
  size_t w = 0;  // compact in place (swaps keep every element's storage); a FUSED task takes
  for (size_t i = 0; i < p.tasks.size(); ++i) {  // its last member's slot
    if (next != ix.insert_at.end() && next->first == i) {
      std::swap(p.tasks[w++], next->second);
      ++next;
    } else if (!ix.drop[i]) {
      if (w != i) std::swap(p.tasks[w], p.tasks[i]);
      ++w;
    }
  }
  resize_reusing(p.tasks, w, p.spare_plan);
  return {};
}

}  // namespace amk::lower
