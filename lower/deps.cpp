#include "lower/deps.h"

namespace amk::lower {

void derive_dependencies(Plan& p) {
  TensorMap& tm = p.tensor_map;
  tm.clear();
  std::vector<Access> reads, writes;
  p.dep_off.assign(1, 0);
  p.dep_off.reserve(p.tasks.size() + 1);
  p.dep_list.clear();
  p.dep_list.reserve(p.tasks.size() * 3);
  for (size_t i = 0; i < p.tasks.size(); ++i) {
    p.tasks[i].accesses(reads, writes);
    tm.record(static_cast<uint32_t>(i), reads, writes, p.dep_list);
    p.dep_off.push_back(static_cast<uint32_t>(p.dep_list.size()));
  }
}

}  // namespace amk::lower
