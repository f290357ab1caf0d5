// Semantic diff of two programs: entities matched by label/name (or id), fields compared by
// meaning.
#pragma once

#include <string>
#include <vector>

#include "ir/json_value.h"
#include "ir/program.h"

namespace amk::ir {

/// How tasks (and buffers, counters) are paired between the two programs.
enum class DiffMatch : uint8_t { Auto, Id, Label };

/// One changed field: a dotted path and the old and new values.
struct FieldChange {
  std::string field;
  JsonValue a, b;
  bool a_absent = false, b_absent = false;  ///< the field does not exist on that side
};

/// An added, removed or changed entity (task, buffer, counter, page, meta, target, config...).
struct EntityChange {
  enum class Kind : uint8_t { Added, Removed, Changed };
  Kind kind = Kind::Changed;
  std::string entity;  ///< "task", "buffer", "counter", "page", "program"
  std::string key;     ///< label, name or "#id"
  int64_t id_a = -1, id_b = -1;
  std::vector<FieldChange> fields;
};

/// The diff: a list of changes in a stable order and how tasks were matched.
struct DiffResult {
  bool by_label = false;
  std::vector<EntityChange> changes;
  /// True when nothing differs.
  bool same() const { return changes.empty(); }
};

/// Compares two programs. Auto matches tasks by label when labels are unique in both.
DiffResult diff_programs(const Program& a, const Program& b, DiffMatch match = DiffMatch::Auto);
/// Human rendering, one line per change plus indented fields and a summary line.
std::string format_diff(const DiffResult& d);
/// The diff as one JSON document ({same, match, summary, changes}).
std::string diff_to_json(const DiffResult& d);

/// Task changes of one layer (a label's first segment: "L3", "embed", "lm_head").
struct LayerChanges {
  std::string layer;
  size_t changed = 0, added = 0, removed = 0;
};
/// Task changes per layer, layers in program order (b's, then what only a has); "(no label)"
/// gathers unlabelled tasks.
std::vector<LayerChanges> diff_layers(const DiffResult& d, const Program& a, const Program& b);
/// The layer a task label belongs to: its text up to the first '.' or '['.
std::string layer_of(std::string_view label);

}  // namespace amk::ir
