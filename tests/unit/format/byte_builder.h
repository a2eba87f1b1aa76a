// ByteBuilder: assembles little-endian GGUF bytes field by field, so tests can craft files the writer would never
// produce (version 2, bad counts, misaligned offsets, byte-swapped versions).
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace pagoda::format::testing {

class ByteBuilder {
 public:
  ByteBuilder& u8(uint8_t v) { return pod(v); }
  ByteBuilder& u32(uint32_t v) { return pod(v); }
  ByteBuilder& i32(int32_t v) { return pod(v); }
  ByteBuilder& u64(uint64_t v) { return pod(v); }
  ByteBuilder& f32(float v) { return pod(v); }
  ByteBuilder& raw(std::string_view s) {
    bytes_.insert(bytes_.end(), s.begin(), s.end());
    return *this;
  }
  ByteBuilder& str(std::string_view s) {  // gguf_string: u64 length + bytes
    u64(s.size());
    return raw(s);
  }
  ByteBuilder& zeros(size_t n) {
    bytes_.resize(bytes_.size() + n, 0);
    return *this;
  }
  ByteBuilder& pad_to(size_t alignment) {
    bytes_.resize((bytes_.size() + alignment - 1) / alignment * alignment, 0);
    return *this;
  }
  // Header: magic, version, tensor count, metadata count.
  ByteBuilder& header(uint32_t version, uint64_t num_tensors, uint64_t num_metadata) {
    return raw("GGUF").u32(version).u64(num_tensors).u64(num_metadata);
  }

  size_t size() const { return bytes_.size(); }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  template <class T>
  ByteBuilder& pod(T v) {
    const size_t at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    std::memcpy(bytes_.data() + at, &v, sizeof(T));
    return *this;
  }
  std::vector<uint8_t> bytes_;
};

}  // namespace pagoda::format::testing
