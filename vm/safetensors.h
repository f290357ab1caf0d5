// Safetensors files: memory-mapped reading (tensors are views, never copies) and atomic writing.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/result.h"
#include "ir/types.h"

namespace amk::vm {

/// Element types of the safetensors format that amk reads and writes.
enum class StDType : uint8_t { F64, F32, F16, BF16, F8_E4M3, F8_E5M2, I64, I32, I16, I8, U8, BOOL };

/// The format's name of a dtype ("F32", "F8_E4M3", ...).
std::string_view st_name(StDType d);
/// Bytes per element.
int st_size(StDType d);
/// The safetensors dtype that stores an IR dtype (I4 is stored as packed U8 bytes).
StDType st_of(ir::DType d);
/// The IR dtype of a safetensors dtype, or nullopt for those no buffer uses (F64, I64, I16).
std::optional<ir::DType> ir_of(StDType d);

/// One tensor of a file: a view into the mapping.
struct StTensor {
  std::string name;
  StDType dtype = StDType::F32;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;
  size_t nbytes = 0;
  /// Product of the dims.
  int64_t numel() const;
};

/// A read-only, memory-mapped safetensors file.
class SafeTensors {
 public:
  /// Maps and parses `path` ("-", a pipe or a device: read into memory); diagnostics name the file,
  /// the reason and the header's pointer.
  static ir::Result<std::unique_ptr<SafeTensors>> open(const std::string& path);
  /// Parses a file image already in memory (the bytes must outlive the object).
  static ir::Result<std::unique_ptr<SafeTensors>> parse(std::span<const uint8_t> bytes,
                                                        const std::string& path);
  ~SafeTensors();
  SafeTensors(const SafeTensors&) = delete;
  SafeTensors& operator=(const SafeTensors&) = delete;
  /// The tensor of a key, or nullptr.
  const StTensor* find(std::string_view name) const;
  /// Every tensor, in file order of their data.
  std::span<const StTensor> tensors() const { return tensors_; }
  /// The file path.
  const std::string& path() const { return path_; }

 private:
  SafeTensors() = default;
  std::string path_;
  void* map_ = nullptr;
  size_t map_len_ = 0;
  std::unique_ptr<std::string> owned_;  // the bytes of what cannot be mapped (stdin, a pipe)
  std::vector<StTensor> tensors_;
};

/// Copies a file tensor into `numel` elements of `dt` at `dst`: a plain copy when the dtypes
/// match, else floats round to nearest even and integers saturate (NaN -> 0).
void st_convert(const StTensor& src, void* dst, ir::DType dt, int64_t numel);

/// A tensor to write: name, dtype, shape and its bytes.
struct StOut {
  std::string name;
  StDType dtype = StDType::F32;
  std::vector<int64_t> shape;
  std::span<const uint8_t> bytes;
};

/// Whether a safetensors header can hold a tensor name: one that is not UTF-8 (a lone surrogate
/// read from a program) is a `safetensors.name` error, for the header is UTF-8 JSON.
ir::Status st_name_ok(std::string_view name);
/// Serialises tensors (keys sorted, header padded to 8 bytes) into one file image; a name that
/// fails st_name_ok is its error.
ir::Result<std::string> st_serialize(std::span<const StOut> tensors);
/// Writes a safetensors file atomically.
ir::Status st_write(const std::string& path, std::span<const StOut> tensors);

}  // namespace amk::vm
