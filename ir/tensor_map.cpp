#include "ir/tensor_map.h"

#include <algorithm>

namespace amk::ir {

bool overlaps(const Region& a, const Region& b) {
  if (a.axis < 0 || b.axis < 0 || a.axis != b.axis) return true;
  return a.lo < b.hi && b.lo < a.hi;
}

bool covers(const Region& outer, const Region& inner) {
  return outer.axis < 0 ||
         (outer.axis == inner.axis && outer.lo <= inner.lo && inner.hi <= outer.hi);
}

void TensorMap::clear() {
  for (auto& v : by_buffer_) {
    v.writes.clear();
    v.reads.clear();
  }
}

void TensorMap::record(uint32_t task, std::span<const Access> reads, std::span<const Access> writes,
                       std::vector<uint32_t>& deps) {
  if (seen_.size() <= task) seen_.resize(std::max<size_t>(task + 1, seen_.size() * 2), 0);
  if (++stamp_ == 0) {
    std::fill(seen_.begin(), seen_.end(), 0);
    stamp_ = 1;
  }
  auto dep = [&](uint32_t t) {
    if (t == task || seen_[t] == stamp_) return;
    seen_[t] = stamp_;
    deps.push_back(t);
  };
  auto slot = [&](int64_t b) -> Slot& {
    const auto i = static_cast<size_t>(b);
    if (by_buffer_.size() <= i) by_buffer_.resize(i + 1);
    return by_buffer_[i];
  };
  for (const Access& a : reads)  // RAW
    for (const Entry& e : slot(a.buffer).writes)
      if (overlaps(e.region, a.region)) dep(e.task);
  for (const Access& a : writes) {  // WAW, WAR
    Slot& s = slot(a.buffer);
    for (const Entry& e : s.writes)
      if (overlaps(e.region, a.region)) dep(e.task);
    for (const Entry& e : s.reads)
      if (overlaps(e.region, a.region)) dep(e.task);
  }
  // Stale-entry cleanup: a write supersedes every entry it covers (later accesses that overlap
  // those entries overlap this write too, and this write already follows them).
  for (const Access& a : writes) {
    Slot& s = slot(a.buffer);
    auto covered = [&](const Entry& e) { return e.task != task && covers(a.region, e.region); };
    std::erase_if(s.writes, covered);
    std::erase_if(s.reads, covered);
    s.writes.push_back({task, a.region});
  }
  for (const Access& a : reads) slot(a.buffer).reads.push_back({task, a.region});
}

void TensorMap::forget_before(uint32_t task) {
  auto stale = [&](const Entry& e) { return e.task < task; };
  for (Slot& s : by_buffer_) {
    std::erase_if(s.writes, stale);
    std::erase_if(s.reads, stale);
  }
}

size_t TensorMap::entries() const {
  size_t n = 0;
  for (const Slot& s : by_buffer_) n += s.writes.size() + s.reads.size();
  return n;
}


}  // namespace amk::ir
