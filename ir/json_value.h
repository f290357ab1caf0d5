// A verbatim JSON value (meta, unknown fields, recipes) that keeps key order and number kinds.
#pragma once

#include <memory>

#include <nlohmann/json_fwd.hpp>

namespace amk::ir {

/// A value wrapper over nlohmann::ordered_json; null when empty. Keeps heavy headers out. Copies
/// share the JSON until one of them is changed through mut() (copy on write), so copying a
/// program copies no recipe or meta.
class JsonValue {
 public:
  JsonValue() = default;
  /// Wraps a JSON value (moved in).
  explicit JsonValue(nlohmann::ordered_json j);
  // Inline: copying a null value (most tasks' params and extras) is then a test, not a call.
  JsonValue(const JsonValue& o) = default;
  JsonValue(JsonValue&& o) noexcept = default;
  JsonValue& operator=(const JsonValue& o) = default;
  JsonValue& operator=(JsonValue&& o) noexcept = default;
  ~JsonValue() = default;

  /// An empty JSON object `{}`.
  static JsonValue object();
  /// True when the value is JSON null (or was never set).
  bool is_null() const;
  /// True when no value was ever set (a default JsonValue; is_null() holds too).
  bool unset() const { return !p_; }
  /// True when the value is an object with no members, or null.
  bool empty() const;
  /// The wrapped value (a static null when empty).
  const nlohmann::ordered_json& json() const;
  /// Mutable access; materialises a null value first.
  nlohmann::ordered_json& mut();
  /// Deep equality that keeps key order and tells 1, 1.0 and true apart.
  bool operator==(const JsonValue& o) const;

 private:
  std::shared_ptr<nlohmann::ordered_json> p_;
};

}  // namespace amk::ir
