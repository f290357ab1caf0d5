// Proves ir::bytes_word equal to copying the bytes into a zeroed word, for every length it takes,
// and ir::literal_word equal to it on the same bytes.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <string>

#include "ir/bytes.h"
#include "ir/rng.h"

namespace amk::ir {
namespace {

TEST(BytesWord, IsTheBytesCopiedIntoAZeroedWordAndTheLiteralsWord) {
  Rng rng = Rng::seeded(8, 0xb17e);
  for (int trial = 0; trial < 4000; ++trial) {
    std::array<unsigned char, 16> buf{};
    for (auto& b : buf) b = static_cast<unsigned char>(rng.below(256));
    const size_t at = rng.below(8);
    for (size_t n = 1; n <= 8; ++n) {
      uint64_t want = 0;
      std::memcpy(&want, buf.data() + at, n);  // little-endian, as every x86 and arm64 host
      ASSERT_EQ(bytes_word(buf.data() + at, n), want) << "n " << n << " trial " << trial;
      const std::string s(reinterpret_cast<const char*>(buf.data() + at), n);
      ASSERT_EQ(literal_word(s), want) << "n " << n << " trial " << trial;
    }
  }
}

}  // namespace
}  // namespace amk::ir
