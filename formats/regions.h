// Internal: tensor regions of another runtime's tasks (a base tensor + element offset + dims +
// strides) turned into amk buffers, so amk's whole-buffer race rules apply to them exactly.
//
// amk's rules read a buffer as one value: every reader must follow every writer of it, writers of
// it must be disjoint tiles or ordered, and buffers that share memory (a page) must have ordered
// live ranges. A foreign tensor is reused and written in parts, so its accesses are split: the
// writes that a read sees for the first time together form one buffer (a write class); a read
// inputs the classes it overlaps (and the tensor's prior contents where no write reached); the
// classes of one tensor whose footprints overlap share a page, which proves write-after-read and
// write-after-write across them. A write's tile within its class becomes the task's
// m_off/M_tile/n_off/N_tile params so that disjoint writers of one class are no race.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ir/program.h"

namespace amk::formats::detail {

/// One element type: amk's dtype (the nearest: amk has no 8-byte type, so those are I32 and a
/// buffer's bytes are what amk's dtype makes of its element count) and its size in bits.
struct ElemType {
  ir::DType dtype = ir::DType::U8;
  int64_t bits = 8;
};

/// Whether an access at element offset `offset` with these dims and strides touches only elements
/// in [INT64_MIN, INT64_MAX] at both of its ends (regions are formed in 64-bit arithmetic; a
/// reader refuses an access that does not fit rather than proving a wrapped one).
bool region_fits(uint64_t offset, std::span<const int64_t> dims, std::span<const int64_t> strides);

/// An amk task's access to buffer `b` as a strided region in elements: the whole buffer (row-major,
/// at most `max_dims` dims, leading ones folded), or a GEMV/GEMM tile's columns (and rows) of its
/// output.
struct Region {
  int64_t offset = 0;
  std::vector<int64_t> dims, strides;
};
Region region_of(const ir::Program& p, const ir::Task& t, int64_t b, bool output, size_t max_dims);

/// Collects the accesses of every task in program order (reads of a task before its writes),
/// then writes buffers, pages and the tasks' inputs, outputs and tile params.
class RegionMap {
 public:
  /// A tensor (a base pointer / buffer address) and its element type; returns its id.
  int32_t tensor(std::string name, ElemType type);
  /// Room for `accesses` accesses of `extents` dims and strides in all.
  void reserve(size_t accesses, size_t extents);
  /// An access of `task` to `tensor` at element offset `offset` with dims and strides (elements,
  /// as many of each). Calls must come in task order; a task's reads before its writes.
  void access(uint32_t task, int32_t tensor, bool write, int64_t offset,
              std::span<const int64_t> dims, std::span<const int64_t> strides);
  /// Creates the buffers and pages in `p` and fills its tasks' inputs, outputs and tile params,
  /// on `threads` threads (0: ir::max_threads()); the program is the same for any count.
  void build(ir::Program& p, size_t threads = 0);

  /// An access as access() took it: its dims, then its strides, at `extents` in the extents.
  struct Access {
    int64_t offset;
    uint32_t task;
    int32_t tensor;
    uint32_t extents;
    uint32_t rank : 31;  // dims (and strides) of the access
    uint32_t write : 1;
  };
  /// A tensor as tensor() took it.
  struct Tensor {
    std::string name;
    ElemType type;
  };

 private:
  std::vector<Tensor> tensors_;
  std::vector<Access> accesses_;
  std::vector<int64_t> extents_;
};

}  // namespace amk::formats::detail
