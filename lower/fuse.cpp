#include "lower/fuse.h"

#include <algorithm>
#include <set>

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

// Fuses the tasks of `members` (group ids, in order) into one FUSED task.
std::string fuse_members(Plan& p, const std::vector<int64_t>& members) {
  std::vector<size_t> idx;  // task index per member
  for (int64_t g : members) {
    std::vector<size_t> ts;
    for (size_t i = 0; i < p.tasks.size(); ++i)
      if (p.tasks[i].group == g) ts.push_back(i);
    const std::string& name = p.group_names[static_cast<size_t>(g)];
    if (ts.size() != 1)
      return fmt::format(
          "cannot fuse {}: it is {} tasks (a FUSED task writes one whole output; "
          "tile it as one, e.g. a larger gemv N_tile, or drop it from the group)",
          name, ts.size());
    const ir::Task& t = p.tasks[ts[0]].task;
    if (t.op == ir::Op::KV_APPEND || t.op == ir::Op::FUSED || t.outputs.size() != 1)
      return fmt::format("cannot fuse {}: {} updates state in place", name, ir::name(t.op));
    if (!idx.empty() && ts[0] < idx.back())
      return fmt::format("cannot fuse {}: list a group's ops in execution order", name);
    idx.push_back(ts[0]);
  }
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
  // Members whose output is read outside the group keep their task (recomputed in the FUSED one).
  std::set<size_t> drop;
  for (size_t k = 0; k + 1 < idx.size(); ++k) {
    const int64_t b = produced[k];
    bool outside = false;
    for (size_t i = 0; i < p.tasks.size() && !outside; ++i) {
      if (std::find(idx.begin(), idx.end(), i) != idx.end()) continue;
      const auto& in = p.tasks[i].task.inputs;
      outside = std::find(in.begin(), in.end(), b) != in.end();
    }
    const ir::Buffer& buf = p.program.buffers[static_cast<size_t>(b)];
    if (outside || buf.kind != ir::BufferKind::ACTIVATION) {
      p.log.push_back(
          fmt::format("  fuse: kept {} ({} is read outside the group; recomputed in "
                      "the FUSED task)",
                      p.tasks[idx[k]].task.label, buf.name));
    } else {
      drop.insert(idx[k]);
    }
  }
  drop.insert(idx.back());
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
  for (int64_t b : inputs) f.reads.push_back({b, {}});
  f.writes.push_back({produced.back(), {}});
  std::vector<PlanTask> next;
  next.reserve(p.tasks.size());
  for (size_t i = 0; i < p.tasks.size(); ++i) {
    if (i == idx.back()) next.push_back(std::move(f));
    if (!drop.count(i)) next.push_back(std::move(p.tasks[i]));
  }
  p.tasks = std::move(next);
  return "";
}

}  // namespace

std::string fuse(Plan& p) {
  if (p.opt.amk_compat || p.opt.reference) return "";
  for (size_t gi = 0; gi < p.knobs.fusion.size(); ++gi) {
    const auto& names = p.knobs.fusion[gi];
    // Scopes: each layer, then the global ops (-1).
    std::vector<int64_t> scopes;
    for (int64_t L = 0; L < p.model->n_layers; ++L) scopes.push_back(L);
    scopes.push_back(-1);
    int fused = 0;
    for (int64_t scope : scopes) {
      std::vector<int64_t> members;
      for (const std::string& want : names) {
        int64_t found = -1;
        for (const PlanTask& t : p.tasks) {
          if (t.node < 0 || p.graph[static_cast<size_t>(t.node)].layer != scope) continue;
          const std::string& gname = p.group_names[static_cast<size_t>(t.group)];
          if (gname == want || role_of(gname) == want) {
            found = t.group;
            break;
          }
        }
        if (found < 0) break;
        members.push_back(found);
      }
      if (members.size() != names.size()) continue;
      if (std::string e = fuse_members(p, members); !e.empty())
        return fmt::format("/config/fusion_grouping/{}: {}", gi, e);
      ++fused;
    }
    if (fused == 0) {
      std::set<std::string> roles;
      for (const PlanTask& t : p.tasks)
        if (t.node >= 0) roles.insert(role_of(p.group_names[static_cast<size_t>(t.group)]));
      std::string known;
      for (const std::string& r : roles) known += (known.empty() ? "" : ", ") + r;
      return fmt::format("/config/fusion_grouping/{}: no layer has all of its ops (op names: {})",
                         gi, known);
    }
    p.log.push_back(fmt::format("  fuse: group {} fused in {} place(s)", gi, fused));
  }
  return "";
}

}  // namespace amk::lower
