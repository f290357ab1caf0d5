#include "vm/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "instructions/dtype.h"
#include "ir/fileio.h"
#include "ir/pyjson.h"

namespace amk::vm {
namespace {

struct DtInfo {
  StDType d;
  std::string_view name;
  int size;
};
constexpr std::array<DtInfo, 12> kDt{{{StDType::F64, "F64", 8},
                                      {StDType::F32, "F32", 4},
                                      {StDType::F16, "F16", 2},
                                      {StDType::BF16, "BF16", 2},
                                      {StDType::F8_E4M3, "F8_E4M3", 1},
                                      {StDType::F8_E5M2, "F8_E5M2", 1},
                                      {StDType::I64, "I64", 8},
                                      {StDType::I32, "I32", 4},
                                      {StDType::I16, "I16", 2},
                                      {StDType::I8, "I8", 1},
                                      {StDType::U8, "U8", 1},
                                      {StDType::BOOL, "BOOL", 1}}};

constexpr uint64_t kMaxHeader = uint64_t{100} << 20;

}  // namespace

std::string_view st_name(StDType d) {
  return kDt[static_cast<size_t>(d)].name;
}
int st_size(StDType d) {
  return kDt[static_cast<size_t>(d)].size;
}

StDType st_of(ir::DType d) {
  switch (d) {
    case ir::DType::F32:
      return StDType::F32;
    case ir::DType::F16:
      return StDType::F16;
    case ir::DType::BF16:
      return StDType::BF16;
    case ir::DType::F8E4M3:
      return StDType::F8_E4M3;
    case ir::DType::F8E5M2:
      return StDType::F8_E5M2;
    case ir::DType::I32:
      return StDType::I32;
    case ir::DType::I8:
      return StDType::I8;
    case ir::DType::I4:
      return StDType::U8;
    case ir::DType::U8:
      return StDType::U8;
    case ir::DType::BOOL:
      return StDType::BOOL;
  }
  return StDType::U8;
}

std::optional<ir::DType> ir_of(StDType d) {
  switch (d) {
    case StDType::F32:
      return ir::DType::F32;
    case StDType::F16:
      return ir::DType::F16;
    case StDType::BF16:
      return ir::DType::BF16;
    case StDType::F8_E4M3:
      return ir::DType::F8E4M3;
    case StDType::F8_E5M2:
      return ir::DType::F8E5M2;
    case StDType::I32:
      return ir::DType::I32;
    case StDType::I8:
      return ir::DType::I8;
    case StDType::U8:
      return ir::DType::U8;
    case StDType::BOOL:
      return ir::DType::BOOL;
    default:
      return std::nullopt;
  }
}

int64_t StTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

ir::Result<std::unique_ptr<SafeTensors>> SafeTensors::open(const std::string& path) {
  auto fail = [&](std::string msg) {
    ir::Diagnostic d = ir::error("io.read", std::move(msg));
    d.file = path;
    return ir::Result<std::unique_ptr<SafeTensors>>(std::move(d));
  };
  // The one input rule (ir::open_input): a regular file is mapped, not read, so the ceiling on
  // what is read into memory does not bound it; standard input is read, under the ceiling.
  ir::Result<std::pair<int, int64_t>> in = ir::open_input(path);
  if (!in) return std::move(in.diagnostics);
  const int fd = in->first;
  if (in->second < 0) {
    ::close(fd);
    ir::Result<std::string> text = ir::read_file(path);
    if (!text) return std::move(text.diagnostics);
    auto owned = std::make_unique<std::string>(std::move(*text));
    auto f = parse({reinterpret_cast<const uint8_t*>(owned->data()), owned->size()}, path);
    if (f) (*f)->owned_ = std::move(owned);
    return f;
  }
  const auto len = static_cast<size_t>(in->second);
  void* map = nullptr;
  if (len > 0) {
    map = ::mmap(nullptr, len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      const int e = errno;
      ::close(fd);
      return fail(fmt::format("cannot map '{}': {}", path, std::strerror(e)));
    }
  }
  ::close(fd);
  auto f = parse({static_cast<const uint8_t*>(map), len}, path);
  if (!f) {
    if (map) ::munmap(map, len);
    return f;
  }
  (*f)->map_ = map;
  (*f)->map_len_ = len;
  return f;
}

ir::Result<std::unique_ptr<SafeTensors>> SafeTensors::parse(std::span<const uint8_t> bytes,
                                                            const std::string& path) {
  auto fail = [&](std::string msg, std::string pointer = {}) {
    ir::Diagnostic d = ir::error("safetensors.format", std::move(msg), std::move(pointer));
    d.file = path;
    return ir::Result<std::unique_ptr<SafeTensors>>(std::move(d));
  };
  if (bytes.size() < 8)
    return fail("not a safetensors file (shorter than its 8-byte header length)");
  uint64_t hlen = 0;
  for (int k = 7; k >= 0; --k) hlen = hlen << 8 | bytes[static_cast<size_t>(k)];
  if (hlen > kMaxHeader || hlen > bytes.size() - 8)
    return fail(fmt::format("header length {} exceeds the file ({} bytes)", hlen, bytes.size()));
  auto text = std::string_view(reinterpret_cast<const char*>(bytes.data() + 8), hlen);
  nlohmann::json h = nlohmann::json::parse(text, nullptr, false);
  if (h.is_discarded() || !h.is_object()) return fail("header is not a JSON object");
  const uint8_t* data = bytes.data() + 8 + hlen;
  const size_t data_len = bytes.size() - 8 - hlen;
  std::unique_ptr<SafeTensors> f(new SafeTensors);
  f->path_ = path;
  for (const auto& item : h.items()) {  // not a structured binding: lambdas below name the key
    const std::string& key = item.key();
    const nlohmann::json& v = item.value();
    if (key == "__metadata__") continue;
    const std::string at = "/" + ir::pointer_token(key);
    auto bad = [&](std::string_view what, std::string_view field = {}) {
      return fail(fmt::format("tensor '{}': {}", key, what),
                  field.empty() ? at : fmt::format("{}/{}", at, field));
    };
    if (!v.is_object()) return bad("entry is not an object");
    auto dt = v.find("dtype");
    auto sh = v.find("shape");
    auto off = v.find("data_offsets");
    if (dt == v.end() || !dt->is_string()) return bad("missing string 'dtype'", "dtype");
    if (sh == v.end() || !sh->is_array()) return bad("missing list 'shape'", "shape");
    if (off == v.end() || !off->is_array() || off->size() != 2)
      return bad("missing 'data_offsets' [begin, end]", "data_offsets");
    StTensor t;
    t.name = key;
    const auto& dname = dt->get_ref<const std::string&>();
    auto it =
        std::find_if(kDt.begin(), kDt.end(), [&](const DtInfo& i) { return i.name == dname; });
    if (it == kDt.end()) return bad(fmt::format("unsupported dtype '{}'", dname), "dtype");
    t.dtype = it->d;
    uint64_t numel = 1;
    bool zero = false;
    for (const auto& d : *sh) {
      if (!d.is_number_unsigned())
        return bad("shape holds a value that is not a non-negative integer", "shape");
      const auto dim = d.get<uint64_t>();
      if (dim > (uint64_t{1} << 62)) return bad("shape is too large", "shape");
      t.shape.push_back(static_cast<int64_t>(dim));
      zero |= dim == 0;
      if (!zero && numel > (uint64_t{1} << 62) / dim) return bad("shape is too large", "shape");
      numel = zero ? 0 : numel * dim;
    }
    if (!(*off)[0].is_number_unsigned() || !(*off)[1].is_number_unsigned())
      return bad("data_offsets are not non-negative integers", "data_offsets");
    const auto b = (*off)[0].get<uint64_t>(), e = (*off)[1].get<uint64_t>();
    if (b > e || e > data_len)
      return bad(
          fmt::format("data_offsets [{}, {}] lie outside the data ({} bytes)", b, e, data_len),
          "data_offsets");
    if (numel * static_cast<unsigned>(it->size) != e - b)
      return bad(fmt::format("holds {} bytes but its shape and dtype need {}", e - b,
                             numel * static_cast<unsigned>(it->size)),
                 "data_offsets");
    t.data = data + b;
    t.nbytes = e - b;
    f->tensors_.push_back(std::move(t));
  }
  std::sort(f->tensors_.begin(), f->tensors_.end(),
            [](const StTensor& a, const StTensor& b) { return a.data < b.data; });
  return f;
}

SafeTensors::~SafeTensors() {
  if (map_) ::munmap(map_, map_len_);
}

const StTensor* SafeTensors::find(std::string_view name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

void st_convert(const StTensor& src, void* dst, ir::DType dt, int64_t numel) {
  if (st_of(dt) == src.dtype && dt != ir::DType::BOOL) {
    std::memcpy(dst, src.data, src.nbytes);
    return;
  }
  const bool int_dst =
      dt == ir::DType::I32 || dt == ir::DType::I8 || dt == ir::DType::U8 || dt == ir::DType::BOOL;
  for (int64_t i = 0; i < numel; ++i) {
    const uint8_t* e = src.data + i * st_size(src.dtype);
    double v = 0;
    int64_t iv = 0;
    bool is_int = true;
    switch (src.dtype) {
      case StDType::F64: {
        double d;
        std::memcpy(&d, e, 8);
        v = d;
        is_int = false;
        break;
      }
      case StDType::F32: {
        float f;
        std::memcpy(&f, e, 4);
        v = f;
        is_int = false;
        break;
      }
      case StDType::F16: {
        uint16_t h;
        std::memcpy(&h, e, 2);
        v = inst::f16_to_f32(h);
        is_int = false;
        break;
      }
      case StDType::BF16: {
        uint16_t h;
        std::memcpy(&h, e, 2);
        v = inst::bf16_to_f32(h);
        is_int = false;
        break;
      }
      case StDType::F8_E4M3:
        v = inst::f8e4m3_to_f32(*e);
        is_int = false;
        break;
      case StDType::F8_E5M2:
        v = inst::f8e5m2_to_f32(*e);
        is_int = false;
        break;
      case StDType::I64:
        std::memcpy(&iv, e, 8);
        break;
      case StDType::I32: {
        int32_t x;
        std::memcpy(&x, e, 4);
        iv = x;
        break;
      }
      case StDType::I16: {
        int16_t x;
        std::memcpy(&x, e, 2);
        iv = x;
        break;
      }
      case StDType::I8:
        iv = static_cast<int8_t>(*e);
        break;
      case StDType::U8:
        iv = *e;
        break;
      case StDType::BOOL:
        iv = *e != 0;
        break;
    }
    if (is_int && int_dst) {
      auto clamp = [&](int64_t lo, int64_t hi) { return std::clamp(iv, lo, hi); };
      switch (dt) {
        case ir::DType::I32: {
          auto x = static_cast<int32_t>(clamp(INT32_MIN, INT32_MAX));
          std::memcpy(static_cast<uint8_t*>(dst) + 4 * i, &x, 4);
          break;
        }
        case ir::DType::I8:
          static_cast<int8_t*>(dst)[i] = static_cast<int8_t>(clamp(-128, 127));
          break;
        case ir::DType::U8:
          static_cast<uint8_t*>(dst)[i] = static_cast<uint8_t>(clamp(0, 255));
          break;
        default:
          static_cast<uint8_t*>(dst)[i] = iv != 0;
          break;
      }
    } else {
      inst::store(dst, dt, i, static_cast<float>(is_int ? static_cast<double>(iv) : v));
    }
  }
}

ir::Status st_name_ok(std::string_view name) {
  if (ir::is_utf8(name)) return {};
  return ir::error("safetensors.name",
                   fmt::format("tensor name {} is not UTF-8 (a lone surrogate, as JSON's \\udc00 "
                               "reads): a safetensors header is UTF-8 JSON",
                               ir::py_repr_str(name)));
}

ir::Result<std::string> st_serialize(std::span<const StOut> tensors) {
  std::vector<const StOut*> order;
  for (const auto& t : tensors) {
    if (ir::Status st = st_name_ok(t.name); !st) return std::move(st.diagnostics);
    order.push_back(&t);
  }
  std::sort(order.begin(), order.end(),
            [](const StOut* a, const StOut* b) { return a->name < b->name; });
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  size_t off = 0;
  for (const StOut* t : order) {
    h[t->name] = {{"dtype", st_name(t->dtype)},
                  {"shape", t->shape},
                  {"data_offsets", {off, off + t->bytes.size()}}};
    off += t->bytes.size();
  }
  std::string head = h.dump();
  head.append((8 - head.size() % 8) % 8, ' ');
  std::string out;
  out.reserve(8 + head.size() + off);
  uint64_t n = head.size();
  for (int k = 0; k < 8; ++k) out.push_back(static_cast<char>(n >> (8 * k) & 0xFF));
  out += head;
  for (const StOut* t : order)
    out.append(reinterpret_cast<const char*>(t->bytes.data()), t->bytes.size());
  return out;
}

ir::Status st_write(const std::string& path, std::span<const StOut> tensors) {
  ir::Result<std::string> image = st_serialize(tensors);
  if (!image) return std::move(image.diagnostics);
  return ir::write_file_atomic(path, *image);
}

}  // namespace amk::vm
