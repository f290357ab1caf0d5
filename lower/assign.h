// Pass 4, assign workers: sets Task.sm by sm_assignment: round_robin; load_balance = the best of
// earliest-finish list schedules over the cost model (task order, critical-path order, which
// renumbers the tasks, and round robin itself); or an explicit {task id: sm} map, the rest placed
// by earliest finish in task order.
#pragma once

#include <memory>

#include "ir/result.h"
#include "lower/plan.h"

namespace amk::lower {

/// Assigns every task a worker; an error names /config/sm_assignment/ID on a bad map. Reads
/// Plan::dag when set (it fills its structure part once).
ir::Status assign_workers(Plan& p);

/// An empty placement view for Plan::dag.
std::shared_ptr<PlacementDag> new_placement_dag();

}  // namespace amk::lower
