#pragma once
// The declarative header table. Each wire header is described once, as a
// constexpr array of FieldDef rows plus a HeaderDef. Encoder, decoder,
// pretty-printer, must-be-zero checks, JSON keys and the Wireshark field
// registration are all derived from these rows; nothing restates a layout.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace rdmaconf::protocols {

enum class Display : std::uint8_t {
  dec,    // unsigned decimal
  hex,    // hexadecimal
  flag,   // single bit shown as set / not set
  bytes,  // opaque octets (any width, byte aligned when wider than 64 bits)
  ascii,  // printable text (byte aligned)
  ipv4,   // dotted quad
  ipv6,   // RFC 5952 text
  mac,    // colon-separated octets
};

struct ValueName {
  std::uint64_t value;
  std::string_view name;
};

struct FieldDef {
  std::string_view abbrev;  // filter-style key, unique within the header: "ddp.qn"
  std::string_view name;    // human name: "Queue Number"
  std::uint16_t bit_offset; // from the first bit of the header, MSB first
  std::uint16_t bit_width;
  Display display = Display::dec;
  std::span<const ValueName> values = {};
  bool must_be_zero = false;
  std::string_view ref = {};  // specification reference: "RFC 5041 §4.3"

  constexpr bool is_wide() const { return bit_width > 64; }
};

struct HeaderDef {
  std::string_view abbrev;  // protocol key: "ddp.untagged"
  std::string_view name;    // "DDP untagged header"
  std::string_view ref;     // "RFC 5041 §4.3"
  std::uint16_t size;       // bytes in the fixed part the table describes
  std::span<const FieldDef> fields;
};

// Name of a value from a field's value table, or empty.
constexpr std::string_view value_name(const FieldDef& f, std::uint64_t v) {
  for (const auto& vn : f.values)
    if (vn.value == v) return vn.name;
  return {};
}

// Index of a field by its abbreviation, or -1; used by tests and the plugin.
constexpr int field_index(const HeaderDef& h, std::string_view abbrev) {
  for (std::size_t i = 0; i < h.fields.size(); ++i)
    if (h.fields[i].abbrev == abbrev) return static_cast<int>(i);
  return -1;
}

// Compile-time check that a table is consistent: fields in order, no
// overlap, all bits of the header described, wide fields byte aligned.
constexpr bool table_is_sound(const HeaderDef& h) {
  std::uint32_t next = 0;
  for (const auto& f : h.fields) {
    if (f.bit_width == 0 || f.bit_offset != next) return false;
    if (f.is_wide() && (f.bit_offset % 8 != 0 || f.bit_width % 8 != 0)) return false;
    if ((f.display == Display::ascii || f.display == Display::bytes) && f.bit_width % 8 != 0) return false;
    next = f.bit_offset + f.bit_width;
  }
  return next == h.size * 8u;
}

}  // namespace rdmaconf::protocols
