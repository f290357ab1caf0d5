#include "ir/tensor_map.h"

#include <algorithm>
#include <bit>

namespace amk::ir {

bool overlaps(const Region& a, const Region& b) {
  if (a.axis < 0 || b.axis < 0 || a.axis != b.axis) return true;
  return a.lo < b.hi && b.lo < a.hi;
}

bool covers(const Region& outer, const Region& inner) {
  return outer.axis < 0 ||
         (outer.axis == inner.axis && outer.lo <= inner.lo && inner.hi <= outer.hi);
}

void TensorMap::push(int64_t buffer, bool read, uint32_t task, const Region& r) {
  int32_t i;
  if (free_ >= 0) {
    i = free_;
    free_ = pool_[static_cast<size_t>(i)].next;
    pool_[static_cast<size_t>(i)] = {task, -1, r};
  } else {
    i = static_cast<int32_t>(pool_.size());
    pool_.push_back({task, -1, r});
  }
  Slot& s = by_buffer_[static_cast<size_t>(buffer)];
  List& l = read ? s.reads : s.writes;
  const bool along = r.axis >= 0 && r.lo < r.hi;
  if (l.tail >= 0) {
    pool_[static_cast<size_t>(l.tail)].next = i;
    if (l.axis >= 0 && along && r.axis == l.axis)
      l.end = std::max(l.end, r.hi);
    else
      l.axis = kMixed;
  } else {
    l.head = i;
    l.axis = along ? r.axis : kMixed;
    l.end = r.hi;
  }
  l.tail = i;
  ++live_entries_;
  expiry_.push_back({buffer, task, i, read});
}

void TensorMap::free_node(int32_t i) {
  Node& n = pool_[static_cast<size_t>(i)];
  n.task = kFreed;
  n.next = free_;
  free_ = i;
  --live_entries_;
}

template <class Pred>
void TensorMap::erase_if(List& l, Pred&& stale) {
  int32_t prev = -1;
  for (int32_t i = l.head; i >= 0;) {
    Node& n = pool_[static_cast<size_t>(i)];
    const int32_t next = n.next;
    if (stale(n)) {
      (prev >= 0 ? pool_[static_cast<size_t>(prev)].next : l.head) = next;
      free_node(i);
    } else {
      prev = i;
    }
    i = next;
  }
  l.tail = prev;
  if (l.head < 0) l.axis = kEmpty;
}

TensorMap::Slot& TensorMap::slot(int64_t b) {
  const auto i = static_cast<size_t>(b);
  if (by_buffer_.size() <= i) by_buffer_.resize(std::max(i + 1, by_buffer_.size() * 2));
  return by_buffer_[i];
}

void TensorMap::forget_before(uint32_t task) {
  size_t h = expiry_head_;
  for (; h < expiry_.size() && expiry_[h].task < task; ++h) {
    const Expiry& e = expiry_[h];
    // Covered by a later write, the entry is gone already (its node freed, perhaps reused by a
    // later task): nothing to do. Otherwise every entry of its list pushed before it has been
    // popped (or covered) already, so it is the head.
    if (pool_[static_cast<size_t>(e.node)].task != e.task) continue;
    Slot& s = by_buffer_[static_cast<size_t>(e.buffer)];
    List& l = e.read ? s.reads : s.writes;
    l.head = pool_[static_cast<size_t>(e.node)].next;
    if (l.head < 0) {
      l.tail = -1;
      l.axis = kEmpty;
    }
    free_node(e.node);
  }
  expiry_head_ = h;
  if (expiry_head_ >= 4096 && expiry_head_ * 2 >= expiry_.size()) {  // amortised O(1) per entry
    expiry_.erase(expiry_.begin(), expiry_.begin() + static_cast<std::ptrdiff_t>(expiry_head_));
    expiry_head_ = 0;
  }
}

size_t TensorMap::entries() const {
  return live_entries_;
}

void TensorMap::clear() {
  by_buffer_.assign(by_buffer_.size(), {});
  pool_.clear();
  free_ = -1;
  live_entries_ = 0;
  expiry_.clear();
  expiry_head_ = 0;
}

void TensorMap::record(uint32_t task, std::span<const Access> reads, std::span<const Access> writes,
                       std::vector<uint32_t>& deps, std::vector<uint8_t>* war_only) {
  // Every dependency is a task with a live entry, all of them in [oldest, task]: the stamps are a
  // ring over that span (all tasks so far when nothing is forgotten; the live window in the
  // orchestrator), so memory follows the live entries, not the tasks ever recorded.
  const uint32_t oldest = expiry_head_ < expiry_.size() ? expiry_[expiry_head_].task : task;
  const size_t span = size_t{task} - oldest + 1;
  if (seen_.size() < span) {
    seen_.assign(std::bit_ceil(span), 0);
    pos_.resize(seen_.size());
  }
  const size_t ring = seen_.size() - 1;
  if (++stamp_ == 0) {
    std::fill(seen_.begin(), seen_.end(), 0);
    stamp_ = 1;
  }
  auto dep = [&](uint32_t t, bool war) {
    if (t == task) return;
    const size_t i = t & ring;
    if (seen_[i] == stamp_) {
      if (war_only && !war) (*war_only)[pos_[i]] = 0;
      return;
    }
    seen_[i] = stamp_;
    deps.push_back(t);
    if (war_only) {
      pos_[i] = static_cast<uint32_t>(war_only->size());
      war_only->push_back(war);
    }
  };
  auto each = [&](const List& l, const Region& r, bool war) {
    if (l.past(r)) return;
    for (int32_t i = l.head; i >= 0;) {
      const Node& n = pool_[static_cast<size_t>(i)];
      if (overlaps(n.region, r)) dep(n.task, war);
      i = n.next;
    }
  };
  for (const Access& a : reads) each(slot(a.buffer).writes, a.region, false);  // RAW
  for (const Access& a : writes) {                                             // WAW, WAR
    Slot& s = slot(a.buffer);
    each(s.writes, a.region, false);
    each(s.reads, a.region, true);
  }
  // Stale-entry cleanup: a write supersedes every entry it covers (later accesses that overlap
  // those entries overlap this write too, and this write already follows them).
  for (const Access& a : writes) {
    Slot& s = slot(a.buffer);
    auto covered = [&](const Node& e) { return e.task != task && covers(a.region, e.region); };
    if (!s.writes.past(a.region)) erase_if(s.writes, covered);
    if (!s.reads.past(a.region)) erase_if(s.reads, covered);
    push(a.buffer, false, task, a.region);
  }
  for (const Access& a : reads) push(a.buffer, true, task, a.region);
}

}  // namespace amk::ir
