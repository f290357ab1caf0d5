#include "ir/json_value.h"

#include <atomic>
#include <cstdint>

#include <nlohmann/json.hpp>

namespace amk::ir {

struct JsonValue::Shared {
  std::atomic<uint64_t> refs{1};
  nlohmann::ordered_json j;
};

void JsonValue::retain(Shared* p) noexcept {
  p->refs.fetch_add(1, std::memory_order_relaxed);
}

void JsonValue::release(Shared* p) noexcept {
  if (p->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete p;
}

JsonValue::JsonValue(nlohmann::ordered_json j)
    : p_(j.is_null() ? nullptr : new Shared{{1}, std::move(j)}) {}

JsonValue JsonValue::object() {
  return JsonValue(nlohmann::ordered_json::object());
}

bool JsonValue::is_null() const {
  return !p_ || p_->j.is_null();
}

bool JsonValue::empty() const {
  return !p_ || p_->j.is_null() || (p_->j.is_object() && p_->j.empty());
}

const nlohmann::ordered_json& JsonValue::json() const {
  static const nlohmann::ordered_json kNull;
  return p_ ? p_->j : kNull;
}

nlohmann::ordered_json& JsonValue::mut() {
  if (!p_) {
    p_ = new Shared{{1}, {}};
  } else if (p_->refs.load(std::memory_order_acquire) > 1) {  // shared with a copy: this one
    Shared* own = new Shared{{1}, p_->j};                     // gets its own
    release(p_);
    p_ = own;
  }
  return p_->j;
}

namespace {
// Equality that also tells 1 from 1.0 and true from 1 (nlohmann's == compares numbers by value).
bool strict_equal(const nlohmann::ordered_json& a, const nlohmann::ordered_json& b) {
  // Signed and unsigned storage are both JSON integers; only int/float/bool kinds must differ.
  if (a.is_number_integer() && b.is_number_integer()) {
    if (a.is_number_unsigned() == b.is_number_unsigned()) return a == b;
    const auto& s = a.is_number_unsigned() ? b : a;
    const auto& u = a.is_number_unsigned() ? a : b;
    return s.get<int64_t>() >= 0 && static_cast<uint64_t>(s.get<int64_t>()) == u.get<uint64_t>();
  }
  if (a.type() != b.type()) return false;
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    auto ia = a.begin();
    auto ib = b.begin();
    for (; ia != a.end(); ++ia, ++ib)
      if (ia.key() != ib.key() || !strict_equal(ia.value(), ib.value())) return false;
    return true;
  }
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!strict_equal(a[i], b[i])) return false;
    return true;
  }
  return a == b;
}
}  // namespace

bool JsonValue::operator==(const JsonValue& o) const {
  return strict_equal(json(), o.json());
}

}  // namespace amk::ir
