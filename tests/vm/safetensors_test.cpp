// Safetensors reading and writing: round trips, and every malformed header is a clear error.
#include <gtest/gtest.h>

#include <cstring>

#include "support.h"
#include "vm/safetensors.h"

namespace amk::vm {
namespace {

std::span<const uint8_t> bytes_of(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::string with_header(const std::string& header, size_t data_bytes) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int k = 0; k < 8; ++k) out[static_cast<size_t>(k)] = static_cast<char>(n >> (8 * k) & 0xFF);
  return out + header + std::string(data_bytes, '\0');
}

TEST(SafeTensors, WrittenFilesReadBackWithTheSameNamesShapesAndBytes) {
  std::vector<float> a{1.5f, -2.f, 3.25f, 0.f, 7.f, 8.f};
  std::vector<int32_t> b{7, 9};
  std::vector<StOut> outs{
      {"zeta", StDType::F32, {2, 3}, {reinterpret_cast<uint8_t*>(a.data()), 24}},
      {"alpha", StDType::I32, {2}, {reinterpret_cast<uint8_t*>(b.data()), 8}}};
  auto dir = test::temp_dir();
  const auto path = (dir / "t.safetensors").string();
  ASSERT_TRUE(test::ok(st_write(path, outs)));
  auto f = test::must(SafeTensors::open(path));
  ASSERT_EQ(f->tensors().size(), 2u);
  const StTensor* z = f->find("zeta");
  ASSERT_TRUE(z);
  EXPECT_EQ(z->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(z->dtype, StDType::F32);
  EXPECT_EQ(std::memcmp(z->data, a.data(), 24), 0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(z->data) % 4, 0u);
  EXPECT_EQ(f->find("alpha")->numel(), 2);
  EXPECT_EQ(f->find("missing"), nullptr);
  // The header is padded to 8 bytes and keys are sorted, so equal inputs give equal files.
  EXPECT_EQ(test::must(st_serialize(outs)).size() % 8, 0u);
}

TEST(SafeTensors, MalformedFilesAreErrorsNamingTheFileAndTensor) {
  struct Case {
    std::string bytes, expect;
  };
  std::vector<Case> cases{
      {"abc", "shorter than its 8-byte header length"},
      {with_header("{", 0), "header is not a JSON object"},
      {std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8) + "{}", "exceeds the file"},
      {with_header("[1,2]", 0), "header is not a JSON object"},
      {with_header(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 8),
       "tensor 'w': holds 4 bytes"},
      {with_header(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,80]}})", 8),
       "tensor 'w': data_offsets [0, 80] lie outside"},
      {with_header(R"({"w":{"dtype":"Q7","shape":[2],"data_offsets":[0,8]}})", 8),
       "unsupported dtype 'Q7'"},
      {with_header(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8),
       "not a non-negative integer"},
      {with_header(R"({"w":{"dtype":"F32","shape":[2]}})", 8), "missing 'data_offsets'"},
      {with_header(R"({"w":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,8]}})",
                   8),
       "too large"},
      {with_header(R"({"w":5})", 8), "entry is not an object"},
  };
  for (const auto& c : cases) {
    auto f = SafeTensors::parse(bytes_of(c.bytes), "x.safetensors");
    EXPECT_FALSE(f) << c.expect;
    const std::string err = test::text(f.diagnostics);
    EXPECT_EQ(err.rfind("x.safetensors: ", 0), 0u) << err;
    EXPECT_NE(err.find("error[safetensors.format]"), std::string::npos) << err;
    EXPECT_NE(err.find(c.expect), std::string::npos) << err;
    if (c.expect.find("tensor 'w'") != std::string::npos) {
      EXPECT_EQ(f.diagnostics[0].pointer.rfind("/w", 0), 0u) << err;  // the header's pointer
    }
  }
  auto missing = SafeTensors::open("/nonexistent/w.safetensors");
  EXPECT_FALSE(missing);
  EXPECT_NE(test::text(missing.diagnostics).find("/nonexistent/w.safetensors"), std::string::npos);
}

TEST(SafeTensors, MetadataIsSkipped) {
  auto s = with_header(
      R"({"__metadata__":{"format":"pt"},"w":{"dtype":"U8","shape":[3],"data_offsets":[0,3]}})", 3);
  auto f = test::must(SafeTensors::parse(bytes_of(s), "m"));
  EXPECT_EQ(f->tensors().size(), 1u);
}

}  // namespace
}  // namespace amk::vm
