#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/pyjson.h"
#include "ir/result.h"
#include "validate/context.h"

namespace amk::validate {

std::span<const uint32_t> Context::writers(int64_t b) const {
  auto i = static_cast<size_t>(b);
  return {s.wr.data() + s.wr_off[i], s.wr_off[i + 1] - s.wr_off[i]};
}

std::span<const uint32_t> Context::users(int64_t b) const {
  auto i = static_cast<size_t>(b);
  return {s.use.data() + s.use_off[i], s.use_off[i + 1] - s.use_off[i]};
}

bool Context::direct(uint32_t src, uint32_t dst) const {
  uint32_t slot = g.out_slot(src);
  for (uint32_t w : g.wait_slots(dst))
    if (w == slot) return true;
  return false;
}

bool Context::admit(std::string_view code) {
  return ++s.rule_count[std::string(code)] <= kPerRuleCap;
}

void Context::error(const Rule& rule, std::string msg, std::string pointer,
                    std::vector<ir::Note> notes) {
  r.ok = false;
  if (!admit(rule.code)) return;
  ir::Diagnostic& d =
      r.errors.emplace_back(ir::error(std::string(rule.code), std::move(msg), std::move(pointer)));
  d.notes = std::move(notes);
}

void Context::warn(const Rule& rule, std::string msg, std::string pointer,
                   std::vector<ir::Note> notes) {
  if (!admit(rule.code)) return;
  ir::Diagnostic& d = r.warnings.emplace_back(
      ir::warning(std::string(rule.code), std::move(msg), std::move(pointer)));
  d.notes = std::move(notes);
}

void Context::finish() {
  for (const auto& [code, n] : s.rule_count) {
    if (n <= kPerRuleCap) continue;
    bool is_error = false;
    for (const auto& d : r.errors) is_error = is_error || d.code == code;
    auto& list = is_error ? r.errors : r.warnings;
    const std::string msg = fmt::format("{} more '{}' diagnostics not shown (first {} kept)",
                                        n - kPerRuleCap, code, kPerRuleCap);
    list.push_back(is_error ? ir::error(code, msg) : ir::warning(code, msg));
  }
}

std::string task_ref(const ir::Task& t, size_t id) {
  return fmt::format("task {} ({})", id, t.label);
}

std::string number_repr(const ir::Number& n) {
  return n.is_int ? std::to_string(n.i) : ir::py_float(n.f);
}

namespace {

TileRegion tile_region(const ir::Task& t, const ir::ParamTable& pt) {
  TileRegion r;
  if (t.op != ir::Op::GEMV_TILE && t.op != ir::Op::GEMM_TILE) return r;
  using F = ir::ParamField;
  if (!pt.has_int(F::n_off) || !pt.has_int(F::N_tile)) return r;
  const int64_t n_off = pt.get(F::n_off, 0), n_tile = pt.get(F::N_tile, 0);
  if (n_off < 0 || n_tile <= 0) return r;
  r.whole = false;
  r.c0 = n_off;
  r.c1 = n_off + n_tile;
  if (t.op == ir::Op::GEMM_TILE && pt.has_int(F::m_off) && pt.has_int(F::M_tile)) {
    const int64_t m_off = pt.get(F::m_off, 0), m_tile = pt.get(F::M_tile, 0);
    if (m_off >= 0 && m_tile > 0) {
      r.r0 = m_off;
      r.r1 = m_off + m_tile;
    }
  }
  return r;
}

void index_buffers(const ir::Program& p, Scratch& s) {
  const size_t nb = p.buffers.size();
  auto csr = [&](std::vector<uint32_t>& off, std::vector<uint32_t>& list, bool with_inputs) {
    off.assign(nb + 1, 0);
    auto count = [&](int64_t b) {
      if (b >= 0 && b < static_cast<int64_t>(nb)) ++off[static_cast<size_t>(b) + 1];
    };
    for (const ir::Task& t : p.tasks) {
      if (with_inputs)
        for (int64_t b : t.inputs) count(b);
      for (int64_t b : t.outputs) count(b);
    }
    for (size_t i = 0; i < nb; ++i) off[i + 1] += off[i];
    list.resize(off[nb]);
    s.tmp32.assign(off.begin(), off.end() - 1);
    for (uint32_t id = 0; id < p.tasks.size(); ++id) {
      const ir::Task& t = p.tasks[id];
      auto put = [&](int64_t b) {
        if (b >= 0 && b < static_cast<int64_t>(nb)) list[s.tmp32[static_cast<size_t>(b)]++] = id;
      };
      if (with_inputs)
        for (int64_t b : t.inputs) put(b);
      for (int64_t b : t.outputs) put(b);
    }
  };
  csr(s.wr_off, s.wr, false);
  csr(s.use_off, s.use, true);
}

}  // namespace

Validator::Validator() : s_(std::make_unique<Scratch>()) {}
Validator::~Validator() = default;
Validator::Validator(Validator&&) noexcept = default;
Validator& Validator::operator=(Validator&&) noexcept = default;

const ir::Graph& Validator::graph() const {
  return s_->graph;
}

Result Validator::validate(const ir::Program& p) {
  Scratch& s = *s_;
  s.rule_count.clear();
  s.graph.assign(p);
  index_buffers(p, s);
  Result r;
  Context c{p, s.graph, s, r};
  check_buffers(c);
  s.regions.resize(p.tasks.size());
  for (size_t id = 0; id < p.tasks.size(); ++id) {  // one pass: each task is loaded once
    const ir::ParamTable pt = ir::ParamTable::of(p.tasks[id]);
    s.regions[id] = tile_region(p.tasks[id], pt);
    check_task_refs(c, id, pt);
    check_task_structure(c, id);
    check_task_shapes(c, id, pt);
    check_task_waits(c, id);
  }
  check_counters(c);
  bool acyclic = check_cycles(c).empty();
  if (acyclic) {
    s.reach.bind(s.graph);
    check_hazards(c);
  }
  check_placement(c);
  check_pages(c);
  check_outputs(c);
  c.finish();
  r.stats.tasks = p.tasks.size();
  r.stats.buffers = p.buffers.size();
  r.stats.counters = p.counters.size();
  r.stats.edges = s.graph.edge_count();
  r.stats.acyclic = acyclic;
  r.stats.weight_mb = std::stod(ir::py_round2(static_cast<double>(p.total_weight_bytes()) / 1e6));
  r.stats.sm_assigned = p.sm_assigned();
  r.ok = r.errors.empty();
  return r;
}

Result validate(const ir::Program& p) {
  thread_local Validator v;
  return v.validate(p);
}

ir::Diagnostics structural_errors(const ir::Program& p, int64_t num_sms) {
  if (p.tasks.size() >= (size_t{1} << 31))
    return {ir::error("abi.max-tasks", "too many tasks for the ABI (int32 ids)", "/tasks")};
  Scratch s;
  Result r;
  Context c{p, s.graph, s, r};
  check_buffers(c);
  for (size_t id = 0; id < p.tasks.size(); ++id)
    check_task_refs(c, id, ir::ParamTable::of(p.tasks[id]));
  ir::Diagnostics out;
  for (ir::Diagnostic& d : r.errors)
    if (d.code.starts_with("ref.") || d.code.starts_with("abi.") || d.code == "buffer.dims")
      out.push_back(std::move(d));
  ir::append(out, sm_range_errors(p, num_sms));
  return out;
}

ir::Diagnostics sm_range_errors(const ir::Program& p, int64_t num_sms) {
  ir::Diagnostics out;
  for (size_t t = 0; t < p.tasks.size(); ++t) {
    const auto& sm = p.tasks[t].sm;
    if (sm && (*sm < 0 || *sm >= num_sms))
      out.push_back(ir::error(
          "sm.range", fmt::format("task {} assigned to SM {} out of range [0,{})", t, *sm, num_sms),
          ir::task_pointer(t, "sm")));
  }
  return out;
}

}  // namespace amk::validate
