// The capacity corpus (tests/formats/corpus): a folder per case with the graph, the launch
// overrides it runs with (`args`) and its expected diagnostics (`expected`).
#pragma once

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "formats/formats.h"
#include "support.h"

namespace amk::test {

/// The corpus cases, sorted.
inline std::vector<std::filesystem::path> corpus_cases() {
  std::vector<std::filesystem::path> v;
  for (const auto& e :
       std::filesystem::directory_iterator(source_dir() / "tests" / "formats" / "corpus"))
    if (e.is_directory()) v.push_back(e.path());
  std::sort(v.begin(), v.end());
  return v;
}

/// A case's graph, read with its `args` (--launch KEY=VALUE ...) as `amk validate` reads it.
inline ir::Result<ir::Program> corpus_program(const std::filesystem::path& dir) {
  formats::ReadOptions o;
  std::istringstream args(slurp(dir / "args"));
  for (std::string flag, kv; args >> flag >> kv;) {
    EXPECT_EQ(flag, "--launch") << dir;
    if (ir::Status st = ir::apply_launch(o.launch, kv); !st) return std::move(st.diagnostics);
  }
  if (std::filesystem::exists(dir / "task_graph.json")) {
    o.origin = (dir / "task_graph.json").string();
    return formats::read_mpk(slurp(dir / "task_graph.json"), o);
  }
  o.origin = (dir / "deps.json").string();
  o.scope_stats = slurp(dir / "scope_stats" / "scope_stats.jsonl");
  o.scope_stats_origin = (dir / "scope_stats" / "scope_stats.jsonl").string();
  return formats::read_pto(slurp(dir / "deps.json"), o);
}

/// The `expected` lines of a case ("severity code pointer").
inline std::vector<std::string> corpus_expected(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  std::istringstream in(slurp(dir / "expected"));
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

}  // namespace amk::test
