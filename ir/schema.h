// The fields of the records AMK defines, each record's list in one table that the reader, the
// writer, the diff, the views and the search space walk (MLIR ODS's idea in plain C++): adding a
// field is one line here plus its tests.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "ir/program.h"

namespace amk::ir {

/// Where a field of record R lives: a member of one of the JSON-facing value types.
template <class R>
using Member = std::variant<std::string R::*, Number R::*, bool R::*, JsonValue R::*>;

/// One field of a record, in the order AMK writes it.
template <class R>
struct Field {
  std::string_view name;    ///< the JSON key
  Member<R> member;         ///< where the value lives
  bool required = false;    ///< a record without it is refused (`<record>.missing-field`)
  std::string_view domain;  ///< the values it takes, as people read them (docs, errors, views)
};

/// Target's fields (AMK's GpuTarget, field for field, in its order).
std::span<const Field<Target>> target_fields();
/// ScheduleConfig's fields (AMK's ScheduleConfig, in its order); every one is kept verbatim.
std::span<const Field<ScheduleConfig>> config_fields();

/// The field of `fields` named `name`, or nullptr.
template <class R>
const Field<R>* find_field(std::span<const Field<R>> fields, std::string_view name) {
  for (const Field<R>& f : fields)
    if (f.name == name) return &f;
  return nullptr;
}

/// The names of `fields`, joined by ", " (for "known: ..." messages).
template <class R>
std::string field_names(std::span<const Field<R>> fields) {
  std::string out;
  for (const Field<R>& f : fields) {
    if (!out.empty()) out += ", ";
    out += f.name;
  }
  return out;
}

/// A numeric Target field's value, or nullopt when `name` is not a numeric field of Target.
std::optional<double> target_number(const Target& t, std::string_view name);

}  // namespace amk::ir
