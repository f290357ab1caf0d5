// A verbatim JSON value (meta, unknown fields, recipes) that keeps key order and number kinds.
#pragma once

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
  JsonValue(const JsonValue& o) noexcept : p_(o.p_) {
    if (p_) retain(p_);
  }
  JsonValue(JsonValue&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  JsonValue& operator=(const JsonValue& o) noexcept {
    if (o.p_) retain(o.p_);
    if (p_) release(p_);
    p_ = o.p_;
    return *this;
  }
  JsonValue& operator=(JsonValue&& o) noexcept {
    if (this != &o) {
      if (p_) release(p_);
      p_ = o.p_;
      o.p_ = nullptr;
    }
    return *this;
  }
  ~JsonValue() {
    if (p_) release(p_);
  }

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
  // The JSON and how many JsonValues share it (one pointer, where a shared_ptr takes two: a
  // program holds one JsonValue in each task, wait and param).
  struct Shared;
  static void retain(Shared* p) noexcept;
  static void release(Shared* p) noexcept;
  Shared* p_ = nullptr;
};

}  // namespace amk::ir
