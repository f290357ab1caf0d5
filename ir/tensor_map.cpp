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
  for (int64_t b : live_) {
    by_buffer_[static_cast<size_t>(b)].writes.clear();
    by_buffer_[static_cast<size_t>(b)].reads.clear();
    in_live_[static_cast<size_t>(b)] = 0;
  }
  live_.clear();
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
    if (by_buffer_.size() <= i) {
      by_buffer_.resize(std::max(i + 1, by_buffer_.size() * 2));
      in_live_.resize(by_buffer_.size(), 0);
    }
    if (!in_live_[i]) {
      in_live_[i] = 1;
      live_.push_back(b);
    }
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
  std::erase_if(live_, [&](int64_t b) {
    Slot& s = by_buffer_[static_cast<size_t>(b)];
    std::erase_if(s.writes, stale);
    std::erase_if(s.reads, stale);
    const bool empty = s.writes.empty() && s.reads.empty();
    if (empty) in_live_[static_cast<size_t>(b)] = 0;
    return empty;
  });
}

size_t TensorMap::entries() const {
  size_t n = 0;
  for (int64_t b : live_) {
    const Slot& s = by_buffer_[static_cast<size_t>(b)];
    n += s.writes.size() + s.reads.size();
  }
  return n;
}

}  // namespace amk::ir
