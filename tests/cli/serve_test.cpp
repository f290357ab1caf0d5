// Proves the request/response seam over pipes: `amk serve --stdio` (JSONL, in order, any --jobs,
// malformed lines answered and survived) and `amk mcp` (a scripted agent session).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/json_io.h"
#include "support.h"

namespace amk {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

// Runs `amk ARGS` with these lines on stdin; the JSON lines it printed.
std::vector<json> exchange(const std::vector<std::string>& args,
                           const std::vector<std::string>& lines, int* rc = nullptr,
                           std::string* raw = nullptr) {
  const fs::path in = test::temp_dir() / "requests.jsonl";
  {
    std::ofstream f(in);
    for (const std::string& l : lines) f << l << "\n";
  }
  const test::RunResult r = test::run_amk(args, in.string());
  if (rc) *rc = r.rc;
  if (raw) *raw = r.out;
  EXPECT_EQ(r.rc, 0) << r.err;
  std::vector<json> out;
  std::istringstream s(r.out);
  // amk's reader: an answer may carry a lone surrogate's escape, which nlohmann's parser refuses.
  for (std::string l; std::getline(s, l);) out.push_back(ir::reread_object(l));
  return out;
}

std::string req(json j) {
  return j.dump();
}

fs::path program(const std::string& name) {
  return test::conformance_dir() / "programs" / name;
}

TEST(Serve, AnswersEveryOperationInOrderWithTheRequestsId) {
  const std::string toy = program("toy_1L_default.json").string();
  const json inline_program = json::parse(test::slurp(toy));
  const fs::path lowered = test::temp_dir() / "lowered.json";
  const std::vector<json> out = exchange(
      {"serve", "--stdio"},
      {req({{"id", 1}, {"op", "validate"}, {"path", toy}}),
       req({{"id", "two"}, {"op", "validate"}, {"program", inline_program}}),
       req({{"id", 3}, {"op", "lower"}, {"model", "toy-1L"}, {"target", "h100"}}),
       req({{"id", 4},
            {"op", "lower"},
            {"model", "toy-1L"},
            {"target", "h100"},
            {"output", lowered.string()}}),
       req({{"id", 5}, {"op", "cost"}, {"path", toy}, {"target", "h100"}}),
       req({{"id", 6}, {"op", "search_eval"}, {"model", "toy-1L"}, {"target", "h100"}}),
       req({{"id", 7}, {"op", "info"}, {"path", toy}}), req({{"id", 8}, {"op", "info"}}),
       req({{"id", 9}, {"op", "diff"}, {"a", toy}, {"b", program("toy_1L_auto.json").string()}}),
       req({{"id", 10},
            {"op", "search"},
            {"model", "toy-1L"},
            {"target", "h100"},
            {"budget", 6}})});
  ASSERT_EQ(out.size(), 10u);
  for (const json& r : out) EXPECT_TRUE(r["ok"].get<bool>()) << r.dump();
  EXPECT_EQ(out[0]["id"], 1);
  EXPECT_EQ(out[1]["id"], "two");
  for (size_t i = 2; i < out.size(); ++i) EXPECT_EQ(out[i]["id"], i + 1);
  EXPECT_TRUE(out[0]["result"]["ok"].get<bool>());
  EXPECT_EQ(out[0]["result"], out[1]["result"]);  // inline and by path: the same verdict
  EXPECT_EQ(out[0]["result"]["stats"]["tasks"], 27);
  // lower gives `amk lower`'s program; written to a file, the same bytes.
  const test::RunResult cli = test::run_amk({"lower", "toy-1L", "--target", "h100", "-o", "-"});
  ASSERT_EQ(cli.rc, 0) << cli.err;
  EXPECT_EQ(out[2]["result"]["program"], json::parse(cli.out));
  EXPECT_EQ(test::slurp(lowered), cli.out);
  EXPECT_EQ(out[3]["result"]["path"], lowered.string());
  EXPECT_FALSE(out[3]["result"].contains("program"));
  // search_eval of the default config scores what lower predicts.
  EXPECT_TRUE(out[5]["result"]["valid"].get<bool>());
  EXPECT_EQ(out[5]["result"]["tasks"], out[2]["result"]["tasks"]);
  EXPECT_DOUBLE_EQ(out[5]["result"]["predicted_us"].get<double>(),
                   out[2]["result"]["cost"]["predicted_us"].get<double>());
  EXPECT_GT(out[4]["result"]["predicted_us"].get<double>(), 0);
  EXPECT_EQ(out[6]["result"]["tasks"], 27);
  EXPECT_TRUE(out[6]["result"]["valid"].get<bool>());
  EXPECT_NE(std::find(out[7]["result"]["models"].begin(), out[7]["result"]["models"].end(),
                      "llama-3.2-1b"),
            out[7]["result"]["models"].end());
  EXPECT_TRUE(out[8]["result"].contains("changes"));
  EXPECT_EQ(out[9]["result"]["trials"], 6);
  EXPECT_LE(out[9]["result"]["best"]["score"].get<double>(),
            out[9]["result"]["start"]["score"].get<double>());
}

TEST(Serve, InfoNamesTheFileOfAPathAndNoneForTextOrAnInlineProgram) {
  // The program of info comes by "path", "text" or "program"; only a path or a "program" that is a
  // path is a file to name. A request without "program" is never read as if it had one: the
  // first one's four members fill their allocation, so that under ASan a read of a fifth fails.
  const fs::path toy = program("toy_1L_auto.json");
  const std::string text = test::slurp(toy);
  const std::vector<json> out = exchange(
      {"serve", "--stdio"}, {req({{"id", 1}, {"op", "info"}, {"text", text}, {"unsafe", false}}),
                             req({{"id", 2}, {"op", "info"}, {"path", toy}}),
                             req({{"id", 3}, {"op", "info"}, {"program", toy.string()}}),
                             req({{"id", 4}, {"op", "info"}, {"program", json::parse(text)}})});
  ASSERT_EQ(out.size(), 4u);
  for (const json& r : out) ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
  EXPECT_EQ(out[0]["result"]["file"], "<program>");
  EXPECT_EQ(out[1]["result"]["file"], toy.string());
  EXPECT_EQ(out[2]["result"]["file"], toy.string());
  EXPECT_EQ(out[3]["result"]["file"], "<program>");
  auto unnamed = [](json r) {
    r.erase("file");
    return r;
  };
  for (size_t i = 1; i < out.size(); ++i)  // the same program by every route
    EXPECT_EQ(unnamed(out[i]["result"]), unnamed(out[0]["result"])) << i;
}

TEST(Serve, MalformedLinesGetAnErrorResponseAndTheWorkerGoesOn) {
  const std::vector<json> out = exchange(
      {"serve", "--stdio"},
      {"this is not json", "[1, 2]", "", req({{"id", 3}, {"op", "fly"}}), req({{"id", 4}}),
       req({{"id", 5}, {"op", "validate"}, {"path", "/no/such/file.json"}}),
       req({{"id", 6}, {"op", "validate"}, {"program", {{"ir_version", "0.2.0"}, {"tasks", 7}}}}),
       req({{"id", 7}, {"op", "lower"}, {"model", "toy-1L"}, {"target", "h100"}, {"pos", -1}}),
       req({{"id", 8}, {"op", "lower"}, {"model", "toy-1L"}, {"target", "h100"}, {"nope", 1}}),
       req({{"id", 9},
            {"op", "search_eval"},
            {"model", "toy-1L"},
            {"target", "h100"},
            {"config", {{"tiling", {{"gemv", {{"N_tile", "big"}}}}}}}}),
       "{\"id\": 10, \"op\": \"validate\", \"path\": ", req({{"id", 11}, {"op", "info"}})});
  ASSERT_EQ(out.size(), 11u);  // the blank line is not a request
  auto error = [&](size_t i) { return out[i]["error"]; };
  for (size_t i = 0; i + 1 < out.size(); ++i) {
    if (i != 8) {
      EXPECT_FALSE(out[i]["ok"].get<bool>()) << i;
    }
  }
  EXPECT_TRUE(out.back()["ok"].get<bool>());
  EXPECT_TRUE(out[0]["id"].is_null());
  EXPECT_EQ(error(0)["code"], "json.syntax");
  EXPECT_EQ(error(0)["line"], 1);
  EXPECT_EQ(error(1)["line"], 2);
  EXPECT_EQ(out[2]["id"], 3);
  EXPECT_EQ(error(2)["code"], "request.op");
  EXPECT_NE(error(2)["message"].get<std::string>().find("validate, lower"), std::string::npos);
  EXPECT_EQ(error(2)["line"], 4);
  EXPECT_EQ(error(3)["code"], "request.op");
  EXPECT_EQ(error(4)["code"], "io.read");
  EXPECT_NE(error(4)["message"].get<std::string>().find("/no/such/file.json"), std::string::npos);
  EXPECT_EQ(error(5)["diagnostics"][0]["pointer"], "/program/tasks");
  EXPECT_EQ(error(6)["diagnostics"][0]["pointer"], "/pos");
  EXPECT_EQ(error(7)["diagnostics"][0]["pointer"], "/nope");
  // A config the lowering refuses is an evaluated candidate, rejected with the reason.
  EXPECT_TRUE(out[8]["ok"].get<bool>());
  EXPECT_FALSE(out[8]["result"]["valid"].get<bool>());
  EXPECT_EQ(out[8]["result"]["diagnostics"][0]["pointer"], "/config/tiling/gemv/N_tile");
  EXPECT_TRUE(out[9]["id"].is_null());  // cut off: not JSON, so no id
  EXPECT_EQ(out[10]["id"], 11);
}

// A request of `op` on toy-1L for h100 (a search's budget: 4) with one more argument.
std::string toy_request(int id, const char* op, const char* key, const json& value) {
  json r = {{"id", id}, {"op", op}, {"model", "toy-1L"}, {"target", "h100"}, {key, value}};
  if (std::string_view(op) == "search") r["budget"] = 4;
  return req(std::move(r));
}

TEST(Serve, NoFilesRefusesEveryFileArgumentAndTakesInlineValues) {
  const std::string toy = program("toy_1L_default.json").string();
  const char* kTile32 = R"({"tiling": {"gemv": {"N_tile": 32}}})";
  const json tile32 = json::parse(kTile32);
  const fs::path out_file = test::temp_dir() / "must-not-exist.json";
  std::vector<json> out = exchange(
      {"serve", "--stdio", "--no-files"},
      {req({{"id", 1}, {"op", "validate"}, {"path", toy}}),
       req({{"id", 2}, {"op", "validate"}, {"text", test::slurp(toy)}}),
       req({{"id", 3},
            {"op", "lower"},
            {"model", "toy-1L"},
            {"target", "h100"},
            {"output", out_file.string()}}),
       req({{"id", 4}, {"op", "lower"}, {"model", "models/x.json"}, {"target", "h100"}}),
       req({{"id", 5},
            {"op", "search_eval"},
            {"model", "toy-1L"},
            {"target", "h100"},
            {"config", "cfg.json"}}),
       req({{"id", 6}, {"op", "diff"}, {"a", toy}, {"b", json::parse(test::slurp(toy))}}),
       req({{"id", 7}, {"op", "lower"}, {"model", "toy-1L"}, {"target", "h100"}}),
       // A config as its JSON text is not a file (as `amk lower --config '{...}'`),
       // and its errors point inside /config.
       toy_request(8, "lower", "config", kTile32), toy_request(9, "lower", "config", tile32),
       toy_request(10, "lower", "config", R"({"tiling": {"gemv": {"N_tile": 0}}})"),
       // search's start as --start takes it: an object or its JSON text, not 'auto'
       // (and, without files, no file).
       toy_request(11, "search", "start", tile32), toy_request(12, "search", "start", kTile32),
       toy_request(13, "search", "start", "auto"),
       toy_request(14, "search", "start", "start.json")});
  ASSERT_EQ(out.size(), 14u);
  for (size_t i : {0, 2, 3, 4, 5}) {
    EXPECT_FALSE(out[i]["ok"].get<bool>()) << i;
    EXPECT_EQ(out[i]["error"]["code"], "request.files") << out[i].dump();
  }
  EXPECT_EQ(out[0]["error"]["diagnostics"][0]["pointer"], "/path");
  EXPECT_EQ(out[2]["error"]["diagnostics"][0]["pointer"], "/output");
  EXPECT_TRUE(out[1]["ok"].get<bool>());  // the program as text
  EXPECT_TRUE(out[1]["result"]["ok"].get<bool>());
  EXPECT_TRUE(out[6]["ok"].get<bool>());  // built-in names are not files
  EXPECT_FALSE(fs::exists(out_file));
  ASSERT_TRUE(out[7]["ok"].get<bool>()) << out[7].dump();
  EXPECT_EQ(out[7]["result"], out[8]["result"]);
  ASSERT_FALSE(out[9]["ok"].get<bool>());
  EXPECT_EQ(out[9]["error"]["diagnostics"][0]["pointer"], "/config/tiling/gemv/N_tile")
      << out[9].dump();
  ASSERT_TRUE(out[10]["ok"].get<bool>()) << out[10].dump();
  ASSERT_TRUE(out[11]["ok"].get<bool>()) << out[11].dump();
  for (const char* timing : {"candidates_per_s", "wall_s"})
    for (size_t i : {10, 11}) out[i]["result"].erase(timing);
  EXPECT_EQ(out[10]["result"], out[11]["result"]);
  ASSERT_FALSE(out[12]["ok"].get<bool>());
  EXPECT_EQ(out[12]["error"]["diagnostics"][0]["pointer"], "/start");
  ASSERT_FALSE(out[13]["ok"].get<bool>());
  EXPECT_EQ(out[13]["error"]["code"], "request.files") << out[13].dump();
}

// A value given inline is read as its text is, a lone surrogate in it too (Python's json and
// amk's reader keep one; nlohmann's dump and parser throw on one, which ended the server), and
// what amk writes back of it (the lowered program, a candidate's target) is read back alike.
TEST(Serve, AnInlineValueWithALoneSurrogateIsReadAsItsTextAndAnswered) {
  std::string text = test::slurp(program("toy_1L_default.json"));
  auto replace = [&](std::string& s, const std::string& from, const std::string& to) {
    const size_t at = s.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    s.replace(at, from.size(), to);
  };
  replace(text, R"("name": "token_id")", R"("name": "token_id\udc00")");
  replace(text, R"("eps": 1e-06)", R"("eps": -1)");
  std::string target = test::run_amk({"targets", "h100", "--json"}).out;
  replace(target, R"("name": "h100")", R"("name": "h100\ud800")");
  for (std::string* s : {&text, &target}) std::replace(s->begin(), s->end(), '\n', ' ');  // a line
  std::vector<json> out =
      exchange({"serve", "--stdio", "--no-files"},
               {R"({"id": 1, "op": "validate", "program": )" + text + "}",
                req({{"id", 2}, {"op", "validate"}, {"text", text}}),
                R"({"id": 3, "op": "search_eval", "model": "toy-1L", "target": )" + target + "}",
                R"({"id": 4, "op": "lower", "model": "toy-1L", "target": )" + target + "}",
                R"({"id": "five\udc00", "op": "validate"})"});
  ASSERT_EQ(out.size(), 5u);
  // A client matches answers by id: one with a lone surrogate comes back as it was sent.
  EXPECT_EQ(out[4]["id"], "five\xed\xb0\x80");
  EXPECT_FALSE(out[4]["ok"].get<bool>());  // nothing to validate
  out.pop_back();
  for (const json& o : out) ASSERT_TRUE(o["ok"].get<bool>()) << o.dump();
  EXPECT_EQ(out[0]["result"], out[1]["result"]);
  EXPECT_FALSE(out[0]["result"]["ok"].get<bool>());  // the negative eps, as the text says
  bool eps = false;
  for (const json& d : out[0]["result"]["errors"])
    eps = eps || d["pointer"].get<std::string>().ends_with("/params/eps");
  EXPECT_TRUE(eps) << out[0].dump();
  // The lowered program names its target as the request did: the surrogate's escape on the wire,
  // not U+FFFD.
  const std::string h100 = "h100\xed\xa0\x80";  // what the reader keeps of "h100\ud800"
  EXPECT_EQ(out[3]["result"]["program"]["target"]["name"], h100);
  EXPECT_EQ(out[3]["result"]["program"]["meta"]["gpu"], h100);
}

TEST(Serve, VerdictsEqualTheCliOnEveryConformanceProgramInRequestOrderForAnyJobs) {
  std::vector<std::string> lines;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(test::conformance_dir() / "programs"))
    files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (size_t i = 0; i < files.size(); ++i)
    lines.push_back(req({{"id", i}, {"op", "validate"}, {"path", files[i].string()}}));
  std::string one, three;
  const std::vector<json> out = exchange({"serve", "--stdio"}, lines, nullptr, &one);
  exchange({"serve", "--stdio", "--jobs", "3"}, lines, nullptr, &three);
  EXPECT_EQ(one, three);  // the same bytes, in the same order
  ASSERT_EQ(out.size(), files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    EXPECT_EQ(out[i]["id"], i);
    const test::RunResult cli = test::run_amk({"validate", "--json", files[i].string()});
    const json doc = json::parse(cli.out);
    if (cli.rc == 2) {  // unreadable: an error response naming the same code
      EXPECT_FALSE(out[i]["ok"].get<bool>()) << files[i];
      EXPECT_EQ(out[i]["error"]["code"], doc["files"][0]["errors"][0]["code"]) << files[i];
      continue;
    }
    ASSERT_TRUE(out[i]["ok"].get<bool>()) << files[i];
    EXPECT_EQ(out[i]["result"]["ok"], cli.rc == 0) << files[i];
    EXPECT_EQ(out[i]["result"]["errors"], doc["files"][0]["errors"]) << files[i];
    EXPECT_EQ(out[i]["result"]["stats"], doc["files"][0]["stats"]) << files[i];
  }
}

TEST(Mcp, AScriptedAgentSessionInitializesListsAndCallsEveryTool) {
  auto rpc = [](json id, const std::string& method, json params) {
    json j = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
    if (!params.is_null()) j["params"] = std::move(params);
    return j.dump();
  };
  auto call = [&](int id, const std::string& tool, json args) {
    return rpc(id, "tools/call", {{"name", tool}, {"arguments", std::move(args)}});
  };
  const std::string toy = program("toy_1L_default.json").string();
  const std::vector<json> out = exchange(
      {"mcp"},
      {rpc(1, "initialize",
           {{"protocolVersion", "2025-06-18"},
            {"capabilities", json::object()},
            {"clientInfo", {{"name", "test"}, {"version", "1"}}}}),
       R"({"jsonrpc":"2.0","method":"notifications/initialized"})", rpc(2, "tools/list", nullptr),
       call(3, "validate", {{"path", program("bad_cycle.json").string()}}),
       call(4, "lower", {{"model", "toy-1L"}, {"target", "h100"}}),
       call(5, "info", {{"path", toy}}), call(6, "diff", {{"a", toy}, {"b", toy}}),
       call(7, "search", {{"model", "toy-1L"}, {"target", "h100"}, {"budget", 4}}),
       call(8, "cost", {{"path", toy}, {"target", "a100"}}),
       call(9, "search_eval", {{"model", "toy-1L"}, {"target", "h100"}}),
       call(10, "validate", {{"path", "/no/such.json"}}), call(11, "teleport", json::object()),
       rpc(12, "resources/list", nullptr), "{not json",
       R"({"jsonrpc": 2, "id": 13, "method": "tools/list"})",  // fuzz: a number, not "2.0"
       rpc("last", "ping", nullptr)});
  ASSERT_EQ(out.size(), 15u);  // every message but the notification is answered
  for (const json& r : out) EXPECT_EQ(r["jsonrpc"], "2.0");
  EXPECT_EQ(out[0]["result"]["protocolVersion"], "2025-06-18");
  EXPECT_EQ(out[0]["result"]["serverInfo"]["name"], "amk");
  EXPECT_TRUE(out[0]["result"]["capabilities"].contains("tools"));
  const json& tools = out[1]["result"]["tools"];
  std::vector<std::string> names;
  for (const json& t : tools) {
    names.push_back(t["name"]);
    EXPECT_EQ(t["inputSchema"]["type"], "object") << t["name"];
    EXPECT_FALSE(t["description"].get<std::string>().empty());
  }
  for (const char* n : {"validate", "lower", "info", "diff", "search"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  for (size_t i = 2; i <= 8; ++i) {
    EXPECT_EQ(out[i]["id"], i + 1);
    EXPECT_FALSE(out[i]["result"]["isError"].get<bool>()) << out[i].dump();
    EXPECT_EQ(out[i]["result"]["content"][0]["type"], "text");
    EXPECT_EQ(json::parse(out[i]["result"]["content"][0]["text"].get<std::string>()),
              out[i]["result"]["structuredContent"]);
  }
  EXPECT_FALSE(out[2]["result"]["structuredContent"]["ok"].get<bool>());  // a rejected program
  EXPECT_EQ(out[2]["result"]["structuredContent"]["errors"][0]["code"], "graph.cycle");
  EXPECT_EQ(out[3]["result"]["structuredContent"]["tasks"], 27);
  EXPECT_EQ(out[6]["result"]["structuredContent"]["trials"], 4);
  EXPECT_TRUE(out[9]["result"]["isError"].get<bool>());  // a failing tool: a result, not a fault
  EXPECT_NE(out[9]["result"]["content"][0]["text"].get<std::string>().find("/no/such.json"),
            std::string::npos);
  EXPECT_EQ(out[10]["error"]["code"], -32602);  // unknown tool
  EXPECT_EQ(out[11]["error"]["code"], -32601);  // unknown method
  EXPECT_EQ(out[12]["error"]["code"], -32700);  // not JSON
  EXPECT_TRUE(out[12]["id"].is_null());
  EXPECT_EQ(out[13]["id"], 13);
  EXPECT_EQ(out[13]["error"]["code"], -32600);  // not JSON-RPC 2.0
  EXPECT_EQ(out[14]["id"], "last");
  EXPECT_EQ(out[14]["result"], json::object());
}

}  // namespace
}  // namespace amk
