#include "ir/program.h"

#include "ir/csr.h"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "ir/bytes.h"
#include "ir/checked.h"

namespace amk::ir {

int64_t Buffer::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n = saturating_mul(n, d);  // absurd shapes must not be UB
  return n;
}

std::optional<int64_t> Buffer::size_bytes() const {
  std::optional<int64_t> n = 1;
  for (int64_t d : shape)
    if (!(n = checked_mul(*n, d))) return std::nullopt;
  return dtype_size(dtype, *n);
}

ParamValue ParamValue::of_int(int64_t v) {
  ParamValue p;
  p.kind = Kind::Int;
  p.i = v;
  return p;
}

ParamValue ParamValue::of_float(double v) {
  ParamValue p;
  p.kind = Kind::Float;
  p.f = v;
  return p;
}

ParamValue ParamValue::of_bool(bool v) {
  ParamValue p;
  p.kind = Kind::Bool;
  p.i = v ? 1 : 0;
  return p;
}

ParamValue ParamValue::of_json(JsonValue v) {
  ParamValue p;
  p.kind = Kind::Other;
  p.other = std::move(v);
  return p;
}

double ParamValue::as_double() const {
  switch (kind) {
    case Kind::Int:
    case Kind::Bool:
      return static_cast<double>(i);
    case Kind::Float:
      return f;
    case Kind::Other:
      break;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

bool ParamValue::operator==(const ParamValue& o) const {
  if (kind != o.kind) return false;
  switch (kind) {
    case Kind::Int:
    case Kind::Bool:
      return i == o.i;
    case Kind::Float:
      return f == o.f || (std::isnan(f) && std::isnan(o.f));
    case Kind::Other:
      return other == o.other;
  }
  return false;
}

const ParamValue* Task::param(std::string_view key) const {
  for (const Param& p : params) {
    if (p.key.size() != key.size()) continue;
    size_t k = 0;
    while (k < key.size() && p.key[k] == key[k]) ++k;  // short keys: no memcmp call
    if (k == key.size()) return &p.value;
  }
  return nullptr;
}

std::optional<int64_t> Task::int_param(std::string_view key) const {
  const ParamValue* v = param(key);
  if (!v || !v->is_int()) return std::nullopt;
  return v->i;
}

std::optional<double> Task::real_param(std::string_view key) const {
  const ParamValue* v = param(key);
  if (!v || !v->is_number()) return std::nullopt;
  return v->as_double();
}

void Task::set_param(std::string_view key, ParamValue v) {
  for (Param& p : params) {
    if (p.key == key) {
      p.value = std::move(v);
      return;
    }
  }
  params.push_back({std::string(key), std::move(v)});
}

std::string_view Task::display() const {
  return label.empty() ? name(op) : label;
}

int64_t PageAllocation::total_scratch_bytes() const {
  int64_t n = 0;
  for (const Page& p : pages) n += p.nbytes;
  return n;
}

ScheduleConfig ScheduleConfig::defaults() {
  ScheduleConfig c;
  c.tiling = JsonValue::object();
  c.fusion_grouping = JsonValue(nlohmann::ordered_json::array());
  c.sm_assignment = JsonValue(nlohmann::ordered_json("load_balance"));
  c.pipelining_depth = JsonValue(nlohmann::ordered_json(2));
  c.page_allocation = JsonValue(nlohmann::ordered_json("graph_color"));
  c.threads_per_block = JsonValue(nlohmann::ordered_json(256));
  c.smem_bytes_per_block = JsonValue(nlohmann::ordered_json(0));
  return c;
}

int64_t ScheduleConfig::depth() const {
  const auto& d = pipelining_depth.json();
  if (d.is_number_integer() && d.get<int64_t>() >= 0) return d.get<int64_t>();
  return 2;
}

double Target::bandwidth_bound_us(double weight_bytes) const {
  double bw = hbm_bandwidth_gbs.as_double();
  if (bw <= 0) return std::numeric_limits<double>::quiet_NaN();
  return weight_bytes / (bw * 1e9) * 1e6;
}

int64_t Program::add_buffer(std::string name, BufferKind kind, DType dtype,
                            std::vector<int64_t> shape, MemSpace space,
                            std::optional<std::string> source) {
  Buffer b;
  b.name = std::move(name);
  b.kind = kind;
  b.dtype = dtype;
  b.shape = std::move(shape);
  b.space = space;
  b.source = std::move(source);
  buffers.push_back(std::move(b));
  return static_cast<int64_t>(buffers.size()) - 1;
}

int64_t Program::add_counter(std::string note) {
  Counter c;
  c.note = std::move(note);
  counters.push_back(std::move(c));
  return static_cast<int64_t>(counters.size()) - 1;
}

int64_t Program::add_task(Task t) {
  tasks.push_back(std::move(t));
  return static_cast<int64_t>(tasks.size()) - 1;
}

int64_t Program::total_weight_bytes() const {
  int64_t n = 0;
  for (const Buffer& b : buffers)
    if (b.kind == BufferKind::WEIGHT) n = saturating_add(n, b.nbytes());
  return n;
}

bool Program::sm_assigned() const {
  for (const Task& t : tasks)
    if (t.sm) return true;
  return false;
}

namespace {

// The int params task_load reads, found in one pass over the params with Task::int_param's
// meaning: a key's first param decides (nullopt when it holds no int), later ones are ignored.
// A key is told by its length and one word of its bytes (a search works out the loads of every
// candidate it lowers).
struct LoadParams {
  enum Slot : uint8_t { K, N_tile, M_tile, head_dim, n_heads, kv_len, qdtype, kNone };
  uint32_t seen = 0, ints = 0;
  int64_t v[kNone];  // valid where `ints` has the bit
  static Slot slot(const std::string& key) {
    switch (key.size()) {
      case 1:
        return key[0] == 'K' ? K : kNone;
      case 6: {
        const uint64_t w = bytes_word(key.data(), 6);
        return w == literal_word("N_tile")   ? N_tile
               : w == literal_word("M_tile") ? M_tile
               : w == literal_word("kv_len") ? kv_len
               : w == literal_word("qdtype") ? qdtype
                                             : kNone;
      }
      case 7:
        return bytes_word(key.data(), 7) == literal_word("n_heads") ? n_heads : kNone;
      case 8:
        return bytes_word(key.data(), 8) == literal_word("head_dim") ? head_dim : kNone;
      default:
        return kNone;
    }
  }
  void read(const Task& t) {
    for (const Param& p : t.params) {
      const Slot k = slot(p.key);
      const uint32_t bit = 1u << k;
      if (k == kNone || (seen & bit)) continue;
      seen |= bit;
      if (p.value.is_int()) {
        ints |= bit;
        v[k] = p.value.i;
      }
    }
  }
  int64_t get(Slot k, int64_t fallback) const { return ints >> k & 1u ? v[k] : fallback; }
};

}  // namespace

TaskLoad task_load(const Program& p, const Task& t) {
  using F = LoadParams;
  TaskLoad l{static_cast<double>(t.est_bytes), static_cast<double>(t.est_flops)};
  const bool gemv = t.op == Op::GEMV_TILE || t.op == Op::GEMM_TILE;
  const bool attention = t.op == Op::ATTENTION_TILE;
  if (!gemv && !attention && (l.bytes != 0 || l.flops != 0)) return l;
  LoadParams params;
  if (gemv || attention) params.read(t);
  if (attention) {
    // A batched tile (a rank-3 query) walks each sequence's window for each of its heads.
    double batch = 1;
    if (!t.inputs.empty() && t.inputs[0] >= 0 &&
        t.inputs[0] < static_cast<int64_t>(p.buffers.size()))
      batch = static_cast<double>(
          std::max<int64_t>(1, attention_batch(p.buffers[static_cast<size_t>(t.inputs[0])].shape)));
    l.heads = static_cast<double>(std::max<int64_t>(0, params.get(F::n_heads, 1)));
    l.steps = batch * static_cast<double>(std::max<int64_t>(0, params.get(F::kv_len, 0)));
    l.width = static_cast<double>(std::max<int64_t>(0, params.get(F::head_dim, 0)));
  }
  if (gemv) l.dequant = params.get(F::qdtype, 0) != 0;
  if (l.bytes != 0 || l.flops != 0) return l;
  bool weight = false;
  for (int64_t b : t.inputs) {
    if (b < 0 || b >= static_cast<int64_t>(p.buffers.size())) continue;
    const Buffer& buf = p.buffers[static_cast<size_t>(b)];
    if (buf.kind == BufferKind::WEIGHT || buf.kind == BufferKind::KV_CACHE) {
      l.bytes += static_cast<double>(buf.nbytes());
      weight = weight || buf.kind == BufferKind::WEIGHT;
    }
  }
  if (gemv) {
    const auto m = static_cast<double>(params.get(F::M_tile, 1));
    const auto k = static_cast<double>(params.get(F::K, 0));
    const auto n = static_cast<double>(params.get(F::N_tile, 0));
    l.flops = 2 * m * k * n;
    if (!weight) l.bytes = k * n * 2;
  } else if (attention) {
    l.flops = 4.0 * static_cast<double>(params.get(F::n_heads, 1)) *
              static_cast<double>(params.get(F::kv_len, 0)) *
              static_cast<double>(params.get(F::head_dim, 0));
  }
  return l;
}

namespace {

// index_buffer_tasks for one choice of the indexes it builds, known at compile time (the
// element loops then hold no tests of which indexes to fill).
template <bool kReaders, bool kWriters, bool kUsers>
void index_some(const Program& p, BufferTasks* readers, BufferTasks* writers, BufferTasks* users) {
  constexpr uint32_t kPrefetchTasks = 8;
  // One counting sort per index, their two passes over the tasks shared (a validator runs this
  // for every candidate of a search).
  const size_t nb = p.buffers.size();
  auto in_range = [nb](int64_t b) { return static_cast<uint64_t>(b) < nb; };
  BufferTasks* const all[] = {readers, writers, users};
  for (BufferTasks* x : all)
    if (x) x->off.assign(nb + 1, 0);
  auto each = [&](auto&& emit) {
    for (uint32_t id = 0; id < p.tasks.size(); ++id) {
      const Task& t = p.tasks[id];
      // Often the first pass of a proof: the blocks of the tasks ahead are asked for now.
      if (id + kPrefetchTasks < p.tasks.size()) prefetch_blocks(p.tasks[id + kPrefetchTasks]);
      if constexpr (kReaders || kUsers)
        for (int64_t b : t.inputs)
          if (in_range(b)) {
            if constexpr (kReaders) emit(*readers, static_cast<size_t>(b), id);
            if constexpr (kUsers) emit(*users, static_cast<size_t>(b), id);
          }
      if constexpr (kWriters || kUsers)
        for (int64_t b : t.outputs)
          if (in_range(b)) {
            if constexpr (kWriters) emit(*writers, static_cast<size_t>(b), id);
            if constexpr (kUsers) emit(*users, static_cast<size_t>(b), id);
          }
    }
  };
  each([](BufferTasks& x, size_t b, uint32_t) { ++x.off[b + 1]; });
  for (BufferTasks* x : all) {
    if (!x) continue;
    for (size_t b = 0; b < nb; ++b) x->off[b + 1] += x->off[b];
    x->list.resize(x->off[nb]);
    x->fill.assign(x->off.begin(), x->off.end() - 1);
  }
  each([](BufferTasks& x, size_t b, uint32_t id) { x.list[x.fill[b]++] = id; });
}

}  // namespace

void index_buffer_tasks(const Program& p, BufferTasks* readers, BufferTasks* writers,
                        BufferTasks* users) {
  using Fn = void (*)(const Program&, BufferTasks*, BufferTasks*, BufferTasks*);
  static constexpr Fn kBy[8] = {index_some<false, false, false>, index_some<true, false, false>,
                                index_some<false, true, false>,  index_some<true, true, false>,
                                index_some<false, false, true>,  index_some<true, false, true>,
                                index_some<false, true, true>,   index_some<true, true, true>};
  kBy[(readers ? 1 : 0) | (writers ? 2 : 0) | (users ? 4 : 0)](p, readers, writers, users);
}

}  // namespace amk::ir
