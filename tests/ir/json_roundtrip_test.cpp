// Proves amk's JSON is AMK's: byte-identical canonical output, Python float repr, lossless
// round trips for conformance files, generated programs and randomised field values.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fixtures/gen.h"
#include "ir/json_io.h"
#include "ir/json_lexer.h"
#include "ir/pyjson.h"
#include "support.h"

namespace amk::ir {
using namespace amk::fixtures;  // the seeded programs these tests run on
namespace {

namespace fs = std::filesystem;

struct FloatCase {
  uint64_t bits;
  const char* repr;
};
// Python 3.11 repr() of each double (generated with the interpreter, including random bit
// patterns and the fixed/exponent switch points).
const FloatCase kFloats[] = {
    {0x0000000000000000ull, "0.0"},
    {0x8000000000000000ull, "-0.0"},
    {0x3ff0000000000000ull, "1.0"},
    {0xbff0000000000000ull, "-1.0"},
    {0x3fb999999999999aull, "0.1"},
    {0x3fc999999999999aull, "0.2"},
    {0x3fd3333333333333ull, "0.3"},
    {0x3eb0c6f7a0b5ed8dull, "1e-06"},
    {0x3ee4f8b588e368f1ull, "1e-05"},
    {0x3f1a36e2eb1c432dull, "0.0001"},
    {0x3f50624dd2f1a9fcull, "0.001"},
    {0x4341c37937e08000ull, "1e+16"},
    {0x430c6bf526340000ull, "1000000000000000.0"},
    {0x437b69b4ba630f35ull, "1.2345678901234568e+17"},
    {0x43118b54f22aeb00ull, "1234567890123456.0"},
    {0x4345ee2a2eb5a5c4ull, "1.2345678901234568e+16"},
    {0x40c3880000000000ull, "10000.0"},
    {0x3fd1eb851eb851ecull, "0.28"},
    {0x40b34f428f5c28f6ull, "4943.26"},
    {0x3e8421f5f40d8376ull, "1.5e-07"},
    {0x4004000000000000ull, "2.5"},
    {0x54b249ad2594c37dull, "1e+100"},
    {0x2b2bff2ee48e0530ull, "1e-100"},
    {0x0000000000000001ull, "5e-324"},
    {0x0010000000000000ull, "2.2250738585072014e-308"},
    {0x7fefffffffffffffull, "1.7976931348623157e+308"},
    {0x3fd0000000000000ull, "0.25"},
    {0x3fd5555555555555ull, "0.3333333333333333"},
    {0x3fe5555555555555ull, "0.6666666666666666"},
    {0x4059000000000000ull, "100.0"},
    {0x4480f0cf064dd592ull, "1e+22"},
    {0x444b1ae4d6e2ef50ull, "1e+21"},
    {0x4340000000000000ull, "9007199254740992.0"},
    {0x3f201f31f46ed246ull, "0.000123"},
    {0x405edd2f1a9fbe77ull, "123.456"},
    {0x3f1a36e2eb1c432dull, "0.0001"},
    {0x4341c37937e08000ull, "1e+16"},
    {0x408c000000000000ull, "896.0"},
    {0x40aa2c0000000000ull, "3350.0"},
    {0x3ff98d4fdf3b645aull, "1.597"},
    {0x3fe0000000000000ull, "0.5"},
    {0xbefa36e2eb1c432dull, "-2.5e-05"},
    {0xf2a74de452e6b438ull, "-1.989032661366619e+244"},
    {0x6513270e269e0d37ull, "7.761117632285041e+178"},
    {0x0c5c7fd0a6a3a450ull, "3.980498358697587e-249"},
    {0xd23f0824128b2f33ull, "-1.5432835417340557e+88"},
    {0x1818e811892f902bull, "1.3647584518757569e-192"},
    {0x9531985d5d9dc9f8ull, "-1.3701135617873088e-206"},
    {0xe8e25d940ed90475ull, "-1.7160537630466207e+197"},
    {0x36f675cc81e74ef5ull, "6.294675241195386e-44"},
    {0x1600a35a099950d8ull, "1.0613447212142254e-202"},
    {0x6b0d549b6f03675aull, "4.708325160387546e+207"},
    {0x3d9c172411e20b8full, "6.387016158513563e-12"},
    {0x8d116ece1738f7d9ull, "-9.973130378568733e-246"},
    {0x0f21ddb66cad4a26ull, "8.779753225680271e-236"},
    {0x90c192cfd3ac94afull, "-5.795503248498993e-228"},
    {0xf28c105d1fb17c23ull, "-5.988180159386011e+243"},
    {0xa170b33839263059ull, "-1.306052388527796e-147"},
    {0x953f48f1a09f76b5ull, "-2.436117699484841e-206"},
    {0x0fd630f1f29d0da9ull, "2.233386999150174e-232"},
    {0x95e60af593bd04cfull, "-3.51527970626667e-203"},
    {0x0cb1e29c658cda14ull, "1.5987381841032883e-247"},
    {0x3898d190f9ebdaccull, "4.6678633181812096e-36"},
    {0x8e81973e0becd7b0ull, "-8.441872792105456e-239"},
    {0x2217beaddbc496cbull, "1.9015657400796622e-144"},
    {0x6b4cb2424a23d596ull, "7.370437700706684e+208"},
    {0x8a6a63ec24ede6a4ull, "-1.7163996725272777e-258"},
    {0x922766581e27a1c0ull, "-3.2367190832119987e-221"},
    {0x8f6d05584ef8aa38ull, "-2.2818334634712625e-234"},
    {0xae97ba94d0eda82full, "-3.0536383926309363e-84"},
    {0x1a61dbe22e44158bull, "1.3449551894627777e-181"},
    {0x923a736994e3bf91ull, "-7.317495976062606e-221"},
    {0x301850c5a38fd547ull, "5.249822308814304e-77"},
    {0x18f135d25f557203ull, "1.5450754142984396e-188"},
    {0xb64ce4228c38fb29ull, "-3.953625698224792e-47"},
    {0x907a70c31012f037ull, "-2.72491267476498e-229"},
    {0x9e7769b10f4205b4ull, "-6.505141861548772e-162"},
    {0x7f15052434b9b5dfull, "1.441484839555994e+304"},
    {0x881ed162ae2eb154ull, "-1.4583679262758548e-269"},
    {0xc6f877186d76b07eull, "-7.939416668807721e+33"},
    {0x7731af10506bf2efull, "1.4255183989699612e+266"},
    {0xec66a78795e761d1ull, "-1.525315701232403e+214"},
    {0xc05768665ae6aeb0ull, "-93.63124725844932"},
    {0xc0790774c2fe4b30ull, "-400.46600627263524"},
    {0x408266125b378892ull, "588.7589630449822"},
    {0x4078dfd266af5188ull, "397.9888674591425"},
    {0xc07ffce96258947bull, "-511.80697855569423"},
    {0x40629b1e11a1fe30ull, "148.84742051734202"},
    {0x4049324e12e3b920ull, "50.393007622902815"},
    {0x408772332e8ef38cull, "750.2749911468577"},
    {0x407cae3fcfa35634ull, "458.89057887843524"},
    {0xc07a81fdd47c29faull, "-424.1244702196269"},
    {0x408e02cc2ce266d8ull, "960.3496949851642"},
    {0xc087def292802266ull, "-763.8684434900758"},
    {0xc0647823b0184da0ull, "-163.75435642954562"},
    {0x408012413f5c1c92ull, "514.2818591304988"},
    {0xc085c03f589575a8ull, "-696.0309306789904"},
    {0xc03612e47e934e40ull, "-22.073799048388764"},
    {0xc08cccaf133bf63cull, "-921.5854859051246"},
    {0x407506e84bf67b60ull, "336.4317130687905"},
    {0x40808922449c26c8ull, "529.1417324256263"},
    {0x406241a90168c0d8ull, "146.05188055476788"},
};

TEST(PythonFloatRepr, MatchesCPythonForEdgeAndRandomDoubles) {
  for (const auto& c : kFloats) {
    double v = std::bit_cast<double>(c.bits);
    EXPECT_EQ(py_float(v), c.repr) << std::hex << c.bits;
  }
}

TEST(PythonRound2, PrintsWeightMegabytesLikeAmkStats) {
  EXPECT_EQ(py_round2(0.279296), "0.28");
  EXPECT_EQ(py_round2(2.0), "2.0");
  EXPECT_EQ(py_round2(4943.26272), "4943.26");
  EXPECT_EQ(py_round2(0.125), "0.12");  // exact tie rounds half to even, as Python's round()
}

TEST(JsonStrings, EscapeNonAsciiAndControlCharactersLikeEnsureAscii) {
  std::string out;
  append_json_string(out, "a\"b\\c\n\t\x01\x7f\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(out, R"("a\"b\\c\n\t\u0001\u007f\u00e9\ud83d\ude00")");
}

// The lexer scans a string sixteen bytes at a time and reads a short integer in one pass; at
// every length and position (the end of the text included) it must read what JSON defines, as
// nlohmann reads the same text, and refuse what JSON refuses.
TEST(JsonLexer, StringsAndIntegersReadAsJsonDefinesThemAtEveryLengthAndPosition) {
  std::mt19937_64 rng(23);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  const std::vector<std::string> specials = {
      "\\\"",    "\\\\",           "\\/",      "\\n",          "\\t",
      "\\u00e9", "\\ud83d\\ude00", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80"};
  const std::vector<std::string> bad = {"\x01", "\n", "\xff", "\xc3", "\\x", "\xed\xa0\x80"};
  int refused = 0;
  for (int n = 0; n < 3000; ++n) {
    std::vector<std::string> parts(pick(40));
    for (std::string& part : parts)
      part =
          pick(4) == 0 ? specials[pick(specials.size())] : std::string(1, "abcXYZ019 _-"[pick(12)]);
    // Between two pieces: inside an escape it would make another (maybe a lone surrogate, which
    // Python's json and amk read and nlohmann does not).
    if (pick(8) == 0) parts.insert(parts.begin() + pick(parts.size() + 1), bad[pick(bad.size())]);
    std::string s;
    for (const std::string& part : parts) s += part;
    // A value at the very end of the text, and a key and a label inside a program.
    const std::string tail = R"({"k": ")" + s + "\"}";
    const std::string prog = R"({"buffers": [], "counters": [], "tasks": [{"id": 0, "op": "NOP", )"
                             R"("inputs": [], "outputs": [], "out_counter": 0, "params": {")" +
                             s + R"(": 1}, "label": ")" + s + "\"}]}";
    std::optional<std::string> want;
    try {
      want = nlohmann::json::parse(tail)["k"].get<std::string>();
    } catch (const nlohmann::json::exception&) {
      ++refused;
    }
    auto t = parse_json_object(tail, "a test object");
    auto r = parse_program(prog);
    ASSERT_EQ(t.ok(), want.has_value()) << tail;
    ASSERT_EQ(r.ok(), want.has_value()) << prog;
    if (!want) continue;
    EXPECT_EQ(t.value->json()["k"].get<std::string>(), *want) << tail;
    EXPECT_EQ(r.value->tasks[0].label, *want) << prog;
    EXPECT_EQ(r.value->tasks[0].params.at(0).key, *want) << prog;
  }
  EXPECT_GT(refused, 100);  // the refusals were exercised too

  int past = 0, cut = 0;
  // The integer field before the params (eight bytes and more follow it), or last (three do).
  auto program = [](const std::string& out_counter, const std::string& param, bool counter_last) {
    const std::string head =
        R"({"buffers": [], "counters": [], "tasks": [{"id": 0, "op": "NOP", "inputs": [], )"
        R"("outputs": [], )";
    if (counter_last)
      return head + R"("params": {"v": )" + param + R"(}, "out_counter": )" + out_counter + "}]}";
    return head + R"("out_counter": )" + out_counter + R"(, "params": {"v": )" + param + "}}]}";
  };
  // What may follow a number: blanks, or a byte that ends it and makes the text invalid (':' and
  // '/' are the neighbours of the digits, 0xFA-0xFF carry when six is added to them).
  const std::vector<std::string> after = {"", " ", "\n", ":", "/", "a", "\xfa", "\xff"};
  for (int n = 0; n < 6000; ++n) {
    std::string num = pick(3) == 0 ? "-" : "";
    if (pick(3) == 0) {  // about int64's and uint64's limits (19 and 20 digits)
      num += pick(2) ? "9223372036854775" : "18446744073709551";
      for (int k = 0; k < 3; ++k) num += static_cast<char>('0' + pick(10));
    } else {
      const size_t digits = 1 + pick(22);
      for (size_t k = 0; k < digits; ++k) num += static_cast<char>('0' + pick(10));
    }
    if (pick(6) == 0) num += pick(2) ? ".5" : "e2";
    // As an integer field (out_counter) and as a param, which also takes a float.
    const std::string& next = after[pick(after.size())];
    const bool last = pick(2) == 0;
    auto as_int = parse_program(program(num + next, "0", last));
    auto as_param = parse_program(program("0", num + next, last));
    if (next.find_first_of(" \n") == std::string::npos && !next.empty()) {  // not JSON
      ++cut;
      EXPECT_FALSE(as_int.ok()) << num << next;
      EXPECT_FALSE(as_param.ok()) << num << next;
      continue;
    }
    nlohmann::json want;
    try {
      want = nlohmann::json::parse(num);
    } catch (const nlohmann::json::exception&) {  // a leading zero
      EXPECT_FALSE(as_int.ok()) << num;
      EXPECT_FALSE(as_param.ok()) << num;
      continue;
    }
    const bool fits =
        want.is_number_integer() &&
        (!want.is_number_unsigned() || want.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX));
    if (fits) {
      ASSERT_TRUE(as_int.ok()) << num;
      EXPECT_EQ(as_int.value->tasks[0].out_counter, want.get<int64_t>()) << num;
      ASSERT_TRUE(as_param.ok()) << num;
      EXPECT_EQ(as_param.value->tasks[0].params.at(0).value,
                ParamValue::of_int(want.get<int64_t>()))
          << num;
    } else if (want.is_number_float() && num.find_first_of(".e") != std::string::npos) {
      EXPECT_FALSE(as_int.ok()) << num;  // a float is not an integer field
      ASSERT_TRUE(as_param.ok()) << num;
      EXPECT_EQ(as_param.value->tasks[0].params.at(0).value,
                ParamValue::of_float(want.get<double>()))
          << num;
    } else {  // an integer past int64
      ++past;
      EXPECT_FALSE(as_int.ok()) << num;
      EXPECT_FALSE(as_param.ok()) << num;
    }
  }
  EXPECT_GT(past, 100);  // integers just past int64 were exercised too
  EXPECT_GT(cut, 1000);  // and numbers cut short by a byte that is not a digit
}

// PTO's 64-bit values are decimal strings, read eight digits at a time: at every length, with
// leading zeros, past 2^64 and with a stray byte anywhere, what std::from_chars reads when it
// must consume the whole string.
TEST(JsonLexer, DecimalStringsReadAsFromCharsReadsThem) {
  std::mt19937_64 rng(7);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  const std::vector<std::string> edges = {"",
                                          "0",
                                          "00000000000000000000000000000042",
                                          "18446744073709551615",
                                          "18446744073709551616",
                                          "99999999999999999999",
                                          "4294967296",
                                          "-1",
                                          "+1",
                                          " 1"};
  int accepted = 0;
  for (int n = 0; n < 20000; ++n) {
    std::string s;
    if (n < static_cast<int>(edges.size())) {
      s = edges[static_cast<size_t>(n)];
    } else {
      const size_t zeros = pick(4) == 0 ? pick(12) : 0;
      s.assign(zeros, '0');
      for (size_t k = pick(23); k > 0; --k) s += static_cast<char>('0' + pick(10));
      if (pick(5) == 0 && !s.empty()) s[pick(s.size())] = ":/a. -"[pick(6)];
    }
    uint64_t want = 0, got = 0;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), want);
    const bool ok = r.ec == std::errc() && r.ptr == s.data() + s.size();
    ASSERT_EQ(detail::Lexer::decimal_u64(s, got), ok) << '"' << s << '"';
    if (ok) {
      EXPECT_EQ(got, want) << s;
    }
    accepted += ok;
  }
  EXPECT_GT(accepted, 5000);
}

TEST(JsonStrings, LoneSurrogatesSurviveARoundTrip) {
  std::string text = R"({"meta": {"s": "x\ud800y"}, "buffers": [], "counters": [], "tasks": []})";
  auto r = parse_program(text);
  ASSERT_TRUE(r.ok());
  std::string out = write_program(*r.value);
  EXPECT_NE(out.find(R"("x\ud800y")"), std::string::npos) << out;
}

// Up to `most` of `pieces`, drawn at random and joined: a string for the writers' tests.
std::string random_text(std::mt19937_64& rng, size_t most,
                        std::initializer_list<std::string_view> pieces) {
  std::string s;
  for (size_t n = rng() % (most + 1); n > 0; --n) s += *(pieces.begin() + rng() % pieces.size());
  return s;
}

// dump_text is nlohmann's dump byte for byte wherever that dump loses nothing: random values
// (control characters, non-ASCII text, floats from random bits, both integer kinds, nesting) and
// every conformance program, both json types, one line and indented.
TEST(DumpText, IsNlohmannsDumpByteForByteOnEveryValueItCanWrite) {
  std::mt19937_64 rng(7);
  const auto text = [&] {
    return random_text(rng, 5,
                       {"a", "\"", "\\", "\n", "\x01", "\x1f", "\x7f", "/", "\xc3\xa9",
                        "\xe2\x82\xac", "\xf0\x9f\x98\x80", " "});
  };
  std::function<nlohmann::ordered_json(int)> value = [&](int depth) -> nlohmann::ordered_json {
    switch (rng() % (depth > 3 ? 6 : 8)) {
      case 0:
        return nullptr;
      case 1:
        return rng() % 2 == 0;
      case 2:
        return static_cast<int64_t>(rng());
      case 3:
        return static_cast<uint64_t>(rng());
      case 4: {
        double d = std::bit_cast<double>(rng());
        return std::isfinite(d) ? d : 0.5 * static_cast<double>(rng() % 1000);
      }
      case 5:
        return text();
      case 6: {
        nlohmann::ordered_json a = nlohmann::ordered_json::array();
        for (size_t n = rng() % 4; n > 0; --n) a.push_back(value(depth + 1));
        return a;
      }
      default: {
        nlohmann::ordered_json o = nlohmann::ordered_json::object();
        for (size_t n = rng() % 4; n > 0; --n) o[text()] = value(depth + 1);
        return o;
      }
    }
  };
  for (int k = 0; k < 2000; ++k) {
    const nlohmann::ordered_json v = value(0);
    const nlohmann::json u = v;
    for (int indent : {-1, 0, 2, 4}) {
      ASSERT_EQ(dump_text(v, indent), v.dump(indent)) << v.dump();
      ASSERT_EQ(dump_text(u, indent), u.dump(indent)) << u.dump();
    }
  }
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(test::conformance_dir() / "programs")) {
    const std::string s = test::slurp(e.path());
    const auto v = nlohmann::ordered_json::parse(s, nullptr, false, true);
    if (v.is_discarded()) continue;
    ++files;
    for (int indent : {-1, 2}) EXPECT_EQ(dump_text(v, indent), v.dump(indent)) << e.path();
  }
  EXPECT_GT(files, 20);
}

// Where nlohmann's dump throws or writes U+FFFD, dump_text keeps what amk's reader read: a lone
// surrogate is its escape again, and the text reads back as the same value.
TEST(DumpText, ALoneSurrogateIsWrittenAsItsEscapeAndReadsBackTheSame) {
  const nlohmann::ordered_json v =
      reread_object(R"({"k\udc00": ["x\ud800y", "\udbff", "\ud83d\ude00"], "n": 1.5})");
  EXPECT_EQ(v["k\xed\xb0\x80"][0], "x\xed\xa0\x80y");  // what the reader keeps
  EXPECT_EQ(dump_text(v),
            "{\"k\\udc00\":[\"x\\ud800y\",\"\\udbff\",\"\xf0\x9f\x98\x80\"],\"n\":1.5}");
  EXPECT_EQ(reread_object(dump_text(v)), v);
  EXPECT_EQ(reread_object(dump_text(v, 2)), v);
  // Random strings of what the reader gives (UTF-8, control characters and lone surrogates; a
  // high one never right before a low one, which the reader would have read as one pair), in
  // keys and values, one line and indented: read back the same.
  std::mt19937_64 rng(11);
  const auto text = [&] {
    return random_text(rng, 7,
                       {"a", "\"", "\\", "\n", "\x01", "\x7f", "\xc3\xa9", "\xf0\x9f\x98\x80",
                        "\xed\xa0\x80x", "\xed\xbf\xbf", "\xed\x9f\xbf", "\xee\x80\x80"});
  };
  for (int k = 0; k < 500; ++k) {
    nlohmann::ordered_json o = nlohmann::ordered_json::object();
    o[text()] = text();
    o[text()] = nlohmann::ordered_json::array({text(), 1.25, text()});
    for (int indent : {-1, 2}) ASSERT_EQ(reread_object(dump_text(o, indent)), o) << o.dump();
  }
  // Bytes no reader gives are U+FFFD, one for each byte, and the text is still JSON.
  EXPECT_EQ(dump_text(nlohmann::ordered_json("a\xff\xc3z")), "\"a\xef\xbf\xbd\xef\xbf\xbdz\"");
}

TEST(ConformanceRoundTrip, EveryAmkProgramIsRewrittenByteIdentical) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(test::conformance_dir() / "programs")) {
    if (e.path().filename() == "bad_ir_major_version.json") continue;
    std::string text = test::slurp(e.path());
    auto r = parse_program(text);
    ASSERT_TRUE(r.ok()) << e.path();
    EXPECT_EQ(write_program(*r.value), text) << e.path();
    // from_json(to_json(p)) == p
    auto again = parse_program(write_program(*r.value));
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again.value, *r.value) << e.path();
    ++n;
  }
  EXPECT_EQ(n, 35);
}

TEST(ConformanceRoundTrip, MajorVersionMismatchIsUnreadableWithPointer) {
  auto r = load_program((test::conformance_dir() / "programs/bad_ir_major_version.json").string());
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.diagnostics.size(), 1u);
  EXPECT_EQ(r.diagnostics[0].code, "ir.version");
  EXPECT_EQ(r.diagnostics[0].pointer, "/ir_version");
  EXPECT_EQ(r.diagnostics[0].message, "IR major version mismatch: file 1.0.0 vs runtime 0.2.0");
}

TEST(ConformanceRoundTrip, UnknownFieldsAreKeptInPlaceAfterKnownOnes) {
  std::string text =
      R"({"x_top": 1, "ir_version": "0.2.9", "meta": {}, "buffers": [], "counters": [{"id": 0, "note": "n", "future": [1, 2.5]}], "tasks": [], "config": {"future_knob": 7, "pipelining_depth": 3}})";
  auto r = parse_program(text);
  ASSERT_TRUE(r.ok());
  std::string out = write_program(*r.value);
  auto j = nlohmann::ordered_json::parse(out);
  EXPECT_EQ(j.back(), 1);               // unknown top-level key kept, last
  EXPECT_EQ(j["ir_version"], "0.2.9");  // minor version preserved
  EXPECT_EQ(j["counters"][0]["future"][1], 2.5);
  EXPECT_EQ(j["config"]["pipelining_depth"], 3);
  EXPECT_EQ(j["config"].back(), 7);
  EXPECT_EQ(j["counters"][0]["init"], 0);  // defaults written explicitly
}

TEST(ConformanceRoundTrip, FalsyTargetPagesAndConfigLoadAsNull) {
  auto r = parse_program(
      R"({"target": {}, "pages": {}, "config": {}, "buffers": [], "counters": [], "tasks": []})");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r.value->target);
  EXPECT_FALSE(r.value->pages);
  EXPECT_FALSE(r.value->config);
}

TEST(ConformanceRoundTrip, IntKeyedMapsAreCanonicalisedLikePythonInt) {
  auto r = parse_program(
      R"({"buffers": [], "counters": [], "tasks": [], "config": {"sm_assignment": {" 007": 1, "1_0": 2}}})");
  ASSERT_TRUE(r.ok());
  const auto& sa = r.value->config->sm_assignment.json();
  EXPECT_EQ(sa.begin().key(), "7");
  EXPECT_EQ((++sa.begin()).key(), "10");
}

// Random values in every field the model keeps: ints vs floats, unicode, extras, params.
Program randomise(Program p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](uint64_t n) { return n ? rng() % n : 0; };
  auto rand_double = [&] {
    for (;;) {
      double d = std::bit_cast<double>(rng());
      if (std::isfinite(d)) return pick(3) ? d : std::ldexp(static_cast<double>(pick(1000)), -3);
    }
  };
  const char* strings[] = {"",
                           "plain",
                           "ümlaut ünicode",
                           "quote\"back\\slash",
                           "tab\tnl\n",
                           "\xf0\x9f\x98\x80 emoji",
                           "ctl\x01\x1f",
                           "del\x7f"};
  for (Task& t : p.tasks) {
    t.label = strings[pick(std::size(strings))];
    if (pick(3) == 0) t.sm = static_cast<int64_t>(pick(200)) - 10;
    t.est_bytes = static_cast<int64_t>(rng() >> 1);
    t.set_param("scale", pick(2) ? ParamValue::of_float(rand_double())
                                 : ParamValue::of_int(static_cast<int64_t>(rng())));
    t.set_param("flag", ParamValue::of_bool(pick(2)));
    if (pick(4) == 0)
      t.set_param("recipe",
                  ParamValue::of_json(JsonValue(nlohmann::ordered_json::parse(
                      R"({"steps": [{"op": 11, "out": "final", "x": [1, 2.0, null]}]})"))));
    if (pick(5) == 0)
      t.extra = JsonValue(nlohmann::ordered_json{{"zz", rand_double()}, {"aa", "x"}});
  }
  for (Counter& c : p.counters) c.init = static_cast<int64_t>(pick(3));
  for (Buffer& b : p.buffers)
    if (pick(4) == 0) b.source = strings[pick(std::size(strings))];
  Target t;
  t.name = "rand";
  t.num_sms = Number::of(static_cast<int64_t>(pick(200)));
  t.hbm_bandwidth_gbs = pick(2) ? Number::real(rand_double()) : Number::of(3350);
  t.clock_ghz = Number::real(rand_double());
  t.note = strings[pick(std::size(strings))];
  p.target = t;
  p.meta.mut()["float"] = rand_double();
  p.meta.mut()["nested"] = {{"a", {1, 2, {{"b", nullptr}}}}, {"ü", true}};
  if (!p.config) p.config = ScheduleConfig::defaults();
  p.config->pipelining_depth = JsonValue(nlohmann::ordered_json(static_cast<int>(pick(5))));
  return p;
}

TEST(RoundTripProperty, GeneratedAndRandomisedProgramsSurviveWriteThenRead) {
  const GenShape shapes[] = {GenShape::Llama, GenShape::Mesh, GenShape::Chain, GenShape::Fan};
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    GenOptions o;
    o.shape = shapes[seed % 4];
    o.seed = seed;
    o.tasks = 50 + seed * 17;
    o.pages = seed % 2 == 0;
    o.num_sms = seed % 3 == 0 ? 7 : 0;
    Program p = randomise(generate(o).program, seed);
    std::string text = write_program(p);
    auto r = parse_program(text);
    ASSERT_TRUE(r.ok()) << "seed " << seed << ": " << r.diagnostics[0].message;
    EXPECT_EQ(*r.value, p) << "seed " << seed;
    EXPECT_EQ(write_program(*r.value), text) << "seed " << seed;
  }
}

// The loader finds a record's keys by comparing the bytes that led to the same member of the
// record of that kind before it (a canonical file repeats them). Records laid out any other way
// (reordered, compact, other blanks, escaped keys, a key given twice) must read as written, with
// each duplicate key reported at its place, whatever record came before them.
class MixedLayout {
 public:
  explicit MixedLayout(uint64_t seed) : rng_(seed) {}
  std::string text;
  std::vector<std::string> duplicates;  // "pointer line:column" of each key given twice

  void value(const nlohmann::ordered_json& v, const std::string& kind, int depth,
             const std::string& ptr) {
    if (v.is_object()) {
      object(v, kind, depth, ptr);
    } else if (v.is_array()) {
      const std::string elem = kind == "program-tasks"      ? "task"
                               : kind == "program-buffers"  ? "buffer"
                               : kind == "program-counters" ? "counter"
                               : kind == "task-waits"       ? "wait"
                                                            : "";
      const Style st = style(depth);
      text += '[';
      for (size_t i = 0; i < v.size(); ++i) {
        text += (i ? "," : "") + st.before;
        value(v[i], elem, depth + 1, ptr + "/" + std::to_string(i));
      }
      text += (v.empty() ? "" : st.close) + "]";
    } else {
      text += v.dump();
    }
  }

 private:
  struct Style {
    std::string before, colon, close;
  };
  std::mt19937_64 rng_;
  size_t pick(size_t n) { return static_cast<size_t>(rng_() % n); }

  Style style(int depth) {
    switch (pick(4)) {
      case 0:  // canonical: what the records before may have taught the reader
        return {"\n" + std::string(2 * (depth + 1), ' '), ": ", "\n" + std::string(2 * depth, ' ')};
      case 1:
        return {"", ":", ""};
      case 2:
        return {" ", ": ", " "};
      default:
        return {"\r\n\t", " :\t", "\n"};
    }
  }

  void key(const std::string& k, const Style& st) {
    text += '"';
    if (!k.empty() && pick(8) == 0)  // the same key, its first character escaped
      text += fmt::format("\\u{:04x}{}", static_cast<unsigned char>(k[0]), k.substr(1));
    else
      text += k;
    text += '"' + st.colon;
  }

  void object(const nlohmann::ordered_json& v, const std::string& kind, int depth,
              const std::string& ptr) {
    std::vector<std::string> keys;
    for (auto it = v.begin(); it != v.end(); ++it) keys.push_back(it.key());
    static const std::map<std::string, std::set<std::string>> kKnown = {
        {"task",
         {"id", "op", "inputs", "outputs", "out_counter", "waits", "params", "sm", "est_bytes",
          "est_flops", "label"}},
        {"buffer", {"id", "name", "kind", "dtype", "shape", "space", "source"}},
        {"counter", {"id", "init", "note"}},
        {"wait", {"counter", "threshold"}}};
    const auto known = kKnown.find(kind);
    const bool record = known != kKnown.end();
    if (record && pick(3) == 0) {  // known fields in any order, unknown ones kept in theirs
      std::vector<std::string> unknown;
      for (const auto& k : keys)
        if (!known->second.count(k)) unknown.push_back(k);
      std::shuffle(keys.begin(), keys.end(), rng_);
      size_t u = 0;
      for (auto& k : keys)
        if (!known->second.count(k)) k = unknown[u++];
    }
    std::string twice;  // a known key given first with the same value, then again where it was
    if (record && !keys.empty() && pick(5) == 0) {
      twice = keys[pick(keys.size())];
      if (!known->second.count(twice)) twice.clear();
    }
    const Style st = style(depth);
    text += '{';
    bool first = true;
    auto member = [&](const std::string& k) {
      text += (first ? "" : ",") + st.before;
      first = false;
      const size_t at = text.size();
      key(k, st);
      const std::string child = kind == "" && depth == 0 ? "program-" + k : kind + "-" + k;
      value(v[k], child, depth + 1, ptr + "/" + k);
      return at;
    };
    if (!twice.empty()) member(twice);
    for (const auto& k : keys) {
      const size_t at = member(k);
      if (k == twice) {
        const auto nl = text.rfind('\n', at);
        const size_t line = 1 + static_cast<size_t>(std::count(
                                    text.begin(), text.begin() + static_cast<long>(at), '\n'));
        const size_t col = nl == std::string::npos ? at + 1 : at - nl;
        duplicates.push_back(fmt::format("{}/{} {}:{}", ptr, k, line, col));
      }
    }
    text += (keys.empty() ? "" : st.close) + "}";
  }
};

TEST(KeyLeads, RecordsInMixedLayoutsReadAsWrittenWhateverRecordCameBefore) {
  int dups = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    GenOptions o;
    o.shape = seed % 2 ? GenShape::Mesh : GenShape::Llama;
    o.seed = seed;
    o.tasks = 400;
    Program p = randomise(generate(o).program, seed);
    MixedLayout lay(seed);
    lay.value(nlohmann::ordered_json::parse(write_program(p)), "", 0, "");
    auto r = parse_program(lay.text);
    ASSERT_TRUE(r.ok()) << "seed " << seed << ": " << test::text(r.diagnostics);
    EXPECT_TRUE(*r.value == p) << "seed " << seed;
    EXPECT_EQ(write_program(*r.value), write_program(p)) << "seed " << seed;
    std::vector<std::string> warned;
    for (const Diagnostic& d : r.diagnostics)
      if (d.code == "json.duplicate-key")
        warned.push_back(fmt::format("{} {}:{}", d.pointer, d.line, d.column));
    EXPECT_EQ(warned, lay.duplicates) << "seed " << seed;
    dups += static_cast<int>(lay.duplicates.size());
  }
  EXPECT_GT(dups, 100);  // keys given twice were exercised
}

}  // namespace
}  // namespace amk::ir
