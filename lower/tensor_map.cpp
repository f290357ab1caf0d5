#include "lower/tensor_map.h"

#include <algorithm>

namespace amk::lower {
namespace {

bool overlaps(const Region& a, const Region& b) {
  if (a.axis < 0 || b.axis < 0 || a.axis != b.axis) return true;
  return a.lo < b.hi && b.lo < a.hi;
}

bool covers(const Region& outer, const Region& inner) {
  return outer.axis < 0 ||
         (outer.axis == inner.axis && outer.lo <= inner.lo && inner.hi <= outer.hi);
}

}  // namespace

void TensorMap::clear() {
  for (auto& v : by_buffer_) v.clear();
}

void TensorMap::record(uint32_t task, std::span<const Access> reads, std::span<const Access> writes,
                       std::vector<uint32_t>& deps) {
  if (seen_.size() <= task) seen_.resize(task + 1, 0);
  if (++stamp_ == 0) {
    std::fill(seen_.begin(), seen_.end(), 0);
    stamp_ = 1;
  }
  auto dep = [&](uint32_t t) {
    if (t == task || seen_[t] == stamp_) return;
    seen_[t] = stamp_;
    deps.push_back(t);
  };
  auto slot = [&](int64_t b) -> std::vector<Entry>& {
    const auto i = static_cast<size_t>(b);
    if (by_buffer_.size() <= i) by_buffer_.resize(i + 1);
    return by_buffer_[i];
  };
  for (const Access& a : reads)
    for (const Entry& e : slot(a.buffer))
      if (e.write && overlaps(e.region, a.region)) dep(e.task);
  for (const Access& a : writes)
    for (const Entry& e : slot(a.buffer))
      if (overlaps(e.region, a.region)) dep(e.task);
  // Stale-entry cleanup: a write supersedes every entry it covers (later accesses that overlap
  // those entries overlap this write too, and this write already follows them).
  for (const Access& a : writes) {
    auto& v = slot(a.buffer);
    std::erase_if(v, [&](const Entry& e) { return e.task != task && covers(a.region, e.region); });
    v.push_back({task, a.region, true});
  }
  for (const Access& a : reads) slot(a.buffer).push_back({task, a.region, false});
}

void derive_dependencies(Plan& p) {
  TensorMap tm;
  p.deps.assign(p.tasks.size(), {});
  for (size_t i = 0; i < p.tasks.size(); ++i)
    tm.record(static_cast<uint32_t>(i), p.tasks[i].reads, p.tasks[i].writes, p.deps[i]);
}

}  // namespace amk::lower
