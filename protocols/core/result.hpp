#pragma once
// Typed decode results. Wire data never throws or asserts: every decoder
// returns either a value or a DecodeError that says what was expected where.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace rdmaconf::protocols {

struct HeaderDef;

enum class Errc : std::uint8_t {
  truncated,      // fewer bytes than the header needs
  bad_length,     // a length field points outside the available bytes or below a minimum
  bad_value,      // a field holds a value the decoder cannot continue with
  unsupported,    // a legal value this decoder does not handle (e.g. an unknown link type)
};

std::string_view errc_name(Errc e);

struct DecodeError {
  Errc code = Errc::truncated;
  const HeaderDef* header = nullptr;  // which header was being decoded
  std::size_t offset = 0;             // byte offset (within the span given to decode) of the problem
  std::size_t needed = 0;             // bytes needed (truncated / bad_length)
  std::size_t available = 0;          // bytes available
  std::string_view what = {};         // static text: the field or the rule

  std::string message() const;
};

inline DecodeError truncated(const HeaderDef* h, std::size_t needed, std::size_t available,
                             std::size_t offset = 0, std::string_view what = {}) {
  return DecodeError{Errc::truncated, h, offset, needed, available, what};
}

template <class T>
class Result {
 public:
  Result(T v) : v_(std::move(v)) {}  // NOLINT: implicit by design
  Result(DecodeError e) : v_(std::move(e)) {}  // NOLINT
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const DecodeError& error() const { return std::get<1>(v_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }

 private:
  std::variant<T, DecodeError> v_;
};

}  // namespace rdmaconf::protocols
