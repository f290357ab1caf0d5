// Each case of the capacity corpus gets exactly its expected diagnostics; its sibling ("-ok")
// fits; a case read through amk's own JSON (what `amk import` writes) keeps its verdict.
#include <gtest/gtest.h>

#include "formats/corpus.h"
#include "ir/json_io.h"
#include "validate/validate.h"

namespace amk {
namespace {

std::vector<std::string> lines(const validate::Result& r) {
  std::vector<std::string> out;
  for (const auto& e : r.errors) out.push_back("error " + e.code + " " + e.pointer);
  for (const auto& w : r.warnings) out.push_back("warning " + w.code + " " + w.pointer);
  return out;
}

TEST(CapacityCorpus, EveryCaseHasItsExpectedDiagnosticsAndEverySiblingFits) {
  const auto cases = test::corpus_cases();
  EXPECT_GE(cases.size(), 24u);
  for (const auto& dir : cases) {
    SCOPED_TRACE(dir.filename().string());
    const ir::Program p = test::must(test::corpus_program(dir));
    const validate::Result r = validate::validate(p);
    EXPECT_EQ(lines(r), test::corpus_expected(dir)) << r.report();
    if (dir.filename().string().ends_with("-ok")) {
      EXPECT_TRUE(r.ok) << r.report();
    } else {
      EXPECT_FALSE(lines(r).empty());
    }
  }
}

TEST(CapacityCorpus, AnImportedCaseKeepsItsVerdict) {
  for (const auto& dir : test::corpus_cases()) {
    SCOPED_TRACE(dir.filename().string());
    const ir::Program p = test::must(test::corpus_program(dir));
    const ir::Program q = test::must(ir::parse_program(ir::write_program(p)));
    EXPECT_EQ(lines(validate::validate(q)), lines(validate::validate(p)));
  }
}

}  // namespace
}  // namespace amk
