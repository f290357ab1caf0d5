// The runtime record a foreign graph's program carries (ir::Runtime): its scopes and tasks are
// written and read field for field, and a field of the wrong type is an error at its pointer.
#include "ir/runtime.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace amk::ir {
namespace {

using ojson = nlohmann::ordered_json;

Runtime pto_record() {
  Runtime r;
  r.kind = RuntimeKind::Pto;
  r.set(Cap::task_window, {16, 32});
  r.set(Cap::heap, {1 << 20});
  r.scopes = {{-1, 0, 0, "orch.cpp:12", 0, 9}, {0, 1, 1, "orch.cpp:30", 2, 7}};
  ForeignTask a;
  a.id = (uint64_t{1} << 32) | 5;  // ring 1, local 5: past 2^32, as PTO's task ids go
  a.kind = 2;
  a.variant = 3;
  a.scope = 1;
  a.kernels = {-1, 4, 5};
  a.heap = 4096;
  a.fanin = 2;
  a.early = true;
  ForeignTask b;
  b.id = 7;
  b.manual = true;
  r.tasks = {a, b, ForeignTask{}};
  r.twaits = {{a.id, 7}};
  return r;
}

TEST(RuntimeRecord, ScopesAndTasksRoundTripFieldForField) {
  const Runtime r = pto_record();
  const JsonValue j = runtime_json(r);
  Result<Runtime> back = parse_runtime(j);
  ASSERT_TRUE(back) << j.json().dump();
  EXPECT_EQ(*back, r);
  // A flag is written only when it is set; every other field always, in the record's order.
  const ojson& t = j.json()["tasks"];
  std::vector<std::string> keys;
  for (auto it = t[0].begin(); it != t[0].end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"id", "kind", "variant", "scope", "kernels", "heap",
                                            "fanin", "early"}));
  EXPECT_FALSE(t[2].contains("early"));
  EXPECT_FALSE(t[2].contains("manual"));
  EXPECT_TRUE(t[1]["manual"].get<bool>());
  EXPECT_EQ(j.json()["scopes"][1]["site"], "orch.cpp:30");
}

TEST(RuntimeRecord, AnMpkTaskCarriesItsIdentityOnly) {
  Runtime r;
  r.kind = RuntimeKind::Mpk;
  ForeignTask t;
  t.id = 3;
  t.kind = 119;
  t.variant = 1;
  r.tasks = {t};
  const JsonValue j = runtime_json(r);
  EXPECT_EQ(j.json()["tasks"][0].dump(), R"({"id":3,"kind":119,"variant":1})");
  Result<Runtime> back = parse_runtime(j);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, r);
}

TEST(RuntimeRecord, ATaskIdMayBeADecimalString) {
  const ojson j = ojson::parse(R"({"kind": "pto", "tasks": [{"id": "4294967301"}]})");
  Result<Runtime> r = parse_runtime(JsonValue(j));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->tasks[0].id, (uint64_t{1} << 32) | 5);
}

TEST(RuntimeRecord, AFieldOfTheWrongTypeIsAnErrorAtItsPointer) {
  struct Case {
    const char* list;
    const char* key;
    ojson value;
    const char* expected;
  };
  const Case cases[] = {
      {"scopes", "parent", "x", "an integer"},
      {"scopes", "depth", 1.5, "an integer"},
      {"scopes", "ring", int64_t{1} << 40, "an integer"},  // past int32
      {"scopes", "site", 12, "a string"},
      {"scopes", "begin", true, "an integer"},
      {"scopes", "end", ojson::array(), "an integer"},
      {"tasks", "id", -1, "an unsigned integer"},
      {"tasks", "id", "12x", "an unsigned integer"},
      {"tasks", "kind", "aic", "an integer"},
      {"tasks", "variant", ojson::object(), "an integer"},
      {"tasks", "scope", 2.5, "an integer"},
      {"tasks", "kernels", ojson::array({1, 2}), "a list of three integers"},
      {"tasks", "kernels", ojson::array({1, 2, "3"}), "a list of three integers"},
      {"tasks", "heap", "big", "an integer"},
      {"tasks", "fanin", nullptr, "an integer"},
      {"tasks", "early", 1, "a boolean"},
      {"tasks", "manual", "yes", "a boolean"},
  };
  for (const Case& c : cases) {
    ojson j = {{"kind", "pto"}, {c.list, ojson::array({ojson::object()})}};
    j[c.list][0][c.key] = c.value;
    Result<Runtime> r = parse_runtime(JsonValue(j));
    ASSERT_FALSE(r) << j.dump();
    ASSERT_EQ(r.diagnostics.size(), 1u) << j.dump();
    const Diagnostic& d = r.diagnostics[0];
    EXPECT_EQ(d.code, "runtime.field");
    EXPECT_EQ(d.pointer, std::string("/runtime/") + c.list + "/0/" + c.key) << j.dump();
    EXPECT_EQ(d.message, std::string("runtime field '") + c.key + "' must be " + c.expected)
        << j.dump();
  }
}

TEST(RuntimeRecord, BlockingWaitPairsComeFromLaunchAndMalformedOnesAreErrors) {
  Runtime r;
  ASSERT_TRUE(apply_launch(r, "twait=4294967301:7").ok());
  EXPECT_EQ(r.twaits, (std::vector<std::array<uint64_t, 2>>{{(uint64_t{1} << 32) | 5, 7}}));
  EXPECT_EQ(runtime_json(r).json()["twaits"].dump(), "[[4294967301,7]]");
  for (const char* bad : {"twait=1", "twait=1:", "twait=:2", "twait=1:2:3", "twait=-1:2"}) {
    Status st = apply_launch(r, bad);
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_EQ(st.diagnostics[0].code, "launch.value") << bad;
  }
  for (const char* bad : {R"("x")", "[[1]]", R"([[1, "2x"]])", "[[1, -2]]", "[3]"}) {
    const ojson j = ojson::parse(std::string(R"({"kind": "pto", "twaits": )") + bad + "}");
    Result<Runtime> back = parse_runtime(JsonValue(j));
    ASSERT_FALSE(back) << bad;
    EXPECT_EQ(back.diagnostics[0].pointer, "/runtime/twaits") << bad;
  }
}

}  // namespace
}  // namespace amk::ir
