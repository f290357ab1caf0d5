// Three-way merges of schedules (git's merge driver): ScheduleConfigs knob by knob, programs task
// by task (by label), and a merged program is proven before it is returned.
#pragma once

#include <string>
#include <string_view>

#include "ir/result.h"

namespace amk::app {

/// Merges the changes BASE -> OURS and BASE -> THEIRS of a ScheduleConfig file: different knobs,
/// different `tiling` entries, different `sm_assignment` keys and different `fusion_grouping`
/// entries combine. The same knob changed two ways is a `merge.conflict` error per knob (pointer,
/// both values). Returns the merged knobs (those the files set) as canonical JSON text.
ir::Result<std::string> merge_config_texts(std::string_view base, std::string_view ours,
                                           std::string_view theirs);
/// Merges programs by task label (buffers by name, counters by the labels of their producers,
/// waits as sets): disjoint edits combine; one entity changed two ways is `merge.conflict`. The
/// merged program is validated: a combination the validator rejects is a `merge.unsafe` error
/// followed by the validator's errors (rule and tasks). Returns AMK's canonical bytes.
ir::Result<std::string> merge_program_texts(std::string_view base, std::string_view ours,
                                            std::string_view theirs);

}  // namespace amk::app
