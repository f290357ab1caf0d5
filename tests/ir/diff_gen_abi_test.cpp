// Proves the semantic diff reports retiled tasks, the generator is deterministic and sized, the
// ABI records have AMK's sizes and codes, and output files are replaced atomically.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>

#include <nlohmann/json.hpp>

#include "fixtures/gen.h"
#include "ir/abi.h"
#include "ir/diff.h"
#include "ir/fileio.h"
#include "ir/graph.h"
#include "ir/json_io.h"
#include "ir/opcodes.h"
#include "support.h"

namespace amk::ir {
using namespace amk::fixtures;  // the seeded programs these tests run on
namespace {

namespace fs = std::filesystem;

Program load_conf(const char* name) {
  auto r = load_program((test::conformance_dir() / "programs" / name).string());
  EXPECT_TRUE(r.ok()) << name;
  return r.ok() ? *r.value : Program{};
}

TEST(SemanticDiff, DifferentTilingsReportTheChangedTasksByLabel) {
  Program a = load_conf("toy_1L_default.json");  // N_tile 64
  Program b = load_conf("toy_1L_auto.json");     // auto N_tile 32
  DiffResult d = diff_programs(a, b);
  EXPECT_TRUE(d.by_label);
  auto find = [&](const std::string& key, EntityChange::Kind k) {
    for (const auto& c : d.changes)
      if (c.entity == "task" && c.key == key && c.kind == k) return &c;
    return static_cast<const EntityChange*>(nullptr);
  };
  const EntityChange* q = find("L0.q_proj[t0]", EntityChange::Kind::Changed);
  ASSERT_NE(q, nullptr);
  bool ntile = false;
  for (const auto& f : q->fields)
    if (f.field == "params.N_tile") {
      ntile = true;
      EXPECT_EQ(f.a.json(), 64);
      EXPECT_EQ(f.b.json(), 32);
    }
  EXPECT_TRUE(ntile);
  EXPECT_NE(find("L0.q_proj[t1]", EntityChange::Kind::Added), nullptr);
  EXPECT_NE(find("lm_head[t7]", EntityChange::Kind::Added), nullptr);
  // Renumbered but unchanged tasks are not reported: embed is #0 in both and identical.
  EXPECT_EQ(find("embed", EntityChange::Kind::Changed), nullptr);
  auto j = nlohmann::json::parse(diff_to_json(d));
  EXPECT_FALSE(j["same"].get<bool>());
  EXPECT_EQ(j["summary"]["task"]["added"], 11);
}

TEST(SemanticDiff, IdenticalProgramsAreTheSame) {
  Program a = load_conf("small_4L_default.json");
  EXPECT_TRUE(diff_programs(a, a).same());
  EXPECT_EQ(format_diff(diff_programs(a, a)), "programs are the same\n");
}

TEST(SemanticDiff, ByIdModeReportsParamSmAndPageChanges) {
  GenOptions o;
  o.pages = true;
  o.tasks = 100;
  Program a = generate(o).program;
  Program b = a;
  b.tasks[3].set_param("K", ParamValue::of_int(7));
  b.tasks[5].sm = 2;
  b.pages->pages[0].nbytes += 16;
  b.meta.mut()["model"] = "other";
  DiffResult d = diff_programs(a, b, DiffMatch::Id);
  EXPECT_FALSE(d.by_label);
  std::string text = format_diff(d);
  EXPECT_NE(text.find("params.K: 64 -> 7"), std::string::npos) << text;
  EXPECT_NE(text.find("sm: null -> 2"), std::string::npos) << text;
  EXPECT_NE(text.find("nbytes"), std::string::npos) << text;
  EXPECT_NE(text.find("meta.model"), std::string::npos) << text;
}

// A value shown in a diff is JSON text as AMK's Python writes it (", " between items, its floats),
// and a lone surrogate is its escape: two values that differ never look alike (as U+FFFD they did).
TEST(SemanticDiff, ChangedValuesShowAsPythonJsonTextWithLoneSurrogatesEscaped) {
  Program a = load_conf("toy_1L_default.json");
  Program b = a;
  a.meta.mut()["note"] = nlohmann::ordered_json::array({"x\xed\xa0\x80", 1e-06, 2});
  b.meta.mut()["note"] = nlohmann::ordered_json::array({"x\xed\xb0\x80", 0.5, 2});
  const std::string text = format_diff(diff_programs(a, b, DiffMatch::Id));
  EXPECT_NE(text.find(R"(meta.note: ["x\ud800", 1e-06, 2] -> ["x\udc00", 0.5, 2])"),
            std::string::npos)
      << text;
}

TEST(Generator, SameSeedSameBytesDifferentSeedDifferentProgram) {
  for (GenShape s : {GenShape::Llama, GenShape::Mesh}) {
    GenOptions o;
    o.shape = s;
    o.tasks = 500;
    o.seed = 42;
    std::string a = write_program(generate(o).program);
    EXPECT_EQ(a, write_program(generate(o).program));
    o.seed = 43;
    if (s == GenShape::Mesh) {
      EXPECT_NE(a, write_program(generate(o).program));
    }
  }
}

TEST(Generator, SizesFollowTheRequestAndGraphsAreAcyclic) {
  for (GenShape s : {GenShape::Llama, GenShape::Mesh, GenShape::Chain, GenShape::Fan}) {
    for (uint64_t n : {10u, 1000u, 20000u}) {
      GenOptions o;
      o.shape = s;
      o.tasks = n;
      Program p = generate(o).program;
      EXPECT_GT(p.tasks.size(), n * 6 / 10) << static_cast<int>(s) << " " << n;
      EXPECT_LT(p.tasks.size(), n * 14 / 10 + 60) << static_cast<int>(s) << " " << n;
      EXPECT_TRUE(Graph::build(p).acyclic());
    }
  }
}

TEST(Generator, NopModeKeepsTheDagAndDropsBuffers) {
  GenOptions o;
  o.tasks = 400;
  Program full = generate(o).program;
  o.nop = true;
  Program nop = generate(o).program;
  EXPECT_TRUE(nop.buffers.empty());
  ASSERT_EQ(nop.tasks.size(), full.tasks.size());
  Graph a = Graph::build(full), b = Graph::build(nop);
  EXPECT_EQ(a.edge_count(), b.edge_count());
  for (const Task& t : nop.tasks) EXPECT_EQ(t.op, Op::NOP);
}

TEST(Generator, EveryDefectIsPlantedInTheLlamaShape) {
  for (int d = 1; d <= 10; ++d) {
    GenOptions o;
    o.tasks = 300;
    o.defect = static_cast<GenDefect>(d);
    GenResult r = generate(o);
    EXPECT_EQ(r.defect_note.find("could not"), std::string::npos) << d << ": " << r.defect_note;
    EXPECT_FALSE(r.defect_note.empty()) << d;
  }
}

TEST(Abi, RecordSizesAndCodesAreAmks) {
  EXPECT_EQ(sizeof(abi::amk_params_t), 88u);
  EXPECT_EQ(sizeof(abi::amk_buffer_t), 96u);
  EXPECT_EQ(sizeof(abi::amk_instruction_t), 224u);
  EXPECT_EQ(static_cast<int>(Op::FUSED), abi::AMK_OP_FUSED);
  EXPECT_EQ(kOpCount, abi::AMK_OP__COUNT);
  // Every param field in PARAM_FIELDS order is a member at 4-byte stride in amk_params_t.
  abi::amk_params_t p{};
  auto* base = reinterpret_cast<const char*>(&p);
  EXPECT_EQ(reinterpret_cast<const char*>(&p.group) - base,
            4 * static_cast<int>(ParamField::group));
  EXPECT_EQ(reinterpret_cast<const char*>(&p.eps) - base, 4 * static_cast<int>(ParamField::eps));
  EXPECT_EQ(reinterpret_cast<const char*>(&p.theta) - base,
            4 * static_cast<int>(ParamField::theta));
  EXPECT_EQ(dtype_nbytes(DType::I4, 7), 4);
  EXPECT_EQ(op_spec(Op::FUSED).max_inputs, -1);
  EXPECT_EQ(op_spec(Op::ATTENTION_TILE).required.size(), 6u);
  for (int i = 0; i < kOpCount; ++i)
    EXPECT_EQ(parse_op(name(static_cast<Op>(i))), static_cast<Op>(i));
}

// dtype_size against 128-bit arithmetic: ceil(count * bits / 8) for a count >= 0, (count * bits
// + 7) / 8 truncated for a negative one, nullopt exactly when that (or count * bits for a negative
// count) does not fit in int64; at and around the inline fast path's bound (2^56) and the ends.
TEST(Abi, DtypeSizeIsExactOrNulloptAtEveryBound) {
  __extension__ using Wide = __int128;
  const Wide lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  std::vector<int64_t> counts = {0, 1, 7, 8, 9, -1, -7, -8, -9, INT64_MAX, INT64_MIN};
  for (int64_t base : {int64_t{1} << 56, int64_t{1} << 59, int64_t{1} << 60, INT64_MAX / 4})
    for (int64_t d = -9; d <= 9; ++d) {
      counts.push_back(base + d);
      counts.push_back(-base - d);
    }
  for (int k = 0; k < kDTypeCount; ++k) {
    const auto dt = static_cast<DType>(k);
    for (const int64_t n : counts) {
      SCOPED_TRACE(std::to_string(k) + " " + std::to_string(n));
      const Wide v = Wide{n} * dtype_bits(dt);
      std::optional<int64_t> want;
      if (n >= 0) {
        const Wide bytes = (v + 7) / 8;
        if (bytes <= hi) want = static_cast<int64_t>(bytes);
      } else if (v >= lo) {
        want = static_cast<int64_t>((v + 7) / 8);
      }
      EXPECT_EQ(dtype_size(dt, n), want);
    }
  }
}

// ParamTable written the plain way: each param looked up by name, the last of a key named twice
// giving the value, the sign bits of every int value given.
struct NaiveParams {
  bool plain = true, finite = true;
  uint32_t present = 0, ints = 0, reals = 0, nonpositive = 0, negative = 0;
  std::map<int, int64_t> i;
  std::map<int, double> f;
  explicit NaiveParams(const Task& t) {
    for (const Param& p : t.params) {
      if (p.value.kind == ParamValue::Kind::Float && !std::isfinite(p.value.f)) finite = false;
      const std::optional<ParamField> field = param_field(p.key);
      if (!field) {
        plain = false;
        continue;
      }
      const int k = static_cast<int>(*field);
      if (present >> k & 1u) plain = false;
      present |= 1u << k;
      const ParamValue& v = p.value;
      if (*param_type(p.key) == ParamType::Int) {
        if (v.kind != ParamValue::Kind::Int || v.i < INT32_MIN || v.i > INT32_MAX) plain = false;
      } else if (v.kind == ParamValue::Kind::Other) {
        plain = false;
      }
      if (v.kind == ParamValue::Kind::Int) {
        ints |= 1u << k;
        i[k] = v.i;
        if (v.i <= 0) nonpositive |= 1u << k;
        if (v.i < 0) negative |= 1u << k;
      }
      if (v.kind == ParamValue::Kind::Int || v.kind == ParamValue::Kind::Float) {
        reals |= 1u << k;
        f[k] = v.as_double();
      }
    }
  }
};

TEST(ParamTable, DecodesEveryKindOfValueKeyAndRepeatAsThePlainLookup) {
  const std::vector<std::string> keys = {"K",   "N_tile", "n_off", "eps", "scale", "head_dim",
                                         "dim", "theta",  "bogus", "N",   "kv_len"};
  uint64_t s = 7;
  auto next = [&] { return s = s * 6364136223846793005ull + 1442695040888963407ull, s >> 33; };
  int tasks_with_repeats = 0, not_plain = 0;
  for (int n = 0; n < 3000; ++n) {
    Task t;
    const uint64_t count = next() % 6;
    for (uint64_t k = 0; k < count; ++k) {
      const std::string& key = keys[next() % keys.size()];
      const int64_t ints[] = {
          0, 1, -1, 64, INT32_MAX, int64_t{INT32_MAX} + 1, INT32_MIN, int64_t{INT32_MIN} - 1};
      switch (next() % 4) {
        case 0:
          t.params.push_back({key, ParamValue::of_int(ints[next() % 8])});
          break;
        case 1:
          t.params.push_back({key, ParamValue::of_float(std::array<double, 4>{
                                       0.5, -2.0, NAN, -INFINITY}[next() % 4])});
          break;
        case 2:
          t.params.push_back({key, ParamValue::of_bool(next() % 2 == 0)});
          break;
        default:
          t.params.push_back({key, ParamValue::of_json(JsonValue(nlohmann::ordered_json("x")))});
      }
    }
    const NaiveParams want(t);
    const ParamTable got = ParamTable::of(t);
    SCOPED_TRACE(n);
    ASSERT_EQ(got.plain, want.plain);
    ASSERT_EQ(got.present, want.present);
    ASSERT_EQ(got.ints, want.ints);
    ASSERT_EQ(got.reals, want.reals);
    ASSERT_EQ(got.nonpositive, want.nonpositive);
    ASSERT_EQ(got.negative, want.negative);
    ASSERT_EQ(got.finite, want.finite);
    for (const auto& [k, v] : want.i) ASSERT_EQ(got.get(static_cast<ParamField>(k), 0), v);
    for (const auto& [k, v] : want.f)
      if (!std::isnan(v)) {
        ASSERT_EQ(got.real(static_cast<ParamField>(k), 0), v);
      }
    tasks_with_repeats += std::popcount(want.present) < static_cast<int>(t.params.size());
    not_plain += !want.plain;
  }
  EXPECT_GT(tasks_with_repeats, 300);
  EXPECT_GT(not_plain, 1000);
  EXPECT_LT(not_plain, 2900);
}

TEST(AtomicWrite, ReplacesContentAndKeepsTheOldFileWhenTheWriteFails) {
  fs::path dir = test::temp_dir();
  fs::path f = dir / "out.json";
  ASSERT_TRUE(write_file_atomic(f.string(), "one").ok());
  ASSERT_TRUE(write_file_atomic(f.string(), "two").ok());
  EXPECT_EQ(test::slurp(f), "two");
  // A target that is a non-empty directory cannot be replaced: the write fails, nothing leaks.
  fs::create_directories(dir / "taken" / "child");
  Status err = write_file_atomic((dir / "taken").string(), "x");
  ASSERT_FALSE(err.ok());
  EXPECT_TRUE(fs::is_directory(dir / "taken" / "child"));
  int leftovers = 0;
  for (const auto& e : fs::directory_iterator(dir))
    leftovers += e.path().filename().string()[0] == '.';
  EXPECT_EQ(leftovers, 0);
  // Missing folder: clear error naming the file.
  err = write_file_atomic((dir / "no/such/dir/x.json").string(), "x");
  ASSERT_FALSE(err.ok());
  EXPECT_EQ(err.diagnostics[0].code, "io.write");
  EXPECT_NE(err.diagnostics[0].message.find("x.json"), std::string::npos);
}

}  // namespace
}  // namespace amk::ir
