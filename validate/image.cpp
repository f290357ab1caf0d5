// Each record is taken apart by a structured binding that names every member, so a field added to
// a record stops this file compiling until it is written here too: an image never misses one.
#include "validate/image.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string_view>

#include <nlohmann/json.hpp>

#include "ir/bytes.h"
#include "ir/runtime.h"

namespace amk::validate {

namespace {

constexpr uint64_t kUnset = 0xFF;                  // a JsonValue never set (JSON types are 0..9)
constexpr uint64_t kShortKey = uint64_t{1} << 63;  // a param's key in one word (see put(Task))

// Writes values over ProgramImage::Words from its start, noting whether any word or the count
// differs from what was there; every variable-length value is preceded by its length.
class Writer {
 public:
  // `changed` is set when the writer is done: whether the words written differ from those held.
  Writer(ProgramImage::Words& to, bool& changed)
      : to_(to), changed_(changed), at_(to.w.data()), end_(at_ + to.w.size()) {}
  ~Writer() {
    const auto n = static_cast<size_t>(at_ - to_.w.data());
    // Words past the old count were compared with leftovers: the counts then differ anyway.
    changed_ = (differed_ | differ_) != 0 || n != to_.n;
    to_.n = n;
  }
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Where the next word goes (words from the start).
  size_t offset() const { return static_cast<size_t>(at_ - to_.w.data()); }
  // Whether a word written since the last call (or the start) differed from the one it replaced.
  bool take_differ() {
    const uint32_t d = differ_;
    differed_ |= d;
    differ_ = 0;
    return d != 0;
  }
  // Makes room for `k` more words: put() then writes without looking.
  void room(size_t k) {
    if (static_cast<size_t>(end_ - at_) < k) grow(k);
  }
  // Stores only a word that differs: where the image is the same (a candidate that moves only
  // its SMs, pages or config) its memory is read and never made dirty, so nothing is written
  // back.
  void put(uint64_t v) {
    if (*at_ != v) {
      differ_ = 1;
      *at_ = v;
    }
    ++at_;
  }
  void u(uint64_t v) {
    room(1);
    put(v);
  }
  void i(int64_t v) { u(static_cast<uint64_t>(v)); }
  void f(double v) { u(std::bit_cast<uint64_t>(v)); }
  // The bytes 8 to a word, the last one padded with zeros.
  void bytes(const void* data, size_t n) {
    const size_t words = (n + 7) / 8;
    if (static_cast<size_t>(end_ - at_) < words + 1) grow(words + 1);
    put(n);
    const auto* b = static_cast<const unsigned char*>(data);
    for (size_t k = 0; k + 8 <= n; k += 8) {
      uint64_t v;
      std::memcpy(&v, b + k, 8);
      put(v);
    }
    if (const size_t tail = n % 8) put(ir::bytes_word(b + n - tail, tail));
  }
  void str(std::string_view s) { bytes(s.data(), s.size()); }
  void ints(const std::vector<int64_t>& v) {
    if (static_cast<size_t>(end_ - at_) < v.size() + 1) grow(v.size() + 1);
    put(v.size());
    for (int64_t x : v) put(static_cast<uint64_t>(x));
  }
  void num(const ir::Number& n) {
    const auto& [is_int, iv, fv] = n;
    u(is_int);
    i(iv);
    f(fv);
  }
  // JSON by its types (nlohmann's `==` calls 1 and 1.0 equal; a proof's messages do not), walking
  // the containers themselves (nlohmann's iterators cost several times as much).
  void json(const nlohmann::ordered_json& j) {
    using J = nlohmann::ordered_json;
    using T = J::value_t;
    u(static_cast<uint64_t>(j.type()));
    switch (j.type()) {
      case T::null:
      case T::discarded:
        return;
      case T::boolean:
        return u(j.get_ref<const J::boolean_t&>());
      case T::number_integer:
        return i(j.get_ref<const J::number_integer_t&>());
      case T::number_unsigned:
        return u(j.get_ref<const J::number_unsigned_t&>());
      case T::number_float:
        return f(j.get_ref<const J::number_float_t&>());
      case T::string:
        return str(j.get_ref<const J::string_t&>());
      case T::array: {
        const auto& a = j.get_ref<const J::array_t&>();
        u(a.size());
        for (const J& e : a) json(e);
        return;
      }
      case T::object: {
        const auto& o = j.get_ref<const J::object_t&>();
        u(o.size());
        for (const auto& [key, value] : o) {
          str(key);
          json(value);
        }
        return;
      }
      case T::binary: {
        const auto& bin = j.get_binary();
        bytes(bin.data(), bin.size());
        u(bin.has_subtype());
        return u(bin.has_subtype() ? bin.subtype() : 0);
      }
    }
  }
  void json(const ir::JsonValue& v) {
    if (v.unset()) return u(kUnset);
    json(v.json());
  }

 private:
  void grow(size_t k) {
    const auto n = static_cast<size_t>(at_ - to_.w.data());
    to_.w.resize(std::max({to_.w.size() * 2, n + k, size_t{1024}}));
    at_ = to_.w.data() + n;
    end_ = to_.w.data() + to_.w.size();
  }
  ProgramImage::Words& to_;
  bool& changed_;
  // Whether a word written differed from the one it replaced (not a uint64_t, which the stores
  // through at_ could alias: it stays in a register across them).
  uint32_t differ_ = 0;
  uint32_t differed_ = 0;  // differ_ before the last take_differ()
  uint64_t* at_;
  uint64_t* end_;
};

// Converts to any member's type: an aggregate initialised from n of these has at least n members
// (an anonymous union counts as one).
struct AnyMember {
  template <class T>
  operator T() const;  // never called: only counted in unevaluated initialisations
};
template <class T, class... M>
constexpr bool takes_members = requires {
  T{M{}...};
};

// A JSON value in a task: one word when unset (the room for it is made by the caller).
void put_json(Writer& w, const ir::JsonValue& v) {
  if (v.unset())
    w.put(kUnset);
  else
    w.json(v.json());
}

void put(Writer& w, const ir::Task& t) {
  [[maybe_unused]] const auto& [op, inputs, outputs, out_counter, waits, params, sm, est_bytes,
                                est_flops, label, extra] = t;  // sm: ProgramImage::sm
  // Room for every word but those of set JSON values and of strings (which make their own).
  w.room(8 + inputs.size() + outputs.size() + 3 * waits.size() + 3 * params.size());
  w.put(static_cast<uint64_t>(op));
  w.ints(inputs);
  w.ints(outputs);
  w.put(static_cast<uint64_t>(out_counter));
  w.put(waits.size());
  for (const ir::Wait& x : waits) {
    const auto& [counter, threshold, wait_extra] = x;
    w.put(static_cast<uint64_t>(counter));
    w.put(static_cast<uint64_t>(threshold));
    put_json(w, wait_extra);
  }
  w.put(params.size());
  // A ParamValue is its kind, one word (an int's or a float's bits) and its JSON. Its union
  // cannot be taken apart by a structured binding, so its members are counted instead: one
  // added (even in the padding after the kind) stops this file compiling until it is written
  // here too.
  static_assert(takes_members<ir::ParamValue, AnyMember, AnyMember, AnyMember> &&
                !takes_members<ir::ParamValue, AnyMember, AnyMember, AnyMember, AnyMember>);
  static_assert(sizeof(ir::ParamValue) == 16 + sizeof(ir::JsonValue));
  for (const ir::Param& x : params) {
    const auto& [key, value] = x;
    const ir::ParamValue::Kind kind = value.kind;
    const ir::JsonValue& other = value.other;
    uint64_t bits;  // the word as stored, whichever member was written last
    std::memcpy(&bits, &value.i, sizeof bits);
    // A key of 1 to 7 bytes, with the kind, in one word when the value holds no JSON: its top
    // bit set (no key's length has it), then the kind, the length and the bytes; any other
    // param spells its key out and writes its JSON value.
    const uint64_t kind_code = static_cast<uint64_t>(kind);
    const bool short_form = other.unset() && !key.empty() && key.size() <= 7 && kind_code < 4;
    if (short_form) {
      w.room(2);
      w.put(kShortKey | kind_code << 59 | uint64_t{key.size()} << 56 |
            ir::bytes_word(key.data(), key.size()));
    } else {
      w.str(key);
      w.room(3);
      w.put(kind_code);
    }
    w.put(bits);
    if (!short_form) put_json(w, other);
  }
  w.room(4);
  w.put(static_cast<uint64_t>(est_bytes));
  w.put(static_cast<uint64_t>(est_flops));
  put_json(w, extra);
  w.str(label);
}

void put(Writer& w, const ir::Buffer& b) {
  const auto& [name, kind, dtype, shape, space, source, extra] = b;
  w.str(name);
  w.u(static_cast<uint64_t>(kind));
  w.u(static_cast<uint64_t>(dtype));
  w.ints(shape);
  w.u(static_cast<uint64_t>(space));
  w.u(source.has_value());
  w.str(source ? *source : std::string_view());
  w.json(extra);
}

void put(Writer& w, const ir::Target& t) {
  const auto& [name, sm_arch, num_sms, smem_bytes_per_sm, smem_bytes_per_block_optin, regs_per_sm,
               max_threads_per_sm, max_regs_per_thread, l2_bytes, hbm_bytes, hbm_bandwidth_gbs,
               fp16_tflops, clock_ghz, supports_cooperative, wddm_tdr, measured_bw_gbs, note,
               extra] = t;
  w.str(name);
  for (const ir::Number* n :
       {&sm_arch, &num_sms, &smem_bytes_per_sm, &smem_bytes_per_block_optin, &regs_per_sm,
        &max_threads_per_sm, &max_regs_per_thread, &l2_bytes, &hbm_bytes, &hbm_bandwidth_gbs,
        &fp16_tflops, &clock_ghz, &measured_bw_gbs})
    w.num(*n);
  w.u(supports_cooperative);
  w.u(wddm_tdr);
  w.str(note);
  w.json(extra);
}

void put(Writer& w, const ir::Runtime& r) {
  const auto& [kind, caps, scopes, tasks, twaits, extra] = r;
  w.u(static_cast<uint64_t>(kind));
  for (const std::vector<int64_t>& c : caps) w.ints(c);
  w.u(scopes.size());
  for (const ir::RuntimeScope& s : scopes) {
    const auto& [parent, depth, ring, site, begin, end] = s;
    for (int64_t v : {int64_t{parent}, int64_t{depth}, int64_t{ring}, begin, end}) w.i(v);
    w.str(site);
  }
  w.u(tasks.size());
  for (const ir::ForeignTask& t : tasks) {
    const auto& [id, task_kind, variant, scope, kernels, heap, fanin, early, manual] = t;
    w.u(id);
    for (int64_t v : {int64_t{task_kind}, int64_t{variant}, int64_t{scope}, int64_t{kernels[0]},
                      int64_t{kernels[1]}, int64_t{kernels[2]}, heap, int64_t{fanin}})
      w.i(v);
    w.u(early);
    w.u(manual);
  }
  w.u(twaits.size());
  for (const auto& [waiter, notifier] : twaits) {
    w.u(waiter);
    w.u(notifier);
  }
  w.json(extra);
}

void put(Writer& w, const std::optional<ir::PageAllocation>& pa) {
  w.u(pa.has_value());
  if (!pa) return;
  const auto& [buffer_to_page, pages, extra] = *pa;
  w.u(buffer_to_page.size());
  for (const auto& [b, pg] : buffer_to_page) {
    w.i(b);
    w.i(pg);
  }
  w.u(pages.size());
  for (const ir::Page& pg : pages) {
    const auto& [space, nbytes, live_start, live_end, page_extra] = pg;
    w.u(static_cast<uint64_t>(space));
    w.i(nbytes);
    w.i(live_start);
    w.i(live_end);
    w.json(page_extra);
  }
  w.json(extra);
}

void put(Writer& w, const std::optional<ir::ScheduleConfig>& c) {
  w.u(c.has_value());
  if (!c) return;
  const auto& [tiling, fusion_grouping, sm_assignment, pipelining_depth, page_allocation,
               threads_per_block, smem_bytes_per_block, extra] = *c;
  for (const ir::JsonValue* v :
       {&tiling, &fusion_grouping, &sm_assignment, &pipelining_depth, &page_allocation,
        &threads_per_block, &smem_bytes_per_block, &extra})
    w.json(*v);
}

}  // namespace

ProgramImage::Changes ProgramImage::rebuild(const ir::Program& p, bool tasks_kept) {
  const auto& [ir_version, abi_version, program_meta, target, buffers, counters, program_tasks,
               page_allocation, schedule_config, extra, runtime] = p;
  Changes changes;
  {
    Writer s(sm, changes.sm);  // each task's SM, written in the same pass over the tasks
    s.room(1 + 2 * program_tasks.size());
    s.put(program_tasks.size());
    auto put_sm = [&s](const ir::Task& t) {
      s.put(t.sm.has_value());
      s.put(static_cast<uint64_t>(t.sm.value_or(0)));
    };
    if (tasks_kept) {
      changes.tasks = false;
      for (const ir::Task& t : program_tasks) put_sm(t);
    } else {
      Writer w(tasks, changes.tasks);
      w.u(program_tasks.size());
      // A task is the one at its index in the image overwritten when its words are, from the
      // same place: each variable-length value is preceded by its length, so words equal from
      // one start are one task's encoding entirely.
      const size_t before = task_at.size();
      task_at.resize(program_tasks.size());
      task_changed.resize(program_tasks.size());
      // The program is often not in cache (a search's evaluator proves the programs of eight
      // structures in turn): the blocks of the tasks ahead are asked for now.
      constexpr size_t kAhead = 16;
      for (size_t k = 0; k < program_tasks.size(); ++k) {
        if (k + kAhead < program_tasks.size()) ir::prefetch_whole(program_tasks[k + kAhead]);
        const ir::Task& t = program_tasks[k];
        const size_t at = w.offset();
        w.take_differ();
        put(w, t);
        task_changed[k] = w.take_differ() || k >= before || task_at[k] != at;
        task_at[k] = at;
        put_sm(t);
      }
    }
  }
  {
    Writer w(core, changes.core);
    w.str(ir_version);
    w.str(abi_version);
    w.u(target.has_value());
    if (target) put(w, *target);
    w.u(buffers.size());
    for (const ir::Buffer& b : buffers) put(w, b);
    w.u(counters.size());
    for (const ir::Counter& c : counters) {
      const auto& [init, note, counter_extra] = c;
      w.i(init);
      w.str(note);
      w.json(counter_extra);
    }
    w.json(extra);
    w.u(runtime.has_value());
    if (runtime) put(w, *runtime);
  }
  {
    Writer pw(pages, changes.pages);
    put(pw, page_allocation);
  }
  {
    Writer mw(meta, changes.meta);
    mw.json(program_meta);
  }
  {
    Writer cw(config, changes.config);
    put(cw, schedule_config);
  }
  return changes;
}

}  // namespace amk::validate
