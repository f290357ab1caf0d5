// AMK step 1 (references, ABI caps, self-waits, arity, params) with AMK's exact messages, then
// amk's structural additions (dimensions, read-only writes, finite params, FUSED recipes).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/checked.h"
#include "ir/fused.h"
#include "ir/opcodes.h"
#include "ir/pyjson.h"
#include "validate/context.h"

namespace amk::validate {

// The rules this file checks, in emission order (rules() lists every family's).
constexpr Rule kRefMissingBuffer{"ref.missing-buffer",
                                 "a task reads or writes a buffer id that does not exist", true};
constexpr Rule kRefMissingCounter{
    "ref.missing-counter", "a task increments or waits on a counter id that does not exist", true};
constexpr Rule kAbiMaxInputs{"abi.max-inputs", "more than ABI_MAX_INPUTS=8 inputs", true};
constexpr Rule kAbiMaxOutputs{"abi.max-outputs", "more than ABI_MAX_OUTPUTS=4 outputs", true};
constexpr Rule kAbiMaxWaits{"abi.max-waits", "more than ABI_MAX_WAITS=8 waits", true};
constexpr Rule kAbiMaxRank{"abi.max-rank", "a task touches a buffer of rank > ABI_MAX_RANK=4",
                           true};
constexpr Rule kWaitThreshold{"wait.threshold", "a wait threshold is not a positive static int",
                              true};
constexpr Rule kWaitSelf{"wait.self", "a task waits on its own out_counter (self-deadlock)", true};
constexpr Rule kOpArity{"op.arity", "input count outside the opcode's [min, max]", true};
constexpr Rule kOpOutputs{"op.outputs", "output count differs from the opcode's", true};
constexpr Rule kOpRequiredParam{"op.required-param", "a param the opcode requires is missing",
                                true};
constexpr Rule kParamUnknown{"param.unknown",
                             "warning: a param key that amk_params_t does not have", true};
constexpr Rule kParamInt32{"param.int32", "an int param field is not an int32", true};
constexpr Rule kParamReal{"param.real", "a float param field is not a real number", true};
constexpr Rule kBufferDims{"buffer.dims", "a buffer has a dimension <= 0", false};
constexpr Rule kBufferDuplicateName{
    "buffer.duplicate-name", "warning: two buffers share a name (tensors bind by name)", false};
constexpr Rule kBufferSize{
    "buffer.size", "a buffer's bytes, or all buffers' together, do not fit in 64 bits", false};
constexpr Rule kTaskEstimate{
    "task.estimate", "the tasks' est_bytes or est_flops add up past 64 bits (2^63-1)", false};
constexpr Rule kParamFinite{"param.finite", "a float param is NaN or infinite", false};
constexpr Rule kWriteReadonly{"write.readonly", "a task writes a WEIGHT, CONST or IO_INPUT buffer",
                              false};
constexpr Rule kFusedRecipe{"fused.recipe",
                            "a FUSED recipe is malformed (AMK's validate_recipe rules)", false};

std::span<const Rule> task_rules() {
  static constexpr Rule kList[] = {
      kRefMissingBuffer,    kRefMissingCounter, kAbiMaxInputs, kAbiMaxOutputs, kAbiMaxWaits,
      kAbiMaxRank,          kWaitThreshold,     kWaitSelf,     kOpArity,       kOpOutputs,
      kOpRequiredParam,     kParamUnknown,      kParamInt32,   kParamReal,     kBufferDims,
      kBufferDuplicateName, kBufferSize,        kTaskEstimate, kParamFinite,   kWriteReadonly,
      kFusedRecipe};
  return kList;
}

namespace {

std::string param_repr(const ir::ParamValue& v) {
  switch (v.kind) {
    case ir::ParamValue::Kind::Int:
      return std::to_string(v.i);
    case ir::ParamValue::Kind::Float:
      return std::isnan(v.f)   ? "nan"
             : std::isinf(v.f) ? (v.f < 0 ? "-inf" : "inf")
                               : ir::py_float(v.f);
    case ir::ParamValue::Kind::Bool:
      return v.i ? "True" : "False";
    case ir::ParamValue::Kind::Other:
      return ir::py_repr(v.other.json());
  }
  return {};
}

// Reports what check_task_refs finds, in the rules' order.
[[gnu::noinline]] void report_task_refs(Context& c, size_t id, const ir::ParamTable& pt) {
  const ir::Program& p = c.p;
  {
    const ir::Task& t = p.tasks[id];
    auto ref = [&] { return task_ref(t, id); };  // formatted only when something is reported
    const std::string_view op = ir::name(t.op);
    for (size_t k = 0; k < t.inputs.size(); ++k)
      if (!c.buffer_ok(t.inputs[k]))
        c.error(kRefMissingBuffer, fmt::format("{} reads missing buffer {}", ref(), t.inputs[k]),
                ir::task_pointer(id, fmt::format("inputs/{}", k)));
    for (size_t k = 0; k < t.outputs.size(); ++k)
      if (!c.buffer_ok(t.outputs[k]))
        c.error(kRefMissingBuffer, fmt::format("{} writes missing buffer {}", ref(), t.outputs[k]),
                ir::task_pointer(id, fmt::format("outputs/{}", k)));
    if (!c.counter_ok(t.out_counter))
      c.error(kRefMissingCounter,
              fmt::format("{} increments missing counter {}", ref(), t.out_counter),
              ir::task_pointer(id, "out_counter"));
    if (t.inputs.size() > ir::kMaxInputs)
      c.error(kAbiMaxInputs,
              fmt::format("task {} has {} inputs > ABI_MAX_INPUTS={}", id, t.inputs.size(),
                          ir::kMaxInputs),
              ir::task_pointer(id, "inputs"));
    if (t.outputs.size() > ir::kMaxOutputs)
      c.error(kAbiMaxOutputs,
              fmt::format("task {} has {} outputs > ABI_MAX_OUTPUTS={}", id, t.outputs.size(),
                          ir::kMaxOutputs),
              ir::task_pointer(id, "outputs"));
    if (t.waits.size() > ir::kMaxWaits)
      c.error(
          kAbiMaxWaits,
          fmt::format("task {} has {} waits > ABI_MAX_WAITS={}", id, t.waits.size(), ir::kMaxWaits),
          ir::task_pointer(id, "waits"));
    auto rank_check = [&](const std::vector<int64_t>& list, const char* field) {
      for (size_t k = 0; k < list.size(); ++k) {
        int64_t b = list[k];
        if (c.buffer_ok(b) && c.buf(b).shape.size() > ir::kMaxRank)
          c.error(kAbiMaxRank,
                  fmt::format("task {} buffer {} rank {} > ABI_MAX_RANK={}", id, b,
                              c.buf(b).shape.size(), ir::kMaxRank),
                  ir::task_pointer(id, fmt::format("{}/{}", field, k)));
      }
    };
    rank_check(t.inputs, "inputs");
    rank_check(t.outputs, "outputs");
    for (size_t k = 0; k < t.waits.size(); ++k) {
      const ir::Wait& w = t.waits[k];
      if (!c.counter_ok(w.counter))
        c.error(kRefMissingCounter, fmt::format("{} waits on missing counter {}", ref(), w.counter),
                ir::task_pointer(id, fmt::format("waits/{}/counter", k)));
      if (w.threshold < 1)
        c.error(kWaitThreshold,
                fmt::format("{} threshold {} on counter {} is not a positive static int", ref(),
                            w.threshold, w.counter),
                ir::task_pointer(id, fmt::format("waits/{}/threshold", k)));
    }
    for (size_t k = 0; k < t.waits.size(); ++k)
      if (t.waits[k].counter == t.out_counter)
        c.error(
            kWaitSelf,
            fmt::format("{} waits on its OWN out_counter {}, self-deadlock", ref(), t.out_counter),
            ir::task_pointer(id, fmt::format("waits/{}", k)),
            {{"a task's counter only moves when the task finishes, so it can never start",
              ir::task_pointer(id, "out_counter")}});
    const ir::OpSpec& spec = ir::op_spec(t.op);
    const bool kernel = c.foreign() && t.op == ir::Op::NOP;  // a foreign kernel's footprint
    const size_t n_in = t.inputs.size();
    if (!kernel && !spec.inputs_ok(static_cast<int64_t>(n_in)))
      c.error(kOpArity,
              fmt::format("task {} ({}) arity: {} inputs, expected [{},{}]", id, op, n_in,
                          spec.min_inputs, spec.max_inputs),
              ir::task_pointer(id, "inputs"));
    if (!kernel && !spec.outputs_ok(static_cast<int64_t>(t.outputs.size())))
      c.error(kOpOutputs,
              fmt::format("task {} ({}) expected {} outputs, got {}", id, op, spec.n_outputs,
                          t.outputs.size()),
              ir::task_pointer(id, "outputs"));
    // The common case in a few bit operations; anything to report takes the loops below.
    const ir::RequiredParams& rq = ir::required_params(t.op);
    if ((rq.fields & ~pt.present) != 0 || !rq.others.empty())
      for (std::string_view k : spec.required)
        if (auto f = ir::param_field(k);
            f ? !(pt.present >> static_cast<int>(*f) & 1u) : !t.param(k))
          c.error(kOpRequiredParam,
                  fmt::format("task {} ({}) missing required param '{}'", id, op, k),
                  ir::task_pointer(id, "params"));
    if (pt.plain) return;
    for (const ir::Param& prm : t.params) {
      auto type = ir::param_type(prm.key);
      auto ptr = [&] { return ir::task_pointer(id, "params/" + ir::pointer_token(prm.key)); };
      if (!type) {
        c.warn(kParamUnknown,
               fmt::format("task {} ({}) param '{}' is not a known amk_params_t field (will not "
                           "marshal to the device)",
                           id, op, prm.key),
               ptr());
      } else if (*type == ir::ParamType::Int) {
        if (!prm.value.is_int() || prm.value.i < std::numeric_limits<int32_t>::min() ||
            prm.value.i > std::numeric_limits<int32_t>::max())
          c.error(kParamInt32,
                  fmt::format("task {} param '{}'={} must be an int32", id, prm.key,
                              param_repr(prm.value)),
                  ptr());
      } else if (prm.value.kind == ir::ParamValue::Kind::Other) {  // Python: bools pass
        c.error(kParamReal,
                fmt::format("task {} param '{}'={} must be a real number", id, prm.key,
                            param_repr(prm.value)),
                ptr());
      }
    }
  }
}

}  // namespace

namespace {

// Per opcode, bit in * kArityStride + out set when `in` inputs and `out` outputs (at most the
// ABI's) are within its arity: the screen's arity test in one lookup.
constexpr size_t kArityStride = ir::kMaxOutputs + 1;
static_assert((ir::kMaxInputs + 1) * kArityStride <= 64);
const std::array<uint64_t, ir::kOpCount> kArityFits = [] {
  std::array<uint64_t, ir::kOpCount> fits{};
  for (size_t o = 0; o < fits.size(); ++o) {
    const ir::OpSpec& spec = ir::op_spec(static_cast<ir::Op>(o));
    for (int64_t in = 0; in <= ir::kMaxInputs; ++in)
      for (int64_t out = 0; out <= ir::kMaxOutputs; ++out)
        if (spec.inputs_ok(in) && spec.outputs_ok(out))
          fits[o] |=
              uint64_t{1} << (static_cast<size_t>(in) * kArityStride + static_cast<size_t>(out));
  }
  return fits;
}();

}  // namespace

TaskScreen check_task_refs(Context& c, size_t id, const ir::ParamTable& pt) {
  // Whether report_task_refs has anything to say, in a few tests per list (the common case, kept
  // apart from the reporting so that it stays small): every condition it reports on, checked
  // here first.
  const ir::Task& t = c.p.tasks[id];
  const ir::RequiredParams& rq = ir::required_params(t.op);
  // Ids compared as unsigned: a negative id is out of range too. Flags are or-ed, not chained
  // with ||: the lists are short and every branch of a chain costs more than its test.
  const auto nb = static_cast<uint64_t>(c.p.buffers.size());
  const auto nc = static_cast<uint64_t>(c.p.counters.size());
  const uint8_t* const bits = c.s.buffer_bits.data();
  const size_t n_in = t.inputs.size(), n_out = t.outputs.size();
  // Counts past the ABI's are reported on their own (below): the table is read at the clamped.
  const size_t fit = std::min<size_t>(n_in, ir::kMaxInputs) * kArityStride +
                     std::min<size_t>(n_out, ir::kMaxOutputs);
  const bool arity =
      !(c.foreign() && t.op == ir::Op::NOP) && !(kArityFits[static_cast<size_t>(t.op)] >> fit & 1u);
  unsigned report = !pt.plain | ((rq.fields & ~pt.present) != 0) | !rq.others.empty() |
                    (static_cast<uint64_t>(t.out_counter) >= nc) | (n_in > ir::kMaxInputs) |
                    (n_out > ir::kMaxOutputs) | (t.waits.size() > ir::kMaxWaits) | arity;
  auto buffer_flag = [&](int64_t b) -> unsigned {
    return static_cast<uint64_t>(b) >= nb ? 1u : bits[b] & kBufferRankAboveAbi;
  };
  for (const int64_t b : t.inputs) report |= buffer_flag(b);
  // An output's flags also say whether it is read-only, which check_task_structure reports; an
  // id out of range sets the same refs bit as a rank above the ABI.
  static_assert(kBufferRankAboveAbi == 1u);
  unsigned out_flags = 0;
  for (const int64_t b : t.outputs)
    out_flags |=
        static_cast<uint64_t>(b) >= nb ? 1u : bits[b] & (kBufferRankAboveAbi | kBufferReadonly);
  report |= out_flags & kBufferRankAboveAbi;
  for (const ir::Wait& w : t.waits)
    report |=
        (static_cast<uint64_t>(w.counter) >= nc) | (w.threshold < 1) | (w.counter == t.out_counter);
  if (report || !c.s.screens) report_task_refs(c, id, pt);
  return {report == 0, (out_flags & kBufferReadonly) != 0};
}

namespace {

// Sizes in checked 64-bit arithmetic: each buffer's bytes and their total (what the VM lays out).
// A value that does not fit is reported once, where it stops fitting.
void check_buffer_sizes(Context& c) {
  const ir::Program& p = c.p;
  std::optional<int64_t> total = 0;
  for (size_t b = 0; b < p.buffers.size(); ++b) {
    const ir::Buffer& buf = p.buffers[b];
    if (std::any_of(buf.shape.begin(), buf.shape.end(), [](int64_t d) { return d <= 0; }))
      continue;  // buffer.dims
    const std::optional<int64_t> bytes = buf.size_bytes();
    if (!bytes) {
      c.error(kBufferSize,
              fmt::format("buffer #{} ('{}') has shape {} of {}: its size in bytes does not fit "
                          "in 64 bits",
                          b, buf.name, ir::py_repr(nlohmann::ordered_json(buf.shape)),
                          ir::name(buf.dtype)),
              fmt::format("/buffers/{}/shape", b));
    } else if (total && !(total = ir::checked_add(*total, *bytes))) {
      c.error(kBufferSize,
              fmt::format("buffers #0..#{} come to more than 2^63-1 bytes together (buffer #{} "
                          "('{}') is {} bytes)",
                          b, b, buf.name, *bytes),
              fmt::format("/buffers/{}", b));
    }
  }
}

// The tasks' estimates in checked 64-bit arithmetic: their sum bounds every figure summed over
// some of them (a critical path, an SM's load). A sum that does not fit is reported once, where it
// stops fitting.
void check_task_estimates(Context& c) {
  const ir::Program& p = c.p;
  // The common case first, in one branch-free pass: both sums of magnitudes, exact in unsigned
  // 64 bits while no addition carries out, fit when they are at most 2^63-1 (INT64_MIN's
  // magnitude alone does not). Only a program that fails this takes the reporting loop below.
  uint64_t sums[2] = {0, 0};
  bool carry = false;
  auto magnitude = [](int64_t v) {
    return v < 0 ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  };
  for (const ir::Task& t : p.tasks) {
    carry |= __builtin_add_overflow(sums[0], magnitude(t.est_bytes), &sums[0]);
    carry |= __builtin_add_overflow(sums[1], magnitude(t.est_flops), &sums[1]);
  }
  constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (!carry && sums[0] <= kMax && sums[1] <= kMax) return;
  std::optional<int64_t> est[2] = {0, 0};  // Σ |est_bytes|, Σ |est_flops|
  for (size_t t = 0; t < p.tasks.size() && (est[0] || est[1]); ++t) {
    for (int k = 0; k < 2; ++k) {
      if (!est[k]) continue;  // reported once
      const int64_t v = k == 0 ? p.tasks[t].est_bytes : p.tasks[t].est_flops;
      est[k] = v == std::numeric_limits<int64_t>::min() ? std::nullopt
                                                        : ir::checked_add(*est[k], v < 0 ? -v : v);
      if (est[k]) continue;
      const char* field = k == 0 ? "est_bytes" : "est_flops";
      c.error(kTaskEstimate,
              fmt::format("{} {}={}: the tasks' {} add up past 2^63-1 here, so no total or path "
                          "figure over them fits in 64 bits",
                          task_ref(p.tasks[t], t), field, v, field),
              ir::task_pointer(t, field));
    }
  }
}

}  // namespace

namespace {

// A hash of a buffer's name for the duplicate-name table, eight bytes a step (std::hash takes
// about twice the instructions on names of 20-40 characters); equal hashes are compared by name.
size_t name_hash(std::string_view s) {
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  uint64_t h = s.size() * kMul;
  auto mix = [&](uint64_t w) {
    h = (h ^ w) * kMul;
    h ^= h >> 29;
  };
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w = 0;
    std::memcpy(&w, s.data() + i, 8);
    mix(w);
  }
  if (i < s.size()) {
    uint64_t w = 0;
    if (s.size() >= 8) {  // the last eight bytes, overlapping the step before
      std::memcpy(&w, s.data() + s.size() - 8, 8);
    } else {
      for (size_t k = i; k < s.size(); ++k) w = w << 8 | static_cast<uint8_t>(s[k]);
    }
    mix(w);
  }
  return static_cast<size_t>(h);
}

}  // namespace

void check_buffers(Context& c, bool buffers_known) {
  if (buffers_known) return check_task_estimates(c);
  const ir::Program& p = c.p;
  // Duplicate names through a flat open-addressing table of (hash, first buffer with it).
  size_t cap = 16;
  while (cap < 2 * p.buffers.size()) cap <<= 1;
  auto& table = c.s.pairs;
  table.assign(cap, {0, SIZE_MAX});
  c.s.numel.resize(p.buffers.size());
  c.s.buffer_bits.resize(p.buffers.size());
  // The buffers' sizes from the element counts this loop takes anyway: only when one does not
  // fit, or their total does not, does check_buffer_sizes work them out again and report.
  int64_t total_bytes = 0;
  bool sizes_fit = true;
  for (size_t b = 0; b < p.buffers.size(); ++b) {
    const ir::Buffer& buf = p.buffers[b];
    int64_t n = 1;
    bool carry = false, positive = true;
    for (const int64_t d : buf.shape) {
      positive &= d > 0;
      carry |= __builtin_mul_overflow(n, d, &n);
    }
    if (carry || !positive) [[unlikely]]
      n = buf.numel();  // its saturating count
    c.s.numel[b] = n;
    if (positive) {  // a buffer with a dimension <= 0 has no size (buffer.dims says why)
      const std::optional<int64_t> bytes = carry ? std::nullopt : ir::dtype_size(buf.dtype, n);
      sizes_fit = sizes_fit && bytes && !__builtin_add_overflow(total_bytes, *bytes, &total_bytes);
    }
    c.s.buffer_bits[b] =
        static_cast<uint8_t>((buf.shape.size() > ir::kMaxRank ? kBufferRankAboveAbi : 0) |
                             (ir::is_readonly(buf.kind) ? kBufferReadonly : 0));
    if (!positive) [[unlikely]]
      for (size_t k = 0; k < buf.shape.size(); ++k) {
        if (buf.shape[k] <= 0) {
          c.error(kBufferDims,
                  fmt::format("buffer #{} ('{}') has shape {}: every dimension must be positive", b,
                              buf.name, ir::py_repr(nlohmann::ordered_json(buf.shape))),
                  fmt::format("/buffers/{}/shape/{}", b, k));
          break;
        }
      }
    const size_t h = name_hash(buf.name);
    for (size_t i = h & (cap - 1);; i = (i + 1) & (cap - 1)) {
      auto& [eh, first] = table[i];
      if (first == SIZE_MAX) {
        table[i] = {h, b};
        break;
      }
      if (eh == h && p.buffers[first].name == buf.name) {
        c.warn(kBufferDuplicateName,
               fmt::format("buffers #{} and #{} are both named '{}'; weights, inputs and outputs "
                           "are bound by name",
                           first, b, buf.name),
               fmt::format("/buffers/{}/name", b),
               {{"the first one", fmt::format("/buffers/{}", first)}});
        break;
      }
    }
  }
  if (!sizes_fit) check_buffer_sizes(c);
  check_task_estimates(c);
}

namespace {

// Reports what check_task_structure finds, in the rules' order.
[[gnu::noinline]] void report_task_structure(Context& c, size_t id) {
  {
    const ir::Task& t = c.p.tasks[id];
    for (const ir::Param& prm : t.params)
      if (prm.value.kind == ir::ParamValue::Kind::Float && !std::isfinite(prm.value.f))
        c.error(kParamFinite,
                fmt::format("{} param '{}'={} is not finite", task_ref(t, id), prm.key,
                            param_repr(prm.value)),
                ir::task_pointer(id, "params/" + ir::pointer_token(prm.key)));
    for (size_t k = 0; k < t.outputs.size(); ++k) {
      int64_t b = t.outputs[k];
      if (c.buffer_ok(b) && ir::is_readonly(c.buf(b).kind))
        c.error(kWriteReadonly,
                fmt::format("{} writes {} buffer #{} ('{}'), which is read-only: weights, "
                            "constants and inputs are never written by a schedule",
                            task_ref(t, id), ir::name(c.buf(b).kind), b, c.buf(b).name),
                ir::task_pointer(id, fmt::format("outputs/{}", k)));
    }
    if (t.op == ir::Op::FUSED) {
      if (const ir::ParamValue* rv = t.param("recipe")) {
        std::vector<std::string> errs;
        ir::JsonValue recipe =
            rv->kind == ir::ParamValue::Kind::Other ? rv->other : ir::JsonValue();
        auto parsed = ir::parse_recipe(recipe, static_cast<int64_t>(t.inputs.size()), errs);
        if (parsed) {
          for (size_t k = 0; k < parsed->steps.size(); ++k) {
            const auto& st = parsed->steps[k];
            const ir::OpSpec& sp = ir::op_spec(st.op);
            const size_t n = st.args.size();
            if (!sp.inputs_ok(static_cast<int64_t>(n)))
              errs.push_back(fmt::format("step {}: {} takes [{},{}] args, got {}", k,
                                         ir::name(st.op), sp.min_inputs, sp.max_inputs, n));
            for (std::string_view req : sp.required) {
              bool have = false;
              for (const auto& sp2 : st.params) have = have || sp2.key == req;
              if (!have)
                errs.push_back(
                    fmt::format("step {}: {} needs param '{}'", k, ir::name(st.op), req));
            }
          }
        }
        for (const auto& e : errs)
          c.error(kFusedRecipe, fmt::format("{} FUSED recipe: {}", task_ref(t, id), e),
                  ir::task_pointer(id, "params/recipe"));
      }
    }
  }
}

}  // namespace

void check_task_structure(Context& c, size_t id, const ir::ParamTable& pt, bool writes_readonly) {
  // Whether report_task_structure has anything to say (every condition it reports on).
  const bool report = c.p.tasks[id].op == ir::Op::FUSED || !pt.finite || writes_readonly;
  if (report || !c.s.screens) report_task_structure(c, id);
}

}  // namespace amk::validate
