#include "protocols/core/header.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace rdmaconf::protocols {

std::string_view errc_name(Errc e) {
  switch (e) {
    case Errc::truncated: return "truncated";
    case Errc::bad_length: return "bad length";
    case Errc::bad_value: return "bad value";
    case Errc::unsupported: return "unsupported";
  }
  return "?";
}

std::string DecodeError::message() const {
  std::string s = header ? fmt::format("{}: ", header->name) : std::string{};
  switch (code) {
    case Errc::truncated:
      s += fmt::format("truncated at offset {}: needed {} octets, {} available", offset, needed, available);
      break;
    case Errc::bad_length:
      s += fmt::format("bad length at offset {}: needs {} octets, {} available", offset, needed, available);
      break;
    default:
      s += fmt::format("{} at offset {}", errc_name(code), offset);
  }
  if (!what.empty()) s += fmt::format(" ({})", what);
  return s;
}

Bytes Header::field_bytes(std::size_t field) const {
  const FieldDef& f = def_->fields[field];
  return bytes().subspan(f.bit_offset / 8u, f.bit_width / 8u);
}

void Header::set_field_bytes(std::size_t field, Bytes v) {
  const FieldDef& f = def_->fields[field];
  auto dst = mutable_bytes().subspan(f.bit_offset / 8u, f.bit_width / 8u);
  std::fill(dst.begin(), dst.end(), std::byte{0});
  std::copy_n(v.begin(), std::min(v.size(), dst.size()), dst.begin());
}

std::uint64_t Header::nonzero_reserved() const {
  std::uint64_t mask = 0;
  for (std::size_t i = 0; i < def_->fields.size() && i < 64; ++i) {
    const FieldDef& f = def_->fields[i];
    if (!f.must_be_zero) continue;
    bool nonzero = false;
    if (f.is_wide()) {
      for (auto b : field_bytes(i)) nonzero |= b != std::byte{0};
    } else {
      nonzero = get(i) != 0;
    }
    if (nonzero) mask |= std::uint64_t{1} << i;
  }
  return mask;
}

void Header::encode(MutBytes out) const {
  std::memcpy(out.data(), raw_.data(), def_->size);
}

namespace {

std::string format_value(const Header& h, std::size_t i) {
  const FieldDef& f = h.def().fields[i];
  switch (f.display) {
    case Display::bytes: {
      std::string s;
      if (!f.is_wide() && f.bit_width % 8 != 0) return fmt::format("0x{:x}", h.get(i));
      for (auto b : h.field_bytes(i)) s += fmt::format("{:02x}", static_cast<unsigned>(b));
      return s;
    }
    case Display::ascii: {
      std::string s;
      for (auto b : h.field_bytes(i)) {
        const auto c = static_cast<unsigned char>(b);
        s += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '.';
      }
      return s;
    }
    case Display::ipv4: {
      const auto v = h.get(i);
      return fmt::format("{}.{}.{}.{}", (v >> 24) & 0xff, (v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff);
    }
    case Display::ipv6: {
      auto b = h.field_bytes(i);
      std::string s;
      for (std::size_t k = 0; k < b.size(); k += 2) {
        if (k) s += ':';
        s += fmt::format("{:x}", be16(b, k));
      }
      return s;
    }
    case Display::mac: {
      std::string s;
      const auto v = h.get(i);
      for (int k = 5; k >= 0; --k) s += fmt::format("{}{:02x}", k == 5 ? "" : ":", (v >> (8 * k)) & 0xff);
      return s;
    }
    case Display::flag: return h.get(i) ? "1" : "0";
    case Display::hex: return fmt::format("0x{:0{}x}", h.get(i), (f.bit_width + 3) / 4);
    case Display::dec: break;
  }
  return fmt::format("{}", h.get(i));
}

}  // namespace

std::string format_field(const Header& h, std::size_t i) {
  const FieldDef& f = h.def().fields[i];
  std::string s = fmt::format("{}: {}", f.name, format_value(h, i));
  if (!f.is_wide()) {
    if (auto n = value_name(f, h.get(i)); !n.empty()) s += fmt::format(" ({})", n);
  }
  return s;
}

std::string to_text(const Header& h) {
  std::string s = fmt::format("{}\n", h.def().name);
  for (std::size_t i = 0; i < h.def().fields.size(); ++i) s += "    " + format_field(h, i) + "\n";
  return s;
}

void to_json(nlohmann::json& j, const Header& h) {
  j = nlohmann::json::object();
  for (std::size_t i = 0; i < h.def().fields.size(); ++i) {
    const FieldDef& f = h.def().fields[i];
    if (json_as_text(f))
      j[std::string(f.abbrev)] = format_value(h, i);
    else
      j[std::string(f.abbrev)] = h.get(i);
  }
}

}  // namespace rdmaconf::protocols
