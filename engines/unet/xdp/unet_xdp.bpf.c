// SPDX-License-Identifier: GPL-2.0
// The U-Net tag demultiplexer of the AF_XDP path (docs/unet.md): an XDP
// program on the interface that hands each U-Net frame (EtherType 0x88B5,
// rdmaconf U-Net v1) to the AF_XDP socket of the process that owns its
// destination tag, and leaves every other frame (ARP, IP, ...) to the
// kernel untouched. The process's control path fills the maps:
//   unet_tags      destination tag -> slot in unet_xsks (an endpoint that exists)
//   unet_channels  (destination tag, source MAC, source tag) -> 1 (an open channel)
//   unet_config    [0]: bit 0 set = check channels
// and reads unet_stats. A frame for an unknown tag, from a peer without a
// channel, or with a header that is not version 1 is dropped and counted.
// Built by CMake with clang -target bpf; the object is embedded in the
// program that loads it.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define UNET_ETHERTYPE 0x88B5

enum unet_stat {
  UNET_STAT_PASSED = 0,      // not U-Net: to the kernel's stack
  UNET_STAT_REDIRECTED = 1,  // to an AF_XDP socket
  UNET_STAT_MALFORMED = 2,   // shorter than the headers, or not version 1
  UNET_STAT_UNKNOWN_TAG = 3, // no endpoint has the destination tag
  UNET_STAT_NO_CHANNEL = 4,  // the endpoint has no channel to the sender
  UNET_STAT_NO_SOCKET = 5,   // the tag's slot holds no socket
  UNET_STAT_COUNT = 8,
};

struct unet_channel_key {
  __u16 dst_tag;  // host order
  __u16 src_tag;  // host order
  __u8 src_mac[6];
  __u8 pad[2];
};

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __type(key, __u16);
  __type(value, __u32);
} unet_tags SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 16384);
  __type(key, struct unet_channel_key);
  __type(value, __u8);
} unet_channels SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_XSKMAP);
  __uint(max_entries, 64);
  __type(key, __u32);
  __type(value, __u32);
} unet_xsks SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, UNET_STAT_COUNT);
  __type(key, __u32);
  __type(value, __u64);
} unet_stats SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u32);
} unet_config SEC(".maps");

static __always_inline int count(__u32 stat, int action) {
  __u64 *n = bpf_map_lookup_elem(&unet_stats, &stat);
  if (n) *n += 1;
  return action;
}

SEC("xdp")
int unet_demux(struct xdp_md *ctx) {
  const __u8 *data = (const __u8 *)(long)ctx->data;
  const __u8 *end = (const __u8 *)(long)ctx->data_end;
  const struct ethhdr *eth = (const struct ethhdr *)data;
  if ((const __u8 *)(eth + 1) > end || eth->h_proto != bpf_htons(UNET_ETHERTYPE)) return count(UNET_STAT_PASSED, XDP_PASS);
  // The U-Net header's fields at the offsets protocols/unet/headers.hpp
  // defines (a BPF program cannot include that C++ table); engine.unet
  // runs this program on frames the table built, which holds them equal.
  const __u8 *h = (const __u8 *)(eth + 1);
  if (h + 8 > end || (h[0] >> 4) != 1) return count(UNET_STAT_MALFORMED, XDP_DROP);
  const __u16 dst = (__u16)((h[2] << 8) | h[3]);
  const __u16 src = (__u16)((h[4] << 8) | h[5]);
  const __u32 *slot = bpf_map_lookup_elem(&unet_tags, &dst);
  if (!slot) return count(UNET_STAT_UNKNOWN_TAG, XDP_DROP);
  const __u32 zero = 0;
  const __u32 *cfg = bpf_map_lookup_elem(&unet_config, &zero);
  if (cfg && (*cfg & 1u)) {
    struct unet_channel_key k = {.dst_tag = dst, .src_tag = src};
    __builtin_memcpy(k.src_mac, eth->h_source, 6);
    if (!bpf_map_lookup_elem(&unet_channels, &k)) return count(UNET_STAT_NO_CHANNEL, XDP_DROP);
  }
  const int action = (int)bpf_redirect_map(&unet_xsks, *slot, XDP_DROP);
  return count(action == XDP_REDIRECT ? UNET_STAT_REDIRECTED : UNET_STAT_NO_SOCKET, action);
}

char LICENSE[] SEC("license") = "GPL";
