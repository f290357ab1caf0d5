#include "vm/foreign.h"

#include "vm/foreign_detail.h"

namespace amk::vm {

bool runs_foreign(const ir::Program& p) {
  return p.runtime && p.runtime->kind != ir::RuntimeKind::Amk;
}

ir::Result<ForeignRun> run_foreign(const ir::Program& p, const ForeignOptions& o) {
  if (!p.runtime || p.runtime->tasks.size() != p.tasks.size())
    return ir::error("vm.usage",
                     "a foreign run needs the program's runtime record with one entry per task");
  if (p.runtime->kind == ir::RuntimeKind::Mpk) return detail::run_mpk(p, o);
  return detail::run_rings(p, o);
}

}  // namespace amk::vm
