#include "app/decode.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/json_io.h"

namespace amk::app {
namespace {

using Clock = std::chrono::steady_clock;

// One decode step of a program on the VM: binds weights, inputs and KV, runs, and returns the
// last row of "logits".
ir::Result<std::vector<float>> step(ir::Program prog, const std::string& origin,
                                    const DecodeOptions& o, const vm::RunOptions& ro,
                                    vm::TensorStore& kv, int32_t token, int32_t pos,
                                    double& run_s) {
  auto named = [&](ir::Diagnostics d) {
    ir::set_file(d, origin);
    return ir::Result<std::vector<float>>(std::move(d));
  };
  auto loaded = vm::Vm::load(std::move(prog), o.load);
  if (!loaded) return named(std::move(loaded.diagnostics));
  vm::Vm& m = **loaded;
  ir::Status st;
  if (o.weights) st = m.bind_weights(*o.weights);
  if (st) st = m.set_decode_inputs({&token, 1}, pos);
  if (st) st = m.bind_kv(kv);
  if (!st) return named(std::move(st.diagnostics));
  vm::RunResult r = m.run(ro);
  run_s += r.wall_s;
  if (r.status == vm::RunResult::Status::Stuck) {
    ir::Diagnostic d = r.diagnostics.empty() ? ir::error("vm.deadlock", "") : r.diagnostics[0];
    d.message = vm::stuck_report(m.program(), r);
    return named({std::move(d)});
  }
  if (!r.ok()) return named(std::move(r.diagnostics));
  int64_t id = 0;
  for (const auto& b : m.program().buffers) {
    if (b.name == "logits" && b.kind == ir::BufferKind::IO_OUTPUT && b.dtype == ir::DType::F32 &&
        !b.shape.empty()) {
      const int64_t vocab = b.shape.back();
      const float* row = static_cast<const float*>(m.data(id)) + (b.numel() - vocab);
      return std::vector<float>(row, row + vocab);
    }
    ++id;
  }
  return named({ir::error("vm.binding", "the program has no F32 IO_OUTPUT buffer 'logits'")});
}

// The program of step `s`: lowered, or loaded and checked against its position.
ir::Result<ir::Program> program_of(const DecodeSource& src, size_t s, bool reference,
                                   double& lower_s) {
  if (src.model) {
    lower::LowerOptions opt = src.lower;
    opt.pos = static_cast<int64_t>(s);
    opt.reference = reference;
    lower::LowerResult lr = lower::lower(*src.model, *src.target, src.config, opt);
    lower_s += lr.seconds;
    if (!lr) return std::move(lr.diagnostics);
    return std::move(*lr.value);
  }
  ir::Result<ir::Program> p = ir::load_program(src.programs[s]);
  ir::set_file(p.diagnostics, src.programs[s]);
  if (!p) return p;
  if (src.target) p->target = src.target->record;  // proven for and run on that target
  if (const std::optional<int64_t> at = lowered_pos(*p); at && *at != static_cast<int64_t>(s)) {
    ir::Diagnostic d =
        ir::error("usage.input",
                  fmt::format("lowered for position {}, but step {} runs position {}", *at, s, s),
                  "/meta/pos");
    d.file = src.programs[s];
    return d;
  }
  return p;
}

}  // namespace

size_t decode_steps(const DecodeOptions& o) {
  return o.prompt.size() + static_cast<size_t>(std::max(o.max_tokens, 1)) - 1;
}

ir::Result<DecodeResult> decode(const DecodeSource& src, const DecodeOptions& o) {
  if (o.prompt.empty() || o.max_tokens < 1)
    return ir::error("usage.option", "a decode needs at least one prompt id and one new token");
  const size_t steps = decode_steps(o);
  if (o.verify && !src.model)
    return ir::error("usage.option", "--verify needs a MODEL (the direct evaluation lowers it)");
  if (!src.model && steps > src.programs.size())
    return ir::error("usage.option",
                     fmt::format("{} prompt ids and {} new tokens need {} per-position programs; "
                                 "{} given",
                                 o.prompt.size(), o.max_tokens, steps, src.programs.size()));
  if (src.model && static_cast<int64_t>(steps) > src.model->max_seq)
    return ir::error("usage.option", fmt::format("{} steps exceed model {}'s max_seq {}", steps,
                                                 src.model->name, src.model->max_seq));
  vm::RunOptions direct_ro = o.run;
  direct_ro.mode = vm::Mode::Deterministic;
  DecodeResult res;
  res.steps = steps;
  vm::TensorStore direct_kv;
  int32_t token = o.prompt[0];
  const auto t0 = Clock::now();
  for (size_t s = 0; s < steps; ++s) {
    const auto pos = static_cast<int32_t>(s);
    const std::string origin =
        src.model ? fmt::format("{} at pos {}", src.model->name, s) : src.programs[s];
    ir::Result<ir::Program> prog = program_of(src, s, false, res.lower_s);
    if (!prog) return std::move(prog.diagnostics);
    auto logits = step(std::move(*prog.value), origin, o, o.run, res.kv, token, pos, res.run_s);
    if (!logits) return std::move(logits.diagnostics);
    if (o.verify) {
      double ignored = 0;
      ir::Result<ir::Program> ref = program_of(src, s, true, ignored);
      if (!ref) return std::move(ref.diagnostics);
      auto want = step(std::move(*ref.value), origin + " (direct)", o, direct_ro, direct_kv, token,
                       pos, res.direct_s);
      if (!want) return std::move(want.diagnostics);
      double err = logits->size() == want->size() ? 0.0 : INFINITY;
      for (size_t i = 0; i < logits->size() && i < want->size(); ++i)
        err = std::max(err, static_cast<double>(std::fabs((*logits)[i] - (*want)[i])));
      res.max_error = std::max(res.max_error, err);
      if (!(err <= o.tolerance))
        return ir::error("verify.mismatch",
                         fmt::format("--verify: step {} logits differ from the direct evaluation "
                                     "by {:.3g} (tolerance {:.3g})",
                                     s, err, o.tolerance));
    }
    size_t best = 0;
    for (size_t i = 1; i < logits->size(); ++i)
      if ((*logits)[i] > (*logits)[best]) best = i;
    if (s + 1 < o.prompt.size()) {
      token = o.prompt[s + 1];
    } else {
      token = static_cast<int32_t>(best);
      res.generated.push_back(token);
    }
    if (o.progress) o.progress(s + 1, steps);
  }
  res.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  return res;
}

std::optional<int64_t> lowered_pos(const ir::Program& p) {
  const auto& meta = p.meta.json();
  if (meta.is_object() && meta.contains("pos") && meta["pos"].is_number_integer())
    return meta["pos"].get<int64_t>();
  return std::nullopt;
}

ir::Result<int32_t> step_pos(const ir::Program& p, std::optional<int64_t> pos) {
  const std::optional<int64_t> fixed = lowered_pos(p);
  if (pos && fixed && *pos != *fixed)
    return ir::error("vm.binding",
                     fmt::format("position {} contradicts the program, lowered at pos {} (its KV "
                                 "reads and RoPE are for that position)",
                                 *pos, *fixed),
                     "/meta/pos");
  if (!pos && !fixed)
    return ir::error("usage.option",
                     "the program does not say its position (meta.pos): give the position");
  return static_cast<int32_t>(pos ? *pos : *fixed);
}

ir::Status check_step_inputs(const ir::Program& p, const vm::SafeTensors& in) {
  const std::optional<int64_t> fixed = lowered_pos(p);
  if (!fixed) return {};
  for (const vm::StTensor& t : in.tensors()) {
    if (t.name != "pos" || t.dtype != vm::StDType::I32 || t.nbytes < 4) continue;
    int32_t v = 0;
    std::memcpy(&v, t.data, 4);
    if (v == *fixed) return {};
    ir::Diagnostic d =
        ir::error("vm.binding",
                  fmt::format("input 'pos' is {} but the program was lowered at pos {} (meta.pos)",
                              v, *fixed),
                  "/pos");
    d.file = in.path();
    return d;
  }
  return {};
}

ir::Result<std::string> inputs_template(const ir::Program& p, std::span<const int32_t> tokens,
                                        std::optional<int64_t> pos) {
  int32_t at = 0;
  if (pos || lowered_pos(p)) {
    ir::Result<int32_t> r = step_pos(p, pos);
    if (!r) return std::move(r.diagnostics);
    at = *r;
  }
  std::vector<std::vector<uint8_t>> bytes;  // each tensor's, alive until serialised
  std::vector<vm::StOut> outs;
  std::vector<int32_t> zeros;
  for (const ir::Buffer& b : p.buffers) {
    if (b.kind != ir::BufferKind::IO_INPUT) continue;
    if (b.name == "token_id" && tokens.empty()) {
      zeros.assign(static_cast<size_t>(b.numel()), 0);
      tokens = zeros;
    }
    ir::Result<std::vector<int32_t>> v = vm::decode_input(b, tokens, at);
    if (v) {
      const auto* raw = reinterpret_cast<const uint8_t*>(v->data());
      bytes.emplace_back(raw, raw + v->size() * sizeof(int32_t));
      outs.push_back({b.name, vm::StDType::I32, b.shape, bytes.back()});
    } else if (b.name == "token_id") {
      return std::move(v.diagnostics);  // ids that do not fit the program's batch
    } else {
      bytes.emplace_back(static_cast<size_t>(b.nbytes()), 0);
      outs.push_back({b.name, vm::st_of(b.dtype),
                      b.dtype == ir::DType::I4 ? std::vector<int64_t>{b.nbytes()} : b.shape,
                      bytes.back()});
    }
  }
  return vm::st_serialize(outs);
}

ir::Status check_kv_file(const ir::Program& p, const vm::SafeTensors& kv) {
  std::vector<std::string_view> caches;
  for (const ir::Buffer& b : p.buffers)
    if (b.kind == ir::BufferKind::KV_CACHE) caches.push_back(b.name);
  for (const vm::StTensor& t : kv.tensors())
    if (std::find(caches.begin(), caches.end(), t.name) != caches.end()) return {};
  ir::Diagnostic d = ir::error(
      "vm.binding",
      fmt::format("the KV file holds none of the program's {} KV caches ({}{}); is it another "
                  "file?",
                  caches.size(), caches.empty() ? "" : caches.front(),
                  caches.size() > 1 ? ", ..." : ""));
  d.file = kv.path();
  return d;
}

}  // namespace amk::app
