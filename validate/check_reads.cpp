// AMK step 5 without AMK's 8000-task cap: every ACTIVATION/IO/KV read must have every other
// writer of its buffer as a strict ancestor (RAW, KV); a read of a buffer nobody writes is an
// error, a read of one's own unwritten output a warning.
#include <algorithm>

#include <fmt/format.h>

#include "validate/hazards.h"
#include "validate/parallel.h"

namespace amk::validate {

// The rules this file checks, in emission order (rules() lists every family's).
constexpr Rule kReadNeverProduced{"read.never-produced",
                                  "a transient buffer is read but never written", true};
constexpr Rule kRaceRaw{"race.raw", "a read not ordered after every writer of the buffer", true};
constexpr Rule kRaceKv{"race.kv", "a KV cache read not ordered after this pass's append", true};
constexpr Rule kReadOwnOutput{
    "read.own-output", "warning: a task reads its own output in place with no producer", true};

std::span<const Rule> read_rules() {
  static constexpr Rule kList[] = {kReadNeverProduced, kRaceRaw, kRaceKv, kReadOwnOutput};
  return kList;
}

namespace {

std::string py_list(const std::vector<uint32_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

void query_reads(Hazards& h) {
  Context& c = h.c;
  const ir::Graph& g = c.g;
  const auto n_tasks = c.p.tasks.size();
  // One query per (read, writer counter) that is not a direct wait. Only reads that need a
  // second look (a query, a sibling writer, no writer, or only themselves as writer) are
  // remembered, so a program whose reads all wait directly costs one pass. The tasks are scanned
  // in list order, the order of their memory (a big program's topological order jumps about it),
  // and the reads remembered are put in AMK's order (topological, then input order) at the end.
  // A big program's tasks are cut into ranges scanned on several threads: the first adds its
  // queries to Reach, the others list theirs, renumbered when they are added after it, in order.
  struct Part {
    std::vector<int64_t> raw_q;
    std::vector<Hazards::Read> reads;
    std::vector<std::pair<uint32_t, uint32_t>> queries;  // (writer, reader)
  };
  const size_t parts = parallel_parts(n_tasks, c.s.threads);
  std::vector<Part> rest(parts - 1);
  auto& raw_q = c.s.raw_q;
  raw_q.clear();
  run_parts(n_tasks, parts, [&](size_t k, size_t begin, size_t end) {
    std::vector<int64_t>& q_out = k == 0 ? raw_q : rest[k - 1].raw_q;
    std::vector<Hazards::Read>& reads = k == 0 ? h.reads : rest[k - 1].reads;
    auto query = [&](uint32_t w, uint32_t tid) {
      if (k == 0) return static_cast<int64_t>(c.s.reach.add(w, tid));
      auto& qs = rest[k - 1].queries;
      qs.emplace_back(w, tid);
      return static_cast<int64_t>(qs.size() - 1);
    };
    // The arrays the scan reads, through locals (its pushes would otherwise reload them).
    const ir::Task* const tasks = c.p.tasks.data();
    const uint32_t* const out_slot = g.out_slots().data();
    for (size_t i = begin; i < end; ++i) {
      const auto tid = static_cast<uint32_t>(i);
      const ir::Task& t = tasks[tid];
      const uint32_t own = out_slot[tid];
      for (uint32_t k_in = 0; k_in < t.inputs.size(); ++k_in) {
        const int64_t b = t.inputs[k_in];
        if (h.skip_read(b)) continue;
        const auto ws = c.writers(b);
        const auto gr = h.groups(b);
        // A read whose every writer counter is waited on directly is settled here; only the
        // others are remembered, with one answer slot per counter. (Its own counter is never
        // among those waited on: a self-wait is a cycle, and races are proved on acyclic graphs.)
        bool attention = ws.empty() || (ws.size() == 1 && ws[0] == tid);
        for (size_t j = 0; j < gr.size() && !attention; ++j)
          attention = !c.waits_on(tid, gr[j].first);
        if (!attention) continue;
        reads.push_back({tid, k_in, static_cast<uint32_t>(q_out.size())});
        for (auto [slot, w] : gr)
          q_out.push_back(slot == own             ? kDirect - 1  // the reader's own counter
                          : c.waits_on(tid, slot) ? kDirect
                                                  : query(w, tid));
      }
    }
  });
  for (Part& part : rest) {
    const auto q_base = static_cast<int64_t>(c.s.reach.size());
    const auto raw_base = static_cast<uint32_t>(raw_q.size());
    for (auto [w, tid] : part.queries) c.s.reach.add(w, tid);
    for (int64_t q : part.raw_q) raw_q.push_back(q >= 0 ? q + q_base : q);
    for (Hazards::Read r : part.reads) {
      r.first_q += raw_base;
      h.reads.push_back(r);
    }
  }
  // AMK's order for the reports: a task's reads stay together, in input order.
  const auto& pos = g.topo_pos();
  auto amk_order = [&](const Hazards::Read& x, const Hazards::Read& y) {
    return pos[x.task] != pos[y.task] ? pos[x.task] < pos[y.task] : x.input < y.input;
  };
  if (!std::is_sorted(h.reads.begin(), h.reads.end(), amk_order))
    std::sort(h.reads.begin(), h.reads.end(), amk_order);
}

void report_reads(Hazards& h) {
  // In AMK's order: topological, then input order.
  Context& c = h.c;
  const ir::Program& p = c.p;
  auto& missing = c.s.missing;
  auto& ordered = c.s.ordered;
  for (const Hazards::Read& ev : h.reads) {
    const uint32_t tid = ev.task;
    const ir::Task& t = p.tasks[tid];
    const int64_t b = t.inputs[ev.input];
    const ir::Buffer& buf = c.buf(b);
    auto ws = c.writers(b);
    auto ptr = [&] { return ir::task_pointer(tid, fmt::format("inputs/{}", ev.input)); };
    if (ws.empty()) {
      c.error(kReadNeverProduced,
              fmt::format("{} reads buffer #{} ('{}') that is never produced", task_ref(t, tid), b,
                          buf.name),
              ptr());
      continue;
    }
    auto gr = h.groups(b);
    ordered.resize(gr.size());
    for (size_t j = 0; j < gr.size(); ++j) {
      const int64_t q = c.s.raw_q[ev.first_q + j];
      ordered[j] = q == kDirect || (q >= 0 && c.s.reach.answer(static_cast<size_t>(q)));
    }
    missing.clear();
    bool others = false;
    for (uint32_t w : ws) {
      if (w == tid) continue;
      others = true;
      size_t j = 0;
      while (gr[j].first != c.g.out_slot(w)) ++j;
      if (!ordered[j]) missing.push_back(w);
    }
    if (!missing.empty()) {
      const bool kv = buf.kind == ir::BufferKind::KV_CACHE;
      std::vector<ir::Note> notes;
      for (uint32_t w : missing) {
        if (notes.size() == 4) break;
        notes.push_back({fmt::format("writer {} has no happens-before path to task {}: add a "
                                     "wait on counter {} (threshold = its producer count)",
                                     task_ref(p.tasks[w], w), tid, p.tasks[w].out_counter),
                         ir::task_pointer(w)});
      }
      c.error(
          kv ? kRaceKv : kRaceRaw,
          fmt::format("{} reads {} #{} ('{}') but writer task(s) {} are NOT ordered before "
                      "it, data RACE",
                      task_ref(t, tid), kv ? "KV cache" : "buffer", b, buf.name, py_list(missing)),
          ptr(), std::move(notes));
    } else if (!others && buf.kind != ir::BufferKind::KV_CACHE) {
      c.warn(kReadOwnOutput,
             fmt::format("{} reads buffer #{} ('{}') in place with no external producer "
                         "(reads its own uninitialized output?)",
                         task_ref(t, tid), b, buf.name),
             ptr());
    }
  }
}

}  // namespace amk::validate
