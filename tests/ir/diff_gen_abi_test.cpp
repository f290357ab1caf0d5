// Proves the semantic diff reports retiled tasks, the generator is deterministic and sized, the
// ABI records have AMK's sizes and codes, and output files are replaced atomically.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "ir/abi.h"
#include "ir/diff.h"
#include "ir/fileio.h"
#include "ir/gen.h"
#include "ir/graph.h"
#include "ir/json_io.h"
#include "ir/opcodes.h"
#include "support.h"

namespace amk::ir {
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
