#include "targets/runtime.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "ir/fileio.h"
#include "ir/json_io.h"
#include "ir/pyjson.h"
#include "targets/target.h"

std::span<const std::pair<std::string_view, std::string_view>> amk_builtin_runtime_files();

namespace amk::targets {

using json = nlohmann::ordered_json;

namespace {

constexpr std::array<std::string_view, 2> kPlacement = {"loader", "dynamic"};
constexpr std::array<std::string_view, 3> kStaging = {"registers", "shared", "fixed"};
constexpr std::array<std::string_view, 3> kPrefetch = {"none", "l2", "shared"};
constexpr std::array<std::string_view, 2> kFused = {"run", "trap"};
constexpr std::array<std::string_view, 2> kI4Hint = {"exact", "oversized"};
constexpr std::array<std::string_view, 2> kQuantHint = {"beside", "ahead"};
constexpr double kBig = 1e12;

// The one list of a runtime file's fields (besides "sources" and "fit", which are free-form).
const RuntimeField kFields[] = {
    {"name", "", "the runtime's name", &Runtime::name},
    {"family", "", "the chips it runs on (gpu, ascend, tx8, cpu)", &Runtime::family},
    {"note", "", "what it is and where its numbers come from", &Runtime::note},
    {"placement", "",
     "how the tasks of a program without SM assignments reach workers: loader (AMK's loader: "
     "greedy over the task order by bytes) or dynamic (the earliest free worker)",
     &Runtime::placement, nullptr, kPlacement},
    {"staging", "",
     "where weight loads land: registers (bytes in flight = threads x bytes_per_thread), shared "
     "(x pipelining_depth stages, capped by the shared memory left) or fixed (the runtime's own "
     "buffers: default_smem_bytes)",
     &Runtime::staging, nullptr, kStaging},
    {"prefetch", "",
     "whether a task's weights start loading before its dependency wait: none, l2 (a hint that "
     "warms L2, up to pipelining_depth tasks ahead) or shared (into the staging buffers, "
     "through the worker's own loads once the task before has streamed its bytes)",
     &Runtime::prefetch, nullptr, kPrefetch},
    {"fused_tasks", "",
     "whether it executes FUSED tasks (a fusion_grouping's groups): run, or trap (its executor "
     "has no such opcode and aborts the run); lower warns about a config that fuses for a runtime "
     "that traps, and a search leaves fusion out. Absent: run",
     &Runtime::fused_tasks, nullptr, kFused, 0, 0, false, true},
    {"i4_hint", "",
     "how its L2 hint (prefetch l2) sizes a weight declared I4, packed int4 at the logical "
     "shape: exact, or oversized (as 4-byte elements: 8x its bytes from 8x its offset, which the "
     "model does not price); lower and info warn about such a program at pipelining_depth > 0. "
     "Absent: exact",
     &Runtime::i4_hint, nullptr, kI4Hint, 0, 0, false, true},
    {"quant_hint", "",
     "where a dequantising GEMV's own loads stand against the L2 hint (prefetch l2) of the next "
     "weight task within pipelining_depth that its worker issues before it computes: beside it "
     "(the hint fills the worker's share of HBM that the GEMV leaves), or ahead of them (the "
     "GEMV streams once the hinted bytes have come at that share). Absent: beside",
     &Runtime::quant_hint, nullptr, kQuantHint, 0, 0, false, true},
    {"launch_us",
     "us",
     "once per run: the launch and the entry/exit barriers",
     nullptr,
     &Runtime::launch_us,
     {},
     0,
     1e7,
     true},
    {"dispatch_ns",
     "ns",
     "per task, once its inputs are seen ready: hand it to its worker and set it up (decode, "
     "pages) before its work starts",
     nullptr,
     &Runtime::dispatch_ns,
     {},
     0,
     1e7,
     true},
    {"barrier_ns",
     "ns",
     "per task: the block-wide barriers around it",
     nullptr,
     &Runtime::barrier_ns,
     {},
     0,
     1e7,
     true},
    {"signal_ns",
     "ns",
     "per task: fence its outputs and increment its counter",
     nullptr,
     &Runtime::signal_ns,
     {},
     0,
     1e7,
     true},
    {"wait_ns",
     "ns",
     "per task that waits: observe counters already met",
     nullptr,
     &Runtime::wait_ns,
     {},
     0,
     1e7,
     true},
    {"remote_ns",
     "ns",
     "per dependency on a task of another worker: the counter and the activations crossing "
     "through L2 or global memory",
     nullptr,
     &Runtime::remote_ns,
     {},
     0,
     1e7,
     true},
    {"poll_ns",
     "ns",
     "the polling interval of a blocked wait (it sees the counter half an interval late)",
     nullptr,
     &Runtime::poll_ns,
     {},
     0,
     1e7,
     true},
    {"latency_ns",
     "ns",
     "a weight load's latency from DRAM (Little's law: rate = bytes in "
     "flight / latency)",
     nullptr,
     &Runtime::latency_ns,
     {},
     1,
     1e7,
     true},
    {"prefetched_latency_ns",
     "ns",
     "a load's latency when its data was prefetched",
     nullptr,
     &Runtime::prefetched_latency_ns,
     {},
     1,
     1e7,
     true},
    {"bytes_per_thread",
     "bytes",
     "bytes one thread keeps in flight per stage (16: a 128-bit load)",
     nullptr,
     &Runtime::bytes_per_thread,
     {},
     1,
     1e6},
    {"quant_bytes_per_thread",
     "bytes",
     "bytes_per_thread of a GEMV that dequantises int8/int4 weights (params.qdtype), where its "
     "kernel loads them otherwise (absent or 0: bytes_per_thread)",
     nullptr,
     &Runtime::quant_bytes_per_thread,
     {},
     0,
     1e6,
     false,
     true},
    {"quant_latency_ns",
     "ns",
     "latency_ns of a dequantising GEMV's weight loads (absent or 0: latency_ns)",
     nullptr,
     &Runtime::quant_latency_ns,
     {},
     0,
     1e7,
     true,
     true},
    {"quant_prefetched_latency_ns",
     "ns",
     "prefetched_latency_ns of a dequantising GEMV's weight loads (absent or 0: "
     "prefetched_latency_ns)",
     nullptr,
     &Runtime::quant_prefetched_latency_ns,
     {},
     0,
     1e7,
     true,
     true},
    {"threads",
     "",
     "threads per worker doing the work (0: the config's threads_per_block)",
     nullptr,
     &Runtime::threads,
     {},
     0,
     1e6},
    {"reserved_smem_bytes",
     "bytes",
     "shared memory the runtime keeps for itself (activations, descriptors)",
     nullptr,
     &Runtime::reserved_smem_bytes,
     {},
     0,
     kBig},
    {"default_smem_bytes",
     "bytes",
     "staging buffers when the config's smem_bytes_per_block is 0 (fixed staging: always)",
     nullptr,
     &Runtime::default_smem_bytes,
     {},
     0,
     kBig},
    {"worker_bytes_per_cycle",
     "bytes",
     "the most one worker loads per clock cycle",
     nullptr,
     &Runtime::worker_bytes_per_cycle,
     {},
     1e-3,
     1e6,
     true},
    {"peak_fraction",
     "",
     "of the spec bandwidth that streaming reaches on a target without measured_bw_gbs",
     nullptr,
     &Runtime::peak_fraction,
     {},
     1e-3,
     1,
     true},
    {"flops_per_thread_cycle",
     "",
     "batch-1 compute: flops one thread does per clock cycle",
     nullptr,
     &Runtime::flops_per_thread_cycle,
     {},
     1e-6,
     1e6,
     true},
    {"kv_step_ns",
     "ns",
     "per KV position and 32 elements of a head (a lane's share of head_dim) that an attention "
     "head's online softmax walks one after another (dependent loads, a warp reduction, the "
     "rescale), the tile's heads dealt over the worker's warps (threads / 32); absent or 0: "
     "attention is no serial chain in this runtime",
     nullptr,
     &Runtime::kv_step_ns,
     {},
     0,
     1e7,
     true,
     true},
    {"max_threads_per_block",
     "",
     "the most threads_per_block its launch takes (absent or 0: what the target takes); the "
     "search keeps below it and lower warns above it",
     nullptr,
     &Runtime::max_threads_per_block,
     {},
     0,
     1e6,
     false,
     true},
};

// The offset of top-level key `key` in a JSON object's text (npos when absent): where a
// diagnostic about that field points.
size_t key_offset(std::string_view text, std::string_view key) {
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') --depth;
    if (c != '"') continue;
    const size_t open = i;
    for (++i; i < text.size() && text[i] != '"'; ++i)
      if (text[i] == '\\') ++i;
    if (depth == 1 && text.substr(open + 1, i - open - 1) == key) return open;
  }
  return std::string_view::npos;
}

void set_position(ir::Diagnostic& d, std::string_view text, size_t off) {
  if (off == std::string_view::npos) return;
  d.line = 1;
  d.column = 1;
  for (size_t i = 0; i < off && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++d.line;
      d.column = 1;
    } else {
      ++d.column;
    }
  }
}

// Reads one field; an error names its pointer.
std::optional<std::string> read_field(const json& j, const RuntimeField& f, Runtime& r) {
  if (!j.contains(f.key)) return f.optional ? std::nullopt : std::optional<std::string>("missing");
  const json& v = j[std::string(f.key)];
  if (f.number) {
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < f.min ||
        v.get<double>() > f.max)
      return fmt::format("must be a number in [{}, {}]{}", f.min, f.max,
                         f.unit.empty() ? "" : fmt::format(" ({})", f.unit));
    r.*f.number = v.get<double>();
    return std::nullopt;
  }
  if (!v.is_string()) return std::string("must be a string");
  const std::string s = v.get<std::string>();
  if (!f.choices.empty() && std::find(f.choices.begin(), f.choices.end(), s) == f.choices.end())
    return fmt::format("must be one of {}", fmt::join(f.choices, ", "));
  r.*f.text = s;
  return std::nullopt;
}

}  // namespace

std::span<const RuntimeField> runtime_fields() {
  return kFields;
}

ir::Result<Runtime> parse_runtime(std::string_view text, std::string_view origin) {
  ir::Result<ir::JsonValue> doc = ir::parse_json_object(text, "a runtime profile");
  if (!doc) {
    ir::set_file(doc.diagnostics, origin);
    return std::move(doc.diagnostics);
  }
  auto fail = [&](std::string_view key, std::string msg) {
    ir::Diagnostic d = ir::error("runtime.field", std::move(msg), "/" + ir::pointer_token(key));
    d.file = origin;
    set_position(d, text, key_offset(text, key));
    return ir::Result<Runtime>(std::move(d));
  };
  const json& j = doc->json();
  for (auto it = j.begin(); it != j.end(); ++it) {
    const bool known = it.key() == "sources" || it.key() == "fit" ||
                       std::any_of(std::begin(kFields), std::end(kFields),
                                   [&](const RuntimeField& f) { return f.key == it.key(); });
    if (!known) return fail(it.key(), "unknown field (amk runtimes --fields lists them)");
  }
  Runtime r;
  for (const RuntimeField& f : kFields)
    if (std::optional<std::string> why = read_field(j, f, r)) return fail(f.key, *why);
  if (j.contains("sources")) {
    const json& s = j["sources"];
    if (!s.is_object() ||
        !std::all_of(s.begin(), s.end(), [](const json& v) { return v.is_string(); }))
      return fail("sources", "must be an object of {field: text}");
    r.sources = ir::JsonValue(s);
  }
  if (j.contains("fit")) {
    if (!j["fit"].is_object()) return fail("fit", "must be an object (amk calibrate's report)");
    r.fit = ir::JsonValue(j["fit"]);
  }
  ir::Result<Runtime> out(std::move(r));
  out.diagnostics = std::move(doc.diagnostics);
  ir::set_file(out.diagnostics, origin);
  return out;
}

std::string write_runtime(const Runtime& r) {
  json j = json::object();
  for (const RuntimeField& f : kFields) {
    if (f.text) {
      if (!f.optional || !(r.*f.text).empty()) j[std::string(f.key)] = r.*f.text;
      continue;
    }
    const double v = r.*f.number;
    if (f.optional && v == 0) continue;
    if (v == std::floor(v) && std::abs(v) < 1e15)
      j[std::string(f.key)] = static_cast<int64_t>(v);
    else
      j[std::string(f.key)] = v;
  }
  if (!r.sources.is_null()) j["sources"] = r.sources.json();
  if (!r.fit.is_null()) j["fit"] = r.fit.json();
  // json.dumps(indent=2): exact for a name with a lone surrogate, on which nlohmann's dump throws.
  std::string out;
  ir::append_json_value(out, j, 0);
  return out + "\n";
}

ir::Result<Runtime> load_runtime(std::string_view name_or_path) {
  auto file = ir::read_builtin_or_file(name_or_path, amk_builtin_runtime_files(), "runtimes",
                                       "runtime", "a runtime .json");
  if (!file) return std::move(file.diagnostics);
  return parse_runtime(file->second, file->first);
}

std::vector<std::string> builtin_runtime_names() {
  return ir::builtin_names(amk_builtin_runtime_files());
}

const Runtime* builtin_runtime(std::string_view name) {
  static const std::map<std::string, Runtime, std::less<>> kAll = [] {
    std::map<std::string, Runtime, std::less<>> m;
    for (const auto& [stem, text] : amk_builtin_runtime_files()) {
      ir::Result<Runtime> r = parse_runtime(text, std::string(stem));
      AMK_ASSERT(r.ok(), "a built-in runtime file does not parse: " + std::string(stem));
      m.emplace(std::string(stem), std::move(*r));
    }
    return m;
  }();
  const auto it = kAll.find(name);
  return it == kAll.end() ? nullptr : &it->second;
}

const Runtime& default_runtime(const TargetSpec& t) {
  if (const Runtime* r = builtin_runtime(t.runtime)) return *r;
  return *builtin_runtime("amk-cuda");
}

const Runtime& default_runtime(const ir::Target& t) {
  static const std::map<std::string, std::string, std::less<>> kByTarget = [] {
    std::map<std::string, std::string, std::less<>> m;
    for (const std::string& n : builtin_target_names())
      if (ir::Result<TargetSpec> s = load_target(n)) m.emplace(s->record.name, s->runtime);
    return m;
  }();
  const auto it = kByTarget.find(t.name);
  const Runtime* r = builtin_runtime(it == kByTarget.end() ? "amk-cuda" : it->second);
  return r ? *r : *builtin_runtime("amk-cuda");
}

ir::Diagnostics runtime_limits(const Runtime& r, const ir::ScheduleConfig& c,
                               const ir::Program* lowered) {
  ir::Diagnostics d;
  const json& threads = c.threads_per_block.json();
  if (r.max_threads_per_block > 0 && threads.is_number() &&
      threads.get<double>() > r.max_threads_per_block)
    d.push_back(ir::warning(
        "runtime.limit",
        fmt::format("threads_per_block {} is more than runtime {} launches ({}): its prediction "
                    "is for an executor that would take it",
                    threads.get<double>(), r.name, r.max_threads_per_block),
        "/threads_per_block"));
  const json& groups = c.fusion_grouping.json();
  const bool fuses = lowered ? std::any_of(lowered->tasks.begin(), lowered->tasks.end(),
                                           [](const ir::Task& t) { return t.op == ir::Op::FUSED; })
                             : groups.is_array() && !groups.empty();
  const auto reads_i4 = [&](const ir::Task& t) {
    return (t.op == ir::Op::GEMV_TILE || t.op == ir::Op::GEMM_TILE) && t.inputs.size() > 1 &&
           t.inputs[1] >= 0 && t.inputs[1] < static_cast<int64_t>(lowered->buffers.size()) &&
           lowered->buffers[static_cast<size_t>(t.inputs[1])].dtype == ir::DType::I4;
  };
  if (r.i4_hint == "oversized" && r.prefetch == "l2" && c.depth() > 0 && lowered &&
      std::any_of(lowered->tasks.begin(), lowered->tasks.end(), reads_i4))
    d.push_back(ir::warning(
        "runtime.limit",
        fmt::format("pipelining_depth {} hints the next GEMV's weights into L2, and runtime {} "
                    "sizes the hint of an I4 weight as 4-byte elements (8x its bytes, from 8x "
                    "its offset; AMK's VM ran small-4L int4 12x slower so): its prediction is for "
                    "an executor that sizes it exactly (pipelining_depth 0, or the weight "
                    "declared U8 [N, K/2], avoid it)",
                    c.depth(), r.name),
        "/pipelining_depth"));
  if (r.fused_tasks == "trap" && fuses)
    d.push_back(ir::warning(
        "runtime.limit",
        fmt::format(
            "fusion_grouping makes FUSED tasks, which runtime {} cannot execute (its "
            "executor traps on them): its prediction is for an executor that would run them",
            r.name),
        "/fusion_grouping"));
  return d;
}

ir::Result<Runtime> resolve_runtime(std::string_view arg, const ir::Target& t) {
  if (arg.empty()) return default_runtime(t);
  return load_runtime(arg);
}

}  // namespace amk::targets
