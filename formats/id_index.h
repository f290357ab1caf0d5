// Internal: 64-bit ids (PTO's task, tensor and buffer ids; hashes of MPK's tensor names) to
// positions, in one open-addressed table: a lookup probes one small array where a node-based map
// costs a cache miss or two, and a reader makes one or more for every argument and edge of a dump.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace amk::formats::detail {

/// Positions (below 2^32 - 1) by 64-bit id; the first insert of an id wins.
class IdIndex {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  /// An index with room for `n` ids before it grows.
  explicit IdIndex(size_t n = 0) { resize(slots_for(n)); }

  /// Maps `id` to `pos` unless it is mapped already; returns its position and whether it was
  /// inserted.
  std::pair<uint32_t, bool> emplace(uint64_t id, uint32_t pos) {
    if ((size_ + 1) * 4 > slots_.size() * 3) resize(slots_.size() * 2);
    Slot& s = slot(id);
    if (s.pos != kNone) return {s.pos, false};
    s = {id, pos};
    ++size_;
    return {pos, true};
  }
  /// The position of `id`, or kNone.
  uint32_t find(uint64_t id) const { return slot(id).pos; }
  /// For keys known by a 64-bit hash (several may share one; such an index takes add(), not
  /// emplace()): the position under `hash` for which same(position) holds, or kNone.
  template <class Same>
  uint32_t find(uint64_t hash, Same same) const {
    const size_t mask = slots_.size() - 1;
    for (size_t i = home(hash, mask); slots_[i].pos != kNone; i = (i + 1) & mask)
      if (slots_[i].id == hash && same(slots_[i].pos)) return slots_[i].pos;
    return kNone;
  }
  /// Adds `pos` under `hash`, beside the positions of other keys with that hash.
  void add(uint64_t hash, uint32_t pos) {
    if ((size_ + 1) * 4 > slots_.size() * 3) resize(slots_.size() * 2);
    empty_slot(hash) = {hash, pos};
    ++size_;
  }
  /// Whether no id is mapped.
  bool empty() const { return size_ == 0; }

 private:
  struct Slot {
    uint64_t id = 0;
    uint32_t pos = kNone;  // kNone: empty
  };
  std::vector<Slot> slots_;  // a power of two of them, at most three quarters full
  size_t size_ = 0;

  static size_t slots_for(size_t n) {
    size_t s = 16;
    while (s * 3 < n * 4 + 4) s *= 2;
    return s;
  }
  // The slot of `id`: its own, or the empty one where it would go (linear probing from a
  // multiplicative hash, which spreads ids that count up, as PTO's task ids do).
  static size_t home(uint64_t id, size_t mask) {
    return static_cast<size_t>((id * 0x9E3779B97F4A7C15ull) >> 32) & mask;
  }
  const Slot& slot(uint64_t id) const {
    const size_t mask = slots_.size() - 1;
    size_t i = home(id, mask);
    while (slots_[i].pos != kNone && slots_[i].id != id) i = (i + 1) & mask;
    return slots_[i];
  }
  Slot& slot(uint64_t id) { return const_cast<Slot&>(static_cast<const IdIndex*>(this)->slot(id)); }
  // The first empty slot from the home of `id`.
  Slot& empty_slot(uint64_t id) {
    const size_t mask = slots_.size() - 1;
    size_t i = home(id, mask);
    while (slots_[i].pos != kNone) i = (i + 1) & mask;
    return slots_[i];
  }
  void resize(size_t n) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(n, Slot{});
    for (const Slot& s : old)
      if (s.pos != kNone) empty_slot(s.id) = s;
  }
};

}  // namespace amk::formats::detail
