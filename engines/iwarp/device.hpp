#pragma once
// The device of the verbs-style API: what this engine supports, queried like
// a verbs device's attributes, and the factory for protection domains,
// completion queues and queue pairs. create_qp() refuses a configuration the
// wire cannot carry (with a message) instead of failing later on the wire.
//
//   Device dev;
//   auto pd = dev.alloc_pd();
//   auto cq = dev.create_cq();
//   std::string why;
//   auto qp = dev.create_qp(*pd, *cq, *cq, cfg, why);   // nullptr: why says what is wrong
#include <memory>
#include <string>

#include "engines/iwarp/qp.hpp"

namespace rdmaconf::engine::iwarp {

struct DeviceAttributes {
  std::string name = "rdmaconf_iwarp0";
  std::uint8_t min_mpa_revision = 1, max_mpa_revision = 2;
  std::uint16_t max_ird = 0x3fff, max_ord = 0x3fff;  // the 14-bit IRD/ORD fields of RFC 6581
  std::size_t max_private_data = 512;                 // RFC 5044 §7.1.1 (the IRD/ORD word counts in it)
  std::size_t min_mulpdu = 64, max_mulpdu = 65535 - 24;  // 16-bit ULPDU length, room for headers
  bool markers = true, crc = true, atomics = true, immediate = true;
  bool rtr_send = true, rtr_write = true, rtr_read = true;
};

class Device {
 public:
  Device() = default;
  explicit Device(DeviceAttributes a) : attr_(std::move(a)) {}
  const DeviceAttributes& query() const { return attr_; }

  std::unique_ptr<ProtectionDomain> alloc_pd() const { return std::make_unique<ProtectionDomain>(); }
  std::unique_ptr<CompletionQueue> create_cq() const { return std::make_unique<CompletionQueue>(); }
  // Empty string when cfg fits the device; otherwise what does not.
  std::string validate(const QpConfig& cfg) const;
  std::unique_ptr<QueuePair> create_qp(ProtectionDomain& pd, CompletionQueue& send_cq, CompletionQueue& recv_cq,
                                       QpConfig cfg, std::string& why) const;

 private:
  DeviceAttributes attr_;
};

}  // namespace rdmaconf::engine::iwarp
