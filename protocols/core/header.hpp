#pragma once
#include <initializer_list>
#include <utility>
// A decoded (or to-be-encoded) fixed header: the table that describes it and
// a copy of its octets. Field access goes through the table, so decode,
// encode and printing cannot disagree about a layout.
#include <array>
#include <cstdint>
#include <cstring>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "protocols/core/bits.hpp"
#include "protocols/core/field.hpp"
#include "protocols/core/result.hpp"

namespace rdmaconf::protocols {

class Header {
 public:
  static constexpr std::size_t kMaxSize = 64;

  Header() = default;
  explicit Header(const HeaderDef& def) : def_(&def) {}

  // Copies def.size octets from the front of `in`; the only failure is
  // truncation. (Inline: every frame's link, network and transport headers
  // and every FPDU's come through here.)
  static Result<Header> decode(const HeaderDef& def, Bytes in) {
    if (in.size() < def.size) [[unlikely]] return truncated(&def, def.size, in.size());
    Header h;
    h.assign(def, in);
    return h;
  }
  // decode() in place, into a header made by Header(): `in` holds at least
  // def.size octets (the caller checked).
  void assign(const HeaderDef& def, Bytes in) {
    def_ = &def;
    std::memcpy(raw_.data(), in.data(), def.size);
  }

  const HeaderDef& def() const { return *def_; }
  std::size_t size() const { return def_->size; }
  Bytes bytes() const { return {raw_.data(), def_->size}; }
  MutBytes mutable_bytes() { return {raw_.data(), def_->size}; }

  [[gnu::always_inline]] std::uint64_t get(std::size_t field) const {
    const FieldDef& f = def_->fields[field];
    // Read through the whole 64-octet store, not just def().size octets, so
    // that a field near a short header's end still takes read_bits' one-window
    // path (the octets past the header are masked off).
    return f.is_wide() ? 0 : read_bits(Bytes{raw_.data(), kMaxSize}, f.bit_offset, f.bit_width);
  }
  // (Inline, like get(): a sender builds every DDP header through here.)
  [[gnu::always_inline]] void set(std::size_t field, std::uint64_t v) {
    const FieldDef& f = def_->fields[field];
    if (f.is_wide()) return;
    // As in get(): the whole store, so that short headers take the one-window path.
    write_bits(MutBytes{raw_.data(), kMaxSize}, f.bit_offset, f.bit_width, v);
  }
  // A header of `def` with the given fields set and every other field zero.
  static Header with(const HeaderDef& def, std::initializer_list<std::pair<std::size_t, std::uint64_t>> fields) {
    Header h(def);
    for (auto [f, v] : fields) h.set(f, v);
    return h;
  }
  // For byte-aligned fields of any width (addresses, keys).
  Bytes field_bytes(std::size_t field) const;
  void set_field_bytes(std::size_t field, Bytes v);

  // Bit i set when field i is must-be-zero and is not zero.
  std::uint64_t nonzero_reserved() const;

  // Writes the octets; `out` must have size() octets.
  void encode(MutBytes out) const;

 private:
  const HeaderDef* def_ = nullptr;
  std::array<std::byte, kMaxSize> raw_{};
};

// "Queue Number: 1 (Read Request)"
std::string format_field(const Header& h, std::size_t field);
// One line per field, indented, for --verbose and for test diagnostics.
std::string to_text(const Header& h);
// Whether to_json gives a field as text (addresses, wide fields, ASCII)
// rather than as a number.
constexpr bool json_as_text(const FieldDef& f) {
  return f.is_wide() || f.display == Display::ascii || f.display == Display::ipv6 || f.display == Display::mac ||
         f.display == Display::ipv4;
}
// {"ddp.qn": 1, ...}: keys are the table abbreviations.
void to_json(nlohmann::json& j, const Header& h);

}  // namespace rdmaconf::protocols
