// Proves the `amk` command's contract: exit codes, byte-identical fmt, atomic outputs, JSON modes
// and helpful errors for unknown commands and options.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "ir/fileio.h"
#include "ir/json_io.h"
#include "support.h"

namespace amk {
namespace {

namespace fs = std::filesystem;
using test::run_amk;

TEST(CliFmt, RewritesEveryConformanceProgramToAmksExactBytes) {
  fs::path out = test::temp_dir() / "o.json";
  int n = 0;
  for (const auto& e : fs::directory_iterator(test::conformance_dir() / "programs")) {
    if (e.path().filename() == "bad_ir_major_version.json") continue;
    auto r = run_amk({"fmt", e.path().string(), "-o", out.string()});
    ASSERT_EQ(r.rc, 0) << e.path() << r.err;
    EXPECT_EQ(test::slurp(out), test::slurp(e.path())) << e.path();
    ++n;
  }
  EXPECT_EQ(n, 35);
}

TEST(CliFmt, CheckReportsNonCanonicalFilesAndInPlaceRewriteFixesThem) {
  fs::path dir = test::temp_dir();
  fs::path f = dir / "p.json";
  ASSERT_EQ(run_amk({"gen", "--tasks", "30", "-o", f.string()}).rc, 0);
  std::string canonical = test::slurp(f);
  EXPECT_EQ(run_amk({"fmt", "--check", f.string()}).rc, 0);
  auto j = nlohmann::ordered_json::parse(canonical);
  std::string messy = j.dump(1) + "\n";
  {
    std::FILE* fp = std::fopen(f.c_str(), "w");
    std::fwrite(messy.data(), 1, messy.size(), fp);
    std::fclose(fp);
  }
  auto r = run_amk({"fmt", "--check", f.string()});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("not canonical"), std::string::npos);
  EXPECT_EQ(test::slurp(f), messy) << "--check writes nothing";
  EXPECT_EQ(run_amk({"fmt", f.string()}).rc, 0);
  EXPECT_EQ(test::slurp(f), canonical);
}

TEST(CliFmt, MalformedInputExitsTwoAndNamesFileAndPointer) {
  fs::path bad = test::source_dir() / "tests/ir/malformed/threshold_string.json";
  fs::path out = test::temp_dir() / "keep.json";
  {
    std::FILE* fp = std::fopen(out.c_str(), "w");
    std::fputs("previous", fp);
    std::fclose(fp);
  }
  auto r = run_amk({"fmt", bad.string(), "-o", out.string()});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("threshold_string.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/tasks/0/waits/0/threshold"), std::string::npos) << r.err;
  EXPECT_EQ(test::slurp(out), "previous") << "a failed run leaves existing files as they were";
}

// A lone surrogate in a name ("\udc00": Python's json and amk's reader keep one) is carried by
// what writes JSON text back (merge, targets and runtimes --json) and refused, with the name's
// pointer, by what writes UTF-8 (an MPK graph names tensors by buffer names; a safetensors header):
// never an internal error, never a file.
TEST(CliInputs, ALoneSurrogateInANameIsKeptOrRefusedWithItsPointerNeverAnInternalError) {
  auto replaced = [](std::string s, const std::string& from, const std::string& to) {
    const size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? s : s.replace(at, from.size(), to);
  };
  const fs::path dir = test::temp_dir();
  const std::string toy = test::slurp(test::conformance_dir() / "programs" / "toy_1L_default.json");
  const fs::path named = dir / "named.json", sourced = dir / "sourced.json", tgt = dir / "t.json";
  std::ofstream(named) << replaced(toy, R"("name": "token_id")", R"("name": "token_id\udc00")");
  std::ofstream(sourced) << replaced(toy, R"("source": "embed.weight")",
                                     R"("source": "embed.weight\udc00")");
  std::ofstream(tgt) << replaced(run_amk({"targets", "h100", "--json"}).out, R"("name": "h100")",
                                 R"("name": "h100\udc00")");
  auto no_internal_error = [](const test::RunResult& r) {
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
  };
  for (const fs::path& f : {named, sourced}) {
    const test::RunResult v = run_amk({"validate", f.string()});
    EXPECT_EQ(v.rc, 0) << v.out << v.err;
  }
  const test::RunResult mpk =
      run_amk({"export", named.string(), "--format", "mpk", "-o", (dir / "g.json").string()});
  no_internal_error(mpk);
  EXPECT_NE(mpk.rc, 0);
  EXPECT_NE(mpk.err.find("/buffers/0/name: error[export.name]"), std::string::npos) << mpk.err;
  const test::RunResult gen =
      run_amk({"gen-weights", sourced.string(), "-o", (dir / "w.safetensors").string()});
  no_internal_error(gen);
  EXPECT_NE(gen.rc, 0);
  EXPECT_NE(gen.err.find("/buffers/4/source: error[safetensors.name]"), std::string::npos)
      << gen.err;
  const test::RunResult tmpl =
      run_amk({"run", named.string(), "--inputs-template", (dir / "in.safetensors").string()});
  no_internal_error(tmpl);
  EXPECT_NE(tmpl.rc, 0);
  EXPECT_NE(tmpl.err.find("error[safetensors.name]"), std::string::npos) << tmpl.err;
  for (const char* out : {"g.json", "w.safetensors", "in.safetensors"})
    EXPECT_FALSE(fs::exists(dir / out)) << out;
  const test::RunResult merged = run_amk(
      {"merge", named.string(), named.string(), named.string(), "-o", (dir / "m.json").string()});
  no_internal_error(merged);
  EXPECT_EQ(merged.rc, 0) << merged.err;
  EXPECT_EQ(test::slurp(dir / "m.json"), test::slurp(named));
  const test::RunResult targets = run_amk({"targets", tgt.string(), "--json"});
  no_internal_error(targets);
  EXPECT_EQ(targets.rc, 0) << targets.err;
  EXPECT_NE(targets.out.find(R"("name": "h100\udc00")"), std::string::npos) << targets.out;
  const fs::path rt = dir / "r.json";
  std::ofstream(rt) << replaced(run_amk({"runtimes", "mpk", "--json"}).out, R"("name": "mpk")",
                                R"("name": "mpk\udc00")");
  const test::RunResult runtimes = run_amk({"runtimes", rt.string(), "--json"});
  no_internal_error(runtimes);
  EXPECT_EQ(runtimes.rc, 0) << runtimes.err;
  EXPECT_NE(runtimes.out.find(R"("name": "mpk\udc00")"), std::string::npos) << runtimes.out;
}

TEST(CliInfo, JsonModeIsOneDocumentAndUnreadableIsExitTwo) {
  auto r = run_amk(
      {"info", (test::conformance_dir() / "programs/llama_1B_default.json").string(), "--json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["tasks"], 4098);
  EXPECT_EQ(j["edges"], 7905);
  EXPECT_EQ(j["weight_MB"], 4943.26);
  EXPECT_TRUE(j["critical_path"]["tasks"].get<int>() > 100);
  r = run_amk(
      {"info", "--json", (test::source_dir() / "tests/ir/malformed/unknown_dtype.json").string()});
  EXPECT_EQ(r.rc, 2);
  auto e = nlohmann::json::parse(r.out);
  EXPECT_EQ(e["errors"][0]["pointer"], "/buffers/0/dtype");
}

TEST(CliDiff, ExitCodesAreSameDifferentUnreadable) {
  auto p = [](const char* n) { return (test::conformance_dir() / "programs" / n).string(); };
  EXPECT_EQ(run_amk({"diff", p("toy_1L_default.json"), p("toy_1L_default.json")}).rc, 0);
  auto r = run_amk({"diff", p("toy_1L_default.json"), p("toy_1L_auto.json")});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("~ task L0.q_proj[t0]"), std::string::npos) << r.out;
  EXPECT_EQ(run_amk({"diff", p("toy_1L_default.json"), p("bad_ir_major_version.json")}).rc, 2);
  r = run_amk({"diff", "--json", p("toy_2L_default.json"), p("toy_1L_default.json")});
  EXPECT_EQ(r.rc, 1);
  EXPECT_FALSE(nlohmann::json::parse(r.out)["same"].get<bool>());
}

TEST(CliGen, WritesDeterministicProgramsAndRejectsUnknownNames) {
  fs::path dir = test::temp_dir();
  ASSERT_EQ(run_amk({"gen", "--shape", "mesh", "--tasks", "200", "--seed", "9", "-o",
                     (dir / "a.json").string()})
                .rc,
            0);
  ASSERT_EQ(run_amk({"gen", "--shape", "mesh", "--tasks", "200", "--seed", "9", "-o",
                     (dir / "b.json").string()})
                .rc,
            0);
  EXPECT_EQ(test::slurp(dir / "a.json"), test::slurp(dir / "b.json"));
  EXPECT_EQ(run_amk({"gen", "--shape", "tree", "-o", (dir / "c.json").string()}).rc, 2);
  auto r = run_amk({"gen", "--defect", "cycle", "-o", (dir / "d.json").string()});
  EXPECT_EQ(r.rc, 0);
  EXPECT_NE(r.err.find("defect:"), std::string::npos);
}

TEST(CliLower, WritesAValidatedProgramAndBadInputExitsTwoWithoutWriting) {
  fs::path dir = test::temp_dir();
  const std::string out = (dir / "toy.json").string();
  auto r = run_amk({"lower", "toy-2L", "--target", "h100", "--pos", "3", "--log", "-o", out});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("tile"), std::string::npos) << r.err;  // --log: one line per pass
  EXPECT_NE(r.err.find("predicted"), std::string::npos) << r.err;
  EXPECT_EQ(run_amk({"validate", "--brief", out}).rc, 0);
  const std::string before = test::slurp(out);
  std::ofstream(dir / "bad.json") << R"({"tiling": {"gemv": {"N_tile": -4}}})";
  r = run_amk({"lower", "toy-2L", "-t", "h100", "-c", (dir / "bad.json").string(), "-o", out});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("/config/tiling/gemv/N_tile"), std::string::npos) << r.err;
  EXPECT_EQ(run_amk({"lower", "toy-9L", "-t", "h100", "-o", out}).rc, 2);
  EXPECT_EQ(run_amk({"lower", "toy-2L", "-t", "z80", "-o", out}).rc, 2);
  EXPECT_EQ(test::slurp(out), before);  // failed runs left the file alone
  auto info = run_amk({"info", out, "--target", "t4"});
  EXPECT_EQ(info.rc, 0);
  EXPECT_NE(info.out.find("cost on t4"), std::string::npos) << info.out;
}

TEST(CliLower, TargetsAndModelsListTheBuiltins) {
  auto t = run_amk({"targets"});
  ASSERT_EQ(t.rc, 0);
  for (const char* n : {"h100", "h200", "a2a3", "tx8", "rtx5090"})
    EXPECT_NE(t.out.find(n), std::string::npos);
  auto j = run_amk({"targets", "--json"});
  ASSERT_EQ(j.rc, 0);
  EXPECT_EQ(nlohmann::json::parse(j.out).size(), 13u);
  auto m = run_amk({"models"});
  ASSERT_EQ(m.rc, 0);
  EXPECT_NE(m.out.find("llama-3.2-1b"), std::string::npos);
  EXPECT_EQ(run_amk({"models", "gpt-2"}).rc, 2);
}

TEST(CliGenerate, LowersPerPositionAndVerifiesAgainstTheDirectEvaluation) {
  fs::path dir = test::temp_dir();
  const std::string w = (dir / "w.safetensors").string();
  ASSERT_EQ(run_amk({"gen-weights", "toy-1L", "--seed", "4", "-o", w}).rc, 0);
  std::ofstream(dir / "c.json")
      << R"({"tiling": {"gemv": {"N_tile": 16}, "attention": {"n_partitions": 3}},
    "fusion_grouping": [["rope_q.reshape", "rope_q"]], "sm_assignment": "round_robin"})";
  auto r =
      run_amk({"generate", "toy-1L", "-t", "a2a3", "-c", (dir / "c.json").string(), "--weights", w,
               "--prompt-ids", "1,2,3", "--max-tokens", "20", "--verify", "--workers", "2"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("verified 22 steps"), std::string::npos) << r.err;
  // stdout is the ids alone (a pipe reads them); the wall-clock figures go to stderr.
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), ','), 19) << r.out;
  EXPECT_EQ(r.out.find_first_not_of("0123456789,\n"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("20 new tokens in"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tokens/s"), std::string::npos) << r.err;
  // A --kv-out that cannot be written is refused before the generation.
  r = run_amk({"generate", "toy-1L", "--weights", w, "--prompt-ids", "1", "--kv-out",
               (dir / "missing" / "kv.safetensors").string()});
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find("no folder"), std::string::npos) << r.err;
  EXPECT_EQ(
      run_amk({"generate", "toy-1L", "--weights", w, "--prompt-ids", "1", "--max-tokens", "300"})
          .rc,
      2);  // beyond max_seq 256
}

TEST(CliDispatch, UnknownCommandsAndOptionsSuggestTheClosestName) {
  auto r = run_amk({"fromat"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("did you mean 'fmt'"), std::string::npos) << r.err;
  r = run_amk({"info", "--jsn", "x.json"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("did you mean '--json'"), std::string::npos) << r.err;
  r = run_amk({"--version"});
  EXPECT_EQ(r.rc, 0);
  EXPECT_NE(r.out.find("IR 0.2.0, ABI 0.2"), std::string::npos);
  EXPECT_EQ(run_amk({"fmt", "--help"}).rc, 0);
  EXPECT_EQ(run_amk({"--help"}).rc, 0);
}

TEST(CliOptions, EveryNumericOptionOutOfRangeExitsTwoNamingTheOptionValueAndRange) {
  const fs::path dir = test::temp_dir();
  const std::string p = (dir / "p.json").string(), m = (dir / "m.json").string();
  ASSERT_EQ(run_amk({"gen", "--tasks", "30", "-o", p}).rc, 0);
  ASSERT_EQ(run_amk({"gen", "--shape", "mesh", "--nop", "--tasks", "30", "-o", m}).rc, 0);
  const std::string out = (dir / "o.json").string();
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const Case cases[] = {
      {{"simulate", p, "--seeds", "-1"}, "--seeds -1 is out of range: allowed [1, 1000000]"},
      {{"simulate", p, "--seeds", "0"}, "--seeds 0 is out of range"},
      {{"simulate", p, "--first-seed", "-3"}, "--first-seed -3 is out of range"},
      {{"gen", "--tasks", "-5", "-o", out}, "--tasks -5 is out of range: allowed [1, 67108864]"},
      {{"gen", "--sms", "-1", "-o", out}, "--sms -1 is out of range"},
      {{"run", m, "--workers", "100000"}, "--workers 100000 is out of range: allowed [0, 1024]"},
      {{"run", m, "--sms", "100000"}, "--sms 100000 is out of range"},
      {{"run", m, "--watchdog-ms", "0"}, "--watchdog-ms 0 is out of range"},
      {{"run", m, "--schedulers", "-2"}, "--schedulers -2 is out of range"},
      {{"lower", "toy-2L", "--target", "h100", "--batch", "0", "-o", out}, "--batch 0 is out"},
      {{"lower", "toy-2L", "--target", "h100", "--batch", "100000000", "-o", out}, "--batch"},
      {{"lower", "toy-2L", "--target", "h100", "--pos", "-1", "-o", out}, "--pos -1 is out"},
      {{"generate", "toy-2L", "--prompt-ids", "1", "--max-tokens", "0"}, "--max-tokens 0 is"},
      {{"search", "toy-2L", "--target", "h100", "--jobs", "0"}, "--jobs 0 is out of range"},
      {{"search", "toy-2L", "--target", "h100", "--seed", "-1"}, "--seed -1 is out of range"},
      {{"gen-weights", "toy-2L", "--seed", "-1", "-o", out}, "--seed -1 is out of range"},
  };
  for (const Case& c : cases) {
    auto r = run_amk(c.args);
    EXPECT_EQ(r.rc, 2) << c.args[0] << " " << c.says << "\n" << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
  }
  EXPECT_FALSE(fs::exists(out)) << "nothing was written";
  // More SM threads than a run may start: refused by the VM, not a crash.
  auto r = run_amk({"run", m, "--sms", "5000", "--mode", "sm-threads"});
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("vm.options"), std::string::npos) << r.err;
  EXPECT_EQ(run_amk({"run", m, "--sms", "50", "--mode", "sm-threads"}).rc, 0);
}

TEST(CliFiles, ConfigModelTargetAndSpaceFilesReportFileLineColumnAndPointer) {
  const fs::path dir = test::temp_dir();
  auto put = [&](const char* name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  };
  const std::string out = (dir / "o.json").string();
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> says;
  };
  const std::string cfg = put("c.json", "{\"tiling\":\n {\"gemv\": {\"N_tile\": 64,}}}");
  const std::string hf = put("config.json", "{\"hidden_size\": 64,\n \"num_hidden_layers\": 2,, }");
  const std::string huge = put("huge.json", "{\"hidden_size\": 1e400}");
  const std::string target = put("t.json", "{\"name\": \"x\",\n \"num_sms\": 13 ");
  const std::string space = put("s.json", "{\"knobs\": {\"pipelining_depth\": [1e400]}}");
  const Case cases[] = {
      {{"lower", "toy-2L", "--target", "h100", "--config",
        R"({"tiling":{"gemv":{"N_tile":1e400}}})", "-o", out},
       {"--config:1:29:", "/tiling/gemv/N_tile", "json.non-finite"}},
      {{"lower", "toy-2L", "--target", "h100", "--config", cfg, "-o", out},
       {cfg + ":2:25:", "json.syntax"}},
      {{"lower", hf, "--target", "h100", "-o", out}, {hf + ":2:25:", "json.syntax"}},
      {{"models", huge}, {huge + ":1:17:", "/hidden_size", "json.non-finite"}},
      {{"targets", target}, {target + ":2:", "json.syntax"}},
      {{"search", "toy-2L", "--target", "h100", "--space", space},
       {space + ":1:33:", "/knobs/pipelining_depth/0"}},
  };
  for (const Case& c : cases) {
    auto r = run_amk(c.args);
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
    for (const std::string& s : c.says)
      EXPECT_NE(r.err.find(s), std::string::npos) << s << "\n" << r.err;
  }
  EXPECT_FALSE(fs::exists(out));
  // Inline JSON is a config like a file.
  EXPECT_EQ(run_amk({"lower", "toy-2L", "--target", "h100", "--config",
                     R"({"tiling":{"gemv":{"N_tile":32}}})", "-o", out})
                .rc,
            0);
}

TEST(CliInfo, AnUnsafeProgramIsMarkedRejectedAndGetsNoPrediction) {
  const std::string bad = (test::conformance_dir() / "programs/bad_sm_queue_order.json").string();
  auto r = run_amk({"info", bad, "--json"});
  EXPECT_EQ(r.rc, 1);
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["valid"], false);
  EXPECT_EQ(j["rules"], nlohmann::json::array({"sm.queue-order"}));
  EXPECT_FALSE(j.contains("cost")) << "a ranking by info never sees a prediction for it";
  r = run_amk({"info", bad});
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(r.out.starts_with("REJECTED by the validator: 1 error(s) (sm.queue-order)")) << r.out;
  EXPECT_EQ(r.out.find("predicted"), std::string::npos) << r.out;
  r = run_amk({"info", bad, "--json", "--unsafe"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(nlohmann::json::parse(r.out)["cost"]["predicted_us"].is_number());
  r = run_amk(
      {"info", (test::conformance_dir() / "programs/toy_2L_default.json").string(), "--json"});
  EXPECT_EQ(r.rc, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["valid"], true);
  EXPECT_TRUE(j["rules"].empty());
  EXPECT_TRUE(j["cost"]["predicted_us"].is_number());
}

TEST(CliInfo, APredictionTheRuntimeCannotVouchForCarriesItsWarning) {
  // int4 declared as AMK declares it (--amk-compat: I4 [N, K]) at depth 2: amk-cuda's L2 hint
  // mis-sizes it; lower and info say so, and amk's own (U8) declaration says nothing.
  const fs::path dir = test::temp_dir();
  for (bool compat : {true, false}) {
    const std::string f = (dir / (compat ? "i4.json" : "u8.json")).string();
    std::vector<std::string> lower = {"lower",   "toy-2L", "--target", "h100",
                                      "--quant", "int4",   "-o",       f};
    if (compat) lower.push_back("--amk-compat");
    const auto l = run_amk(lower);
    ASSERT_EQ(l.rc, 0) << l.err;
    EXPECT_EQ(l.err.find("runtime.limit") != std::string::npos, compat) << l.err;
    const auto r = run_amk({"info", f, "--json"});
    ASSERT_EQ(r.rc, 0) << r.err;
    const auto w = nlohmann::json::parse(r.out)["cost"]["warnings"];
    ASSERT_EQ(w.size(), compat ? 1u : 0u) << r.out;
    if (compat) {
      EXPECT_EQ(w[0]["code"], "runtime.limit");
      const auto text = run_amk({"info", f});
      EXPECT_NE(text.out.find("at /config/pipelining_depth"), std::string::npos) << text.out;
    }
  }
}

TEST(CliValidate, RepeatedWarningsOfOneRuleAreCountedAfterThreeAndListedInJsonAndAll) {
  const fs::path dir = test::temp_dir();
  const std::string f = (dir / "fused.json").string();
  ASSERT_EQ(run_amk({"lower", "toy-2L", "--target", "h100", "--config",
                     R"({"fusion_grouping": [["rope_q.reshape", "rope_q"],)"
                     R"( ["rope_k.reshape", "rope_k"], ["attn_residual", "post_norm"]]})",
                     "-o", f})
                .rc,
            0);
  auto count = [](const std::string& s, const std::string& what) {
    size_t n = 0;
    for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
    return n;
  };
  auto r = run_amk({"validate", f});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(count(r.out, "param 'recipe'"), 3u) << r.out;
  EXPECT_NE(r.out.find("... and 3 more [param.unknown] like the above (at /tasks/32/params/recipe"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(count(run_amk({"validate", f, "--all"}).out, "param 'recipe'"), 6u);
  EXPECT_EQ(count(run_amk({"validate", f, "--brief"}).out, "param 'recipe'"), 6u);
  auto j = nlohmann::json::parse(run_amk({"validate", f, "--json"}).out);
  EXPECT_EQ(j["files"][0]["warnings"].size(), 6u);
}

TEST(CliLower, OptionsThatDoLessThanTheConfigSaysSayIt) {
  const std::string out = (test::temp_dir() / "o.json").string();
  auto r = run_amk(
      {"lower", "toy-2L", "--target", "h100", "--amk-compat", "--config",
       R"({"fusion_grouping": [["rope_q.reshape", "rope_q"]], "page_allocation": "linear"})", "-o",
       out});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("--amk-compat consumes only the tiling (as AMK's lower()); ignored: "
                       "fusion_grouping, page_allocation"),
            std::string::npos)
      << r.err;
  r = run_amk({"lower", "toy-2L", "--target", "h100", "--config",
               R"({"sm_assignment": "load_balance"})", "-o", out});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("the config sets no tiling"), std::string::npos) << r.err;
  r = run_amk({"lower", "toy-2L", "--target", "h100", "--config",
               R"({"tiling": {"gemv": {"N_tile": 32}}})", "-o", out});
  EXPECT_EQ(r.err.find("config.note"), std::string::npos) << r.err;
  // A config the runtime's launch refuses is lowered (amk's VM runs it) but said to be one.
  const std::string cfg = (test::temp_dir() / "c.json").string();
  std::ofstream(cfg) << R"({"tiling": {"gemv": {"N_tile": 32}}, "threads_per_block": 512})";
  r = run_amk({"lower", "toy-2L", "--target", "h100", "--config", cfg, "-o", out});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find(cfg + ": /threads_per_block: warning[runtime.limit]: threads_per_block 512 "
                             "is more than runtime amk-cuda launches (256)"),
            std::string::npos)
      << r.err;
  // A search's start beyond it too: searched from as given, and said to be.
  r = run_amk({"search", "toy-2L", "--target", "h100", "--budget", "3", "--start", cfg});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find(cfg + ": /threads_per_block: warning[runtime.limit]"), std::string::npos)
      << r.err;
  r = run_amk({"lower", "toy-2L", "--target", "h100", "--runtime", "mpk", "--config", cfg, "-o",
               out, "--json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["warnings"], nlohmann::json::array()) << r.out;
  // Fusion for a runtime whose executor traps on FUSED tasks: lowered, and said to be such.
  r = run_amk({"lower", "toy-2L", "--target", "h100", "--config",
               R"({"fusion_grouping": [["attn_residual", "post_norm"]]})", "-o", out});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("/fusion_grouping: warning[runtime.limit]: fusion_grouping makes FUSED "
                       "tasks, which runtime amk-cuda cannot execute"),
            std::string::npos)
      << r.err;
  const fs::path dir = test::temp_dir();
  const std::string m = (dir / "m.json").string();
  ASSERT_EQ(run_amk({"gen", "--shape", "mesh", "--nop", "--tasks", "20", "-o", m}).rc, 0);
  r = run_amk({"run", m, "--target", "h100", "--mode", "aicore"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("h100 has no AICore clusters; running a2a3's topology"), std::string::npos)
      << r.err;
}

TEST(CliRun, ADecodeStepRunsFromATokenIdAndInputsThatContradictTheProgramAreRefused) {
  const fs::path dir = test::temp_dir();
  const std::string p = (dir / "p.json").string(), w = (dir / "w.safetensors").string(),
                    out = (dir / "out.safetensors").string();
  ASSERT_EQ(run_amk({"lower", "toy-1L", "--target", "h100", "--pos", "2", "-o", p}).rc, 0);
  ASSERT_EQ(run_amk({"gen-weights", "toy-1L", "-o", w}).rc, 0);
  auto r = run_amk({"run", p, "--weights", w, "--token-id", "5", "--out", out});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(fs::exists(out));
  r = run_amk({"run", p, "--weights", w, "--token-id", "5", "--kv", out});  // a previous step's
  EXPECT_EQ(r.rc, 0) << r.err;
  r = run_amk({"run", p, "--weights", w, "--token-id", "5", "--pos", "9"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("/meta/pos"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("position 9 contradicts the program, lowered at pos 2"), std::string::npos)
      << r.err;
  r = run_amk({"run", p, "--weights", w, "--token-id", "5", "--kv", w});  // the weights file
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("the KV file holds none of the program's 2 KV caches"), std::string::npos)
      << r.err;
  r = run_amk({"run", p, "--weights", w, "--token-id", "5,x"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--token-id 5,x"), std::string::npos) << r.err;
  r = run_amk({"run", p, "--weights", w, "--token-id", "5", "--inputs", w});
  EXPECT_EQ(r.rc, 2);
}

TEST(CliRun, AnInputsTemplateRunsAsTheTokenIdDoesAndAContradictingPosInItIsRefused) {
  const fs::path dir = test::temp_dir();
  const std::string p = (dir / "p.json").string(), p3 = (dir / "p3.json").string(),
                    w = (dir / "w.safetensors").string(), in = (dir / "in.safetensors").string(),
                    in3 = (dir / "in3.safetensors").string();
  ASSERT_EQ(run_amk({"lower", "toy-1L", "--pos", "2", "-o", p}).rc, 0);
  ASSERT_EQ(run_amk({"lower", "toy-1L", "--pos", "3", "-o", p3}).rc, 0);
  ASSERT_EQ(run_amk({"gen-weights", "toy-1L", "-o", w}).rc, 0);
  auto r = run_amk({"run", p, "--inputs-template", in, "--token-id", "7"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string a = (dir / "a.safetensors").string(), b = (dir / "b.safetensors").string();
  ASSERT_EQ(run_amk({"run", p, "--weights", w, "--inputs", in, "-o", a}).rc, 0);
  ASSERT_EQ(run_amk({"run", p, "--weights", w, "--token-id", "7", "-o", b}).rc, 0);
  EXPECT_EQ(test::slurp(a), test::slurp(b)) << "the template binds what --token-id binds";
  // A template of the step at pos 3 contradicts the program lowered at pos 2: refused by key.
  ASSERT_EQ(run_amk({"run", p3, "--inputs-template", in3}).rc, 0);
  r = run_amk({"run", p, "--weights", w, "--inputs", in3});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("input 'pos' is 3 but the program was lowered at pos 2"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("in3.safetensors: /pos"), std::string::npos) << r.err;
  r = run_amk({"run", p, "--inputs-template", in, "--pos", "5"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("/meta/pos"), std::string::npos) << r.err;
  r = run_amk({"run", p, "--inputs-template", in, "--token-id", "1,2"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("'token_id' holds 1 ids but 2 were given"), std::string::npos) << r.err;
}

TEST(CliConsistency, ReportingCommandsPrintOneJsonDocumentOnSuccessAndOnFailure) {
  const fs::path dir = test::temp_dir();
  const std::string p = (dir / "p.json").string(), w = (dir / "w.safetensors").string(),
                    kv = (dir / "kv.safetensors").string();
  auto r = run_amk({"lower", "toy-1L", "-o", p, "--json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ok"], true);
  EXPECT_EQ(j["target"], "h100") << "--target defaults to h100 in lower as in generate";
  EXPECT_EQ(j["tasks"], 27);
  r = run_amk({"lower", "toy-1L", "-o", p, "--json", "-c", R"({"tiling":{"gemv":{"N_tile":0}}})"});
  EXPECT_EQ(r.rc, 2);
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ok"], false);
  EXPECT_EQ(j["errors"][0]["pointer"], "/config/tiling/gemv/N_tile");
  ASSERT_EQ(run_amk({"gen-weights", "toy-1L", "-o", w}).rc, 0);
  r = run_amk({"run", p, "--weights", w, "--token-id", "3", "--json", "-o", kv});
  ASSERT_EQ(r.rc, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["tasks"], 27);
  EXPECT_EQ(j["output"], kv);
  EXPECT_TRUE(fs::exists(kv)) << "run's -o is --out";
  r = run_amk({"run", p, "--weights", w, "--token-id", "3", "--pos", "1", "--json"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(nlohmann::json::parse(r.out)["errors"][0]["code"], "vm.binding");
  fs::remove(kv);
  r = run_amk({"generate", "toy-1L", "--weights", w, "--prompt-ids", "1,2", "--max-tokens", "3",
               "--json", "-o", kv});
  ASSERT_EQ(r.rc, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["generated"].size(), 3u);
  EXPECT_EQ(j["steps"], 4);
  EXPECT_TRUE(fs::exists(kv)) << "generate's -o is --kv-out";
  j = nlohmann::json::parse(run_amk({"models", "--json"}).out);
  ASSERT_TRUE(j.is_array());
  EXPECT_EQ(j.size(), 6u);
  EXPECT_EQ(j[0]["name"], "llama-3.2-1b");
  // validate: one shape for one file or many.
  const std::string bad = (test::conformance_dir() / "programs/bad_sm_queue_order.json").string();
  auto one = nlohmann::json::parse(run_amk({"validate", p, "--json"}).out);
  auto two = nlohmann::json::parse(run_amk({"validate", p, bad, "--json"}).out);
  EXPECT_EQ(one["ok"], true);
  ASSERT_EQ(one["files"].size(), 1u);
  EXPECT_EQ(two["ok"], false);
  EXPECT_EQ(two["exit"], 1);
  ASSERT_EQ(two["files"].size(), 2u);
  EXPECT_EQ(two["files"][0], one["files"][0]);
  EXPECT_EQ(two["files"][1]["errors"][0]["code"], "sm.queue-order");
}

TEST(CliConsistency, DashReadsStandardInputWhereverAFileIsRead) {
  const fs::path dir = test::temp_dir();
  const std::string p = (dir / "p.json").string(), w = (dir / "w.safetensors").string(),
                    cfg = (dir / "c.json").string();
  ASSERT_EQ(run_amk({"lower", "toy-1L", "-o", p}).rc, 0);
  ASSERT_EQ(run_amk({"gen-weights", "toy-1L", "-o", w}).rc, 0);
  auto r = run_amk({"fmt", "-"}, p);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, test::slurp(p)) << "fmt - writes the canonical bytes to stdout";
  EXPECT_EQ(run_amk({"validate", "-"}, p).rc, 0);
  EXPECT_EQ(run_amk({"info", "-"}, p).rc, 0);
  EXPECT_EQ(run_amk({"diff", "-", p}, p).rc, 0);
  r = run_amk({"run", p, "--weights", "-", "--token-id", "1"}, w);
  EXPECT_EQ(r.rc, 0) << "safetensors from a pipe: " << r.err;
  std::ofstream(cfg) << R"({"tiling": {"gemv": {"N_tile": 32}}})";
  EXPECT_EQ(run_amk({"lower", "toy-1L", "-c", "-", "-o", (dir / "q.json").string()}, cfg).rc, 0);
  const std::string spec = (dir / "m.json").string();
  std::ofstream(spec) << run_amk({"models", "toy-1L"}).out;
  EXPECT_EQ(run_amk({"lower", "-", "-o", (dir / "q.json").string()}, spec).rc, 0);
}

TEST(CliConsistency, HelpListsTheRealOptionsAndNoInternalPositionalNames) {
  const std::pair<std::string, std::vector<std::string>> positional[] = {
      {"fmt", {"file"}},         {"validate", {"file"}},
      {"info", {"file"}},        {"simulate", {"file"}},
      {"diff", {"files"}},       {"lower", {"model"}},
      {"search", {"model"}},     {"run", {"program"}},
      {"generate", {"program"}}, {"gen-weights", {"program"}},
      {"models", {"model"}},     {"show", {"file"}},
      {"plot", {"file"}},        {"merge", {"files"}},
      {"log", {"file"}},         {"targets", {"target"}}};
  for (const auto& [c, names] : positional) {
    auto r = run_amk({c, "--help"});
    ASSERT_EQ(r.rc, 0) << c;
    const std::string options = r.out.substr(r.out.find("\noptions:"));
    for (const std::string& n : names)
      EXPECT_EQ(options.find("\n  --" + n + " "), std::string::npos)
          << c << " --help lists --" << n;
    EXPECT_NE(options.find("-h [ --help ]"), std::string::npos) << c;
  }
  EXPECT_NE(run_amk({"run", "--help"}).out.find("--inputs-template"), std::string::npos);
  EXPECT_NE(run_amk({"run", "--help"}).out.find("-o [ --out ]"), std::string::npos);
  EXPECT_NE(run_amk({"generate", "--help"}).out.find("-o [ --kv-out ]"), std::string::npos);
}

TEST(CliGenerate, TargetMeansWhatItMeansInLowerAndRunOnGivenPrograms) {
  const fs::path dir = test::temp_dir();
  const std::string p = (dir / "p.json").string(), w = (dir / "w.safetensors").string();
  ASSERT_EQ(run_amk({"lower", "toy-1L", "-o", p}).rc, 0);
  ASSERT_EQ(run_amk({"gen-weights", "toy-1L", "-o", w}).rc, 0);
  const auto base = run_amk({"generate", p, "--weights", w, "--prompt-ids", "4"});
  ASSERT_EQ(base.rc, 0) << base.err;
  // Given PROGRAMs, --target is where they are proven and run (as `amk run --target`), never
  // silently ignored: an unknown one is refused, a real one gives the same ids.
  auto r = run_amk({"generate", p, "--target", "no-such-gpu", "--weights", w, "--prompt-ids", "4"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("no-such-gpu"), std::string::npos) << r.err;
  r = run_amk({"generate", p, "--target", "a100", "--weights", w, "--prompt-ids", "4"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, base.out);
}

TEST(CliProgress, LongWorkReportsOneLinePerStepOnlyWhereAsked) {
  const fs::path dir = test::temp_dir();
  const std::string a = (dir / "a.json").string(), b = (dir / "b.json").string(),
                    w = (dir / "w.safetensors").string();
  ASSERT_EQ(run_amk({"lower", "toy-2L", "-o", a}).rc, 0);
  ASSERT_EQ(run_amk({"lower", "toy-2L", "-c", R"({"tiling":{"gemv":{"N_tile":32}}})", "-o", b}).rc,
            0);
  // stderr is not a terminal here: nothing but the commands' own lines.
  auto r = run_amk({"validate", a, b});
  EXPECT_EQ(r.err.find("loading"), std::string::npos) << r.err;
  r = run_amk({"diff", a, b});
  EXPECT_TRUE(r.err.empty()) << r.err;
  // AMK_PROGRESS=always shows each step (what a terminal sees refreshed in place).
  ::setenv("AMK_PROGRESS", "always", 1);
  auto v = run_amk({"validate", a, b});
  auto d = run_amk({"diff", a, b});
  auto g = run_amk({"gen-weights", "toy-2L", "-o", w});
  auto i = run_amk({"info", a});
  ::unsetenv("AMK_PROGRESS");
  EXPECT_NE(v.err.find("amk validate: [2/2] validating " + b + " (66 tasks)"), std::string::npos)
      << v.err;
  EXPECT_NE(d.err.find("amk diff: comparing 48 and 66 tasks"), std::string::npos) << d.err;
  EXPECT_NE(g.err.find("amk gen-weights: random weights 100%"), std::string::npos) << g.err;
  EXPECT_NE(i.err.find("amk info: validating 48 tasks"), std::string::npos) << i.err;
  EXPECT_EQ(v.out, run_amk({"validate", a, b}).out) << "progress never touches stdout";
}

TEST(CliDiff, StatSummarisesTaskChangesPerLayerAndThePredictedLatency) {
  const fs::path dir = test::temp_dir();
  const std::string a = (dir / "a.json").string(), b = (dir / "b.json").string();
  ASSERT_EQ(run_amk({"lower", "toy-2L", "-o", a}).rc, 0);
  ASSERT_EQ(run_amk({"lower", "toy-2L", "-c", R"({"tiling":{"gemv":{"N_tile":32}}})", "-o", b}).rc,
            0);
  auto r = run_amk({"diff", a, b, "--stat", "--target", "h100"});
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_NE(r.out.find("L0                     14        7        0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("L1                     20        7        0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("48 tasks -> 66 tasks (matched by label)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("predicted on h100: "), std::string::npos) << r.out;
  auto j = nlohmann::json::parse(run_amk({"diff", a, b, "--stat", "--json", "-t", "h100"}).out);
  ASSERT_EQ(j["layers"].size(), 4u);  // the placement moved final_norm too
  EXPECT_EQ(j["layers"][0]["layer"], "L0");
  EXPECT_EQ(j["layers"][3]["added"], 4);
  EXPECT_LT(j["predicted_us"]["b"].get<double>(), j["predicted_us"]["a"].get<double>() * 1.5);
  r = run_amk({"diff", a, a, "--stat"});
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out, "programs are the same\n");
  EXPECT_EQ(run_amk({"diff", a, b, "--target", "h100"}).rc, 2) << "--target needs --stat";
}

// The README's command table as `amk --help` and each command's --help give it: command, usage
// (whitespace collapsed), options.
std::string command_table() {
  auto collapse = [](const std::string& s) {
    std::string out;
    for (char c : s) {
      if (c == '\n' || c == ' ') {
        if (!out.empty() && out.back() != ' ') out += ' ';
      } else {
        out += c == '|' ? std::string("\\|") : std::string(1, c);
      }
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
  };
  std::string table = "| command | usage | options |\n|---|---|---|\n";
  const std::string top = run_amk({"--help"}).out;
  std::istringstream lines(top.substr(top.find("commands:\n") + 10));
  for (std::string line; std::getline(lines, line) && line.starts_with("  ");) {
    const std::string name = line.substr(2, line.find(' ', 2) - 2);
    const std::string help = run_amk({name, "--help"}).out;
    const size_t u = help.find("usage: ") + 7;
    std::vector<std::string> forms;  // each "amk ..." form of the synopsis, collapsed
    std::istringstream ul(help.substr(u, help.find("\n\n", u) - u));
    for (std::string l; std::getline(ul, l);) {
      const std::string c = collapse(l);
      if (forms.empty() || c.starts_with("amk "))
        forms.push_back(c);
      else
        forms.back() += " " + c;
    }
    const std::string usage = fmt::format("{}", fmt::join(forms, "`<br>`"));
    std::vector<std::string> opts;
    std::istringstream ol(help.substr(help.find("\noptions:\n") + 10));
    for (std::string o; std::getline(ol, o);) {
      if (!o.starts_with("  -")) continue;
      std::string spec = o.substr(2, o.find("  ", 2) - 2);  // "-o [ --output ] arg"
      if (spec.ends_with(" arg")) spec.resize(spec.size() - 4);
      const size_t l = spec.find("[ --");
      spec = l == std::string::npos
                 ? spec.substr(0, spec.find(' '))
                 : spec.substr(0, l - 1) + " " + spec.substr(l + 2, spec.find(" ]") - l - 2);
      if (spec != "-h --help") opts.push_back("`" + spec + "`");
    }
    table += fmt::format("| `{}` | `{}` | {} |\n", name, usage, fmt::join(opts, ", "));
  }
  return table;
}

TEST(Readme, CommandTableMatchesTheHelpOfEveryCommand) {
  const fs::path readme = test::source_dir() / "README.md";
  std::string text = test::slurp(readme);
  const std::string begin = "<!-- commands: scripts/readme-commands writes this table -->\n",
                    end = "<!-- /commands -->";
  const size_t b = text.find(begin), e = text.find(end);
  ASSERT_NE(b, std::string::npos) << "README.md has no command table";
  ASSERT_NE(e, std::string::npos);
  const std::string want = command_table();
  if (std::getenv("AMK_UPDATE_README")) {
    text.replace(b + begin.size(), e - b - begin.size(), want);
    std::ofstream(readme) << text;
    return;
  }
  EXPECT_EQ(text.substr(b + begin.size(), e - b - begin.size()), want)
      << "the README's command table differs from --help: run scripts/readme-commands";
}

// The lines of a text that start with `prefix`.
std::vector<std::string> lines_with(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (l.starts_with(prefix)) out.push_back(l);
  return out;
}

TEST(CliShow, ALineOrientedViewKeyedByLabelsThatRenumberingLeavesAlone) {
  const fs::path dir = test::temp_dir();
  const std::string a = (dir / "a.json").string(), b = (dir / "b.json").string();
  ASSERT_EQ(run_amk({"lower", "toy-2L", "-o", a}).rc, 0);
  // b: the same program with every counter id shifted by one (a new counter 0 nobody uses).
  ir::Program p = test::must(ir::load_program(a));
  p.counters.insert(p.counters.begin(), ir::Counter{});
  for (ir::Task& t : p.tasks) {
    ++t.out_counter;
    for (ir::Wait& w : t.waits) ++w.counter;
  }
  ASSERT_TRUE(test::ok(ir::write_file_atomic(b, ir::write_program(p))));
  auto sa = run_amk({"show", a, "--target", "h100"}), sb = run_amk({"show", b});
  ASSERT_EQ(sa.rc, 0) << sa.err;
  ASSERT_EQ(sb.rc, 0) << sb.err;
  EXPECT_EQ(lines_with(sa.out, "task "), lines_with(sb.out, "task ")) << "ids never appear";
  EXPECT_EQ(lines_with(sa.out, "task ").size(), 48u);
  EXPECT_NE(sa.out.find("task L0.rope_q: ROPE sm 1 head_dim=16 theta=10000.0 | L0.qr.hs, pos -> "
                        "L0.qr | waits L0.rope_q.reshape >= 1\n"),
            std::string::npos)
      << sa.out;
  EXPECT_NE(sa.out.find("predicted on h100 (amk-cuda): "), std::string::npos);
  EXPECT_EQ(lines_with(sb.out, "counter (none): init 0, 0 producers").size(), 1u) << sb.out;
  EXPECT_NE(sa.out.find("config tiling.gemv.N_tile = 64\n"), std::string::npos);
  EXPECT_NE(sa.out.find("config page_allocation = \"graph_color\"\n"), std::string::npos);
  // Tiles of one op are folded in waits: "L0.gate_proj[t0..t3] >= 4".
  const std::string c = (dir / "c.json").string();
  ASSERT_EQ(run_amk({"lower", "toy-1L", "-c", R"({"tiling":{"gemv":{"N_tile":32}}})", "-o", c}).rc,
            0);
  EXPECT_NE(run_amk({"show", c}).out.find("[t0..t3] >= 4"), std::string::npos);
  // A ScheduleConfig file: one knob per line.
  std::ofstream(dir / "s.json")
      << R"({"tiling": {"gemv": {"N_tile": 32}}, "sm_assignment": {"3": 1}})";
  auto r = run_amk({"show", (dir / "s.json").string()});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out,
            "config tiling.gemv.N_tile = 32\nconfig fusion_grouping = []\nconfig sm_assignment.3 = "
            "1\nconfig pipelining_depth = 2\nconfig page_allocation = \"graph_color\"\nconfig "
            "threads_per_block = 256\nconfig smem_bytes_per_block = 0\n")
      << "the knobs it sets, then the defaults it inherits";
}

TEST(CliShow, DotIsReadByGraphvizAndFoldsTilesAndLayers) {
  const fs::path dir = test::temp_dir();
  const std::string a = (dir / "a.json").string(), d = (dir / "a.dot").string();
  ASSERT_EQ(run_amk({"lower", "toy-2L", "-c", R"({"tiling":{"gemv":{"N_tile":16}}})", "-o", a}).rc,
            0);
  auto count = [](const std::string& s, const std::string& what) {
    size_t n = 0;
    for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
    return n;
  };
  auto full = run_amk({"show", a, "--dot", "-o", d});
  ASSERT_EQ(full.rc, 0) << full.err;
  const std::string dot = test::slurp(d);
  EXPECT_EQ(count(dot, "subgraph cluster_"), 5u) << "embed, L0, L1, final_norm, lm_head";
  EXPECT_NE(dot.find("label=\"c"), std::string::npos) << "edges are labelled by counter";
  const std::string svg = (dir / "a.svg").string();
  ASSERT_EQ(std::system(("dot -Tsvg '" + d + "' -o '" + svg + "'").c_str()), 0);
  EXPECT_NE(test::slurp(svg).find("<svg"), std::string::npos);
  const std::string tiles = run_amk({"show", a, "--dot", "--collapse"}).out;
  const std::string layers = run_amk({"show", a, "--dot", "--layers"}).out;
  EXPECT_LT(count(tiles, "[label="), count(dot, "[label="));
  EXPECT_EQ(count(layers, "\\n"), 5u) << layers;
  EXPECT_EQ(count(layers, "subgraph"), 0u);
  EXPECT_EQ(run_amk({"show", a, "--collapse", "tiles"}).rc, 2) << "--collapse needs --dot";
}

// Lanes of an SVG timeline counted by Python's XML parser (which also proves it well-formed).
int svg_lanes(const std::string& path) {
  const std::string py =
      "import sys, xml.dom.minidom as m; d = m.parse(sys.argv[1]); "
      "sys.exit(sum(g.getAttribute('class') == 'lane' for g in d.getElementsByTagName('g')) % 256)";
  const int st = std::system(("python3 -c \"" + py + "\" '" + path + "'").c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(CliPlot, PredictedAndMeasuredTimelinesAreWellFormedSvgWithOneLanePerWorker) {
  const fs::path dir = test::temp_dir();
  const std::string a = (dir / "a.json").string(), w = (dir / "w.safetensors").string(),
                    p = (dir / "p.svg").string(), m = (dir / "m.svg").string();
  ASSERT_EQ(run_amk({"lower", "toy-1L", "-t", "a2a3", "-o", a}).rc, 0);
  auto r = run_amk({"plot", a, "-o", p});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(svg_lanes(p), 72) << "a2a3: 24 AIC + 48 AIV cores";
  const std::string svg = test::slurp(p);
  EXPECT_NE(svg.find("weight-streaming floor"), std::string::npos);
  EXPECT_NE(svg.find("class=\"task critical\""), std::string::npos);
  EXPECT_NE(svg.find("<title>L0.q_proj[t0] (GEMV_TILE)"), std::string::npos);
  ASSERT_EQ(run_amk({"plot", a, "-t", "l4", "-o", p}).rc, 0);
  EXPECT_EQ(svg_lanes(p), 58) << "l4: 58 SMs";
  ASSERT_EQ(run_amk({"gen-weights", "toy-1L", "-o", w}).rc, 0);
  r = run_amk(
      {"run", a, "--weights", w, "--token-id", "2", "--mode", "sm", "--sms", "8", "--plot", m});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(svg_lanes(m), 8);
}

TEST(CliEnvironment, WhatAmkRunsSeesTheUsersGlibcTunablesNotAmksOwn) {
  // amk starts itself again with glibc heap settings; a command it runs (here a --measure
  // script) must get the environment the user gave amk, set or unset.
  const fs::path dir = test::temp_dir();
  const fs::path seen = dir / "seen.txt", script = dir / "env.sh";
  std::ofstream(script) << "#!/bin/sh\nprintf '%s|%s' \"${GLIBC_TUNABLES-unset}\" "
                           "\"${AMK_GLIBC_TUNABLES_BEFORE-unset}\" > '"
                        << seen.string() << "'\necho 5\n";
  fs::permissions(script, fs::perms::owner_all, fs::perm_options::add);
  const char* had = std::getenv("GLIBC_TUNABLES");
  const std::string saved = had ? had : "";
  for (const char* value : {static_cast<const char*>(nullptr), "glibc.malloc.tcache_count=7"}) {
    if (value)
      ::setenv("GLIBC_TUNABLES", value, 1);
    else
      ::unsetenv("GLIBC_TUNABLES");
    fs::remove(seen);
    auto r = run_amk({"search", "toy-2L", "--target", "h100", "--budget", "3", "--top-k", "1",
                      "--measure", script.string()});
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(test::slurp(seen), std::string(value ? value : "unset") + "|unset");
  }
  if (had)
    ::setenv("GLIBC_TUNABLES", saved.c_str(), 1);
  else
    ::unsetenv("GLIBC_TUNABLES");
}

TEST(CliFiles, LoneSurrogatesInStringsNeverCrashAWriterAndAreWrittenBackAsRead) {
  // The reader keeps "\udbdd" as it is (AMK's Python does); every writer must cope (fuzz finding),
  // and one that writes JSON text writes it back as its escape.
  const fs::path dir = test::temp_dir();
  std::string spec = run_amk({"models", "toy-1L"}).out;
  const size_t at = spec.find("\"note\": \"") + 9;
  spec.insert(at, "\\udbdd \\ud800x ");
  std::ofstream(dir / "m.json") << spec;
  auto r = run_amk({"models", (dir / "m.json").string()});
  EXPECT_EQ(r.rc, 0) << r.err;
  // The spec is written back as it was read: the surrogates' escapes, text that reads back the
  // same.
  EXPECT_NE(r.out.find(R"("note": "\udbdd \ud800x AMK's ToyLlama)"), std::string::npos) << r.out;
  std::ofstream(dir / "again.json") << r.out;
  EXPECT_EQ(run_amk({"models", (dir / "again.json").string()}).out, r.out);
  r = run_amk({"lower", (dir / "m.json").string(), "-o", (dir / "p.json").string(), "--json"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(nlohmann::json::accept(r.out)) << r.out;
}

TEST(CliFiles, HumanOutputIsValidUtf8WhateverTheLabels) {
  // A task label read from "\ud800" (and an error that names the task by it): what amk prints
  // for people shows U+FFFD, never the surrogate's raw bytes.
  std::string text = test::slurp(test::conformance_dir() / "programs" / "toy_1L_default.json");
  const auto replace = [&](const std::string& from, const std::string& to) {
    const size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
  };
  replace("\"label\": \"L0.input_norm\"", "\"label\": \"norm\\ud800x\"");
  replace("\"eps\": 1e-06", "\"eps\": -1.0");
  const fs::path file = test::temp_dir() / "surrogate.json";
  std::ofstream(file) << text;
  const std::string toy = (test::conformance_dir() / "programs" / "toy_1L_default.json").string();
  const auto valid_utf8 = [](const std::string& s) {  // nlohmann's dump refuses anything else
    try {
      (void)nlohmann::json(s).dump();
      return true;
    } catch (const nlohmann::json::exception&) {
      return false;
    }
  };
  const std::vector<std::vector<std::string>> commands = {{"validate", file.string()},
                                                          {"show", file.string()},
                                                          {"diff", toy, file.string()},
                                                          {"info", file.string()}};
  for (const auto& args : commands) {
    const test::RunResult r = run_amk(args);
    for (const std::string* out : {&r.out, &r.err}) {
      EXPECT_EQ(out->find("\xed\xa0\x80"), std::string::npos) << args[0] << ": " << *out;
      EXPECT_TRUE(valid_utf8(*out)) << args[0] << ": " << *out;
    }
    if (args[0] != "info") {
      EXPECT_NE((r.out + r.err).find("norm\xef\xbf\xbdx"), std::string::npos)
          << args[0] << ": " << r.out << r.err;
    }
  }
}

}  // namespace
}  // namespace amk
