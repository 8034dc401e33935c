/*
 * The Fast UDP NIC model: a plug-in for rdmaconf's shim ABI
 * (rdmaconf/fastudp_shim.h), built against that header alone.
 *
 * On receive it checks the UDP checksum (IPv4 and IPv6), matches the
 * datagram by destination port (and address) against the receives the
 * driver posted, oldest first, and splinters it: the payload goes straight
 * into the user buffer, the frame's headers into the kernel ring. Anything
 * it cannot or may not handle in the fast path (no matching receive, not
 * UDP, IP fragments, IPv6 extension headers) goes whole to the kernel ring.
 * On transmit it fills in the UDP checksum when asked.
 *
 * Built once per fault (FUDP_FAULT_*) as a negative plug-in: each breaks
 * exactly one rule of the contract.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaconf/fastudp_shim.h"

/* NIC cycles charged per frame and per 64 octets moved (the model's cost). */
#define CYCLES_PER_FRAME 40u
#define CYCLES_PER_LINE 4u
#ifdef FUDP_FAULT_HOLD_256
#define MAX_POSTED 256u /* Fault: holds fewer posted receives than FUDP_MIN_POSTED. */
#else
#define MAX_POSTED 4096u
#endif
/* Counting; the stale-counters fault counts only the two counters the
 * oldest cases looked at (checksum errors, ring full). */
#ifdef FUDP_FAULT_STALE_COUNTERS
#define COUNT(n, stat) ((stat) == FUDP_STAT_RX_CSUM_BAD || (stat) == FUDP_STAT_RX_RING_FULL ? (void)++(n)->stats[stat] : (void)0)
#else
#define COUNT(n, stat) ((void)++(n)->stats[stat])
#endif
#define MAX_FRAME 65600u

struct posted {
  uint64_t buffer, cookie;
  uint32_t length;
  uint16_t port;
  uint8_t family;
  uint8_t addr[16];
};

struct nic {
  const struct fudp_host *h;
  int enabled;
  uint64_t ring_base, ring_slots, slot_size, prod_addr, prod, cons;
  struct posted *rx; /* FIFO, oldest first: rx[rx_head .. rx_head + rx_count) */
  size_t rx_head, rx_count;
  uint64_t stats[FUDP_STAT_COUNT];
  uint32_t coalesce_entries, coalesce_cycles;
  uint32_t unsignalled;
  int flush_pending;
  uint8_t frame[MAX_FRAME];
};

static uint16_t rd16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }
static void wr16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)(v >> 8);
  p[1] = (uint8_t)v;
}
static uint64_t le64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
static uint32_t le32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static void put_le32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = (uint8_t)(v >> (8 * i));
}
static void put_le64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = (uint8_t)(v >> (8 * i));
}

static void logf_(struct nic *n, const char *fmt, unsigned long long a) {
  char line[160];
  snprintf(line, sizeof line, fmt, a);
  if (n->h->log) n->h->log(n->h->host, line);
}

/* Ones'-complement sum of 16-bit words (RFC 1071), odd length padded with
 * zero. The bulk is summed as native 32-bit words into 64 bits and folded:
 * the sum does not depend on byte order (RFC 1071 section 2), so a
 * little-endian result only needs its two octets swapped. */
static uint32_t sum16(uint32_t s, const uint8_t *p, size_t len) {
  uint64_t acc = 0;
  for (; len >= 4; p += 4, len -= 4) {
    uint32_t w;
    memcpy(&w, p, 4);
    acc += w;
  }
  while (acc >> 16) acc = (acc & 0xffff) + (acc >> 16);
  const uint16_t one = 1;
  uint8_t little;
  memcpy(&little, &one, 1);
  s += little ? (uint32_t)(((acc & 0xff) << 8) | (acc >> 8)) : (uint32_t)acc;
  while (len > 1) {
    s += rd16(p);
    p += 2;
    len -= 2;
  }
  if (len) s += (uint32_t)p[0] << 8;
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  return s;
}

/* The UDP checksum over the pseudo-header (RFC 768; RFC 8200 §8.1) and the
 * datagram, as sent: the folded sum, complemented. `l3` is the IP header,
 * `udp` the datagram of `udp_len` octets with its checksum field as is. */
static uint16_t udp_sum(int v6, const uint8_t *l3, const uint8_t *udp, uint32_t udp_len) {
  uint32_t s = 0;
  uint8_t tail[8];
  if (v6) {
    s = sum16(s, l3 + 8, 32);
    put_le32(tail, 0);
    tail[0] = (uint8_t)(udp_len >> 24);
    tail[1] = (uint8_t)(udp_len >> 16);
    tail[2] = (uint8_t)(udp_len >> 8);
    tail[3] = (uint8_t)udp_len;
    tail[4] = tail[5] = tail[6] = 0;
    tail[7] = 17;
    s = sum16(s, tail, 8);
  } else {
    s = sum16(s, l3 + 12, 8);
    tail[0] = 0;
    tail[1] = 17;
    tail[2] = (uint8_t)(udp_len >> 8);
    tail[3] = (uint8_t)udp_len;
    s = sum16(s, tail, 4);
  }
  s = sum16(s, udp, udp_len);
  return (uint16_t)~s;
}

/* What the parser found in a frame. */
struct parsed {
  int udp;           /* an unfragmented UDP datagram the fast path may take */
  int v6;
  size_t l3, l4;     /* offsets of the IP and UDP headers */
  uint32_t udp_len;  /* from the UDP header */
  uint32_t ip_payload;
  const uint8_t *dst; /* destination address */
};

static void parse(const uint8_t *f, size_t len, struct parsed *p) {
  memset(p, 0, sizeof *p);
  if (len < 14) return;
  size_t off = 12;
  uint16_t type = rd16(f + off);
  off += 2;
  if (type == 0x8100 && len >= off + 4) {
    type = rd16(f + off + 2);
    off += 4;
  }
  p->l3 = off;
  if (type == 0x0800) {
    if (len < off + 20 || (f[off] >> 4) != 4) return;
    size_t ihl = (size_t)(f[off] & 0xf) * 4;
    uint32_t total = rd16(f + off + 2);
    if (ihl < 20 || total < ihl || len < off + total) return;
    if (sum16(0, f + off, ihl) != 0xffff) return; /* a bad header checksum: the kernel's stack decides */
    if (f[off + 9] != 17) return;
    if ((rd16(f + off + 6) & 0x3fff) != 0) return; /* MF or an offset: a fragment */
    p->l4 = off + ihl;
    p->ip_payload = total - (uint32_t)ihl;
    p->dst = f + off + 16;
  } else if (type == 0x86dd) {
    if (len < off + 40 || (f[off] >> 4) != 6) return;
    if (f[off + 6] != 17) return; /* extension headers (fragments too): slow path */
    uint32_t plen = rd16(f + off + 4);
    if (len < off + 40 + plen) return;
    p->v6 = 1;
    p->l4 = off + 40;
    p->ip_payload = plen;
    p->dst = f + off + 24;
  } else {
    return;
  }
  if (p->ip_payload < 8) return;
  p->udp_len = rd16(f + p->l4 + 4);
  p->udp = 1;
}

static int ring_free(const struct nic *n) { return n->ring_slots && n->prod - n->cons < n->ring_slots; }

static void flush_irq(void *nicp, uint64_t arg) {
  struct nic *n = (struct nic *)nicp;
  (void)arg;
  n->flush_pending = 0;
  if (n->unsignalled) {
    n->unsignalled = 0;
    n->h->raise_interrupt(n->h->host, 0);
  }
}

static void entry_made(struct nic *n) {
  ++n->unsignalled;
  /* Coalescing only with both an entry count and a time limit (shim v2). */
  if (n->coalesce_entries <= 1 || n->coalesce_cycles == 0 || n->unsignalled >= n->coalesce_entries) {
    n->unsignalled = 0;
    n->h->raise_interrupt(n->h->host, 0);
  } else if (n->coalesce_cycles && !n->flush_pending) {
    n->flush_pending = 1;
#ifdef FUDP_FAULT_LATE_IRQ
    /* Fault: the coalescing timer runs four times longer than it was set to. */
    n->h->schedule_job(n->h->host, 4ull * n->coalesce_cycles, flush_irq, n, 0);
#else
    n->h->schedule_job(n->h->host, n->coalesce_cycles, flush_irq, n, 0);
#endif
  }
}

/* Writes one ring slot (entry + `stored` octets of `data`) and publishes it. */
static void put_entry(struct nic *n, uint32_t kind, uint32_t flags, uint64_t cookie, uint32_t frame_len,
                      uint32_t payload_len, uint32_t delivered, const uint8_t *data, uint32_t stored) {
#ifdef FUDP_FAULT_NO_HEADER
  /* Fault: the splinter's header never reaches the kernel ring. */
  if (kind == FUDP_ENTRY_SPLINTER) {
    n->h->raise_interrupt(n->h->host, 0);
    return;
  }
#endif
  uint8_t e[FUDP_ENTRY_SIZE];
  put_le32(e, kind);
  put_le32(e + 4, flags);
  put_le64(e + 8, cookie);
  put_le32(e + 16, frame_len);
  put_le32(e + 20, payload_len);
  put_le32(e + 24, delivered);
  put_le32(e + 28, stored);
  uint64_t slot = n->ring_base + (n->prod & (n->ring_slots - 1)) * n->slot_size;
  n->h->mem_write(n->h->host, slot, e, sizeof e);
  if (stored) n->h->mem_write(n->h->host, slot + FUDP_ENTRY_SIZE, data, stored);
  ++n->prod;
  uint8_t w[8];
  put_le64(w, n->prod);
  n->h->mem_write(n->h->host, n->prod_addr, w, sizeof w);
  n->h->delay_cycles(n->h->host, CYCLES_PER_LINE * ((FUDP_ENTRY_SIZE + stored + 63) / 64));
  entry_made(n);
}

static void to_kernel(struct nic *n, const uint8_t *f, size_t len) {
  if (!ring_free(n)) {
    COUNT(n, FUDP_STAT_RX_RING_FULL);
    return;
  }
  uint32_t room = (uint32_t)(n->slot_size - FUDP_ENTRY_SIZE);
  uint32_t stored = len > room ? room : (uint32_t)len;
  COUNT(n, FUDP_STAT_RX_SLOW);
#ifdef FUDP_FAULT_WHOLE_UNFLAGGED
  /* Fault: a frame cut to the slot is not flagged truncated. */
  put_entry(n, FUDP_ENTRY_WHOLE, 0, 0, (uint32_t)len, 0, 0, f, stored);
#else
  put_entry(n, FUDP_ENTRY_WHOLE, stored < len ? FUDP_ENTRY_F_TRUNCATED : 0, 0, (uint32_t)len, 0, 0, f, stored);
#endif
}

/* Takes the kth oldest posted receive out: the older ones move up one
 * place, so taking the oldest, the common case, moves nothing. */
static struct posted posted_take(struct nic *n, size_t k) {
  struct posted r = n->rx[n->rx_head + k];
  memmove(&n->rx[n->rx_head + 1], &n->rx[n->rx_head], k * sizeof *n->rx);
  ++n->rx_head;
  if (--n->rx_count == 0) n->rx_head = 0;
  return r;
}

/* Room for one more posted receive at the back (the caller checked rx_count). */
static struct posted *posted_append(struct nic *n) {
  if (n->rx_head + n->rx_count == MAX_POSTED) {
    memmove(n->rx, &n->rx[n->rx_head], n->rx_count * sizeof *n->rx);
    n->rx_head = 0;
  }
  return &n->rx[n->rx_head + n->rx_count++];
}

static int matches(const struct posted *r, const struct parsed *p, uint16_t port) {
  if (r->port != port) return 0;
  if (r->family == 0) return 1;
  if (r->family == 6) return p->v6 && memcmp(r->addr, p->dst, 16) == 0;
  return !p->v6 && memcmp(r->addr, p->dst, 4) == 0;
}

FUDP_EXPORT void fudp_plugin_receive(void *nicp, const void *frame, size_t len) {
  struct nic *n = (struct nic *)nicp;
  const uint8_t *f = (const uint8_t *)frame;
  if (!n->enabled) return;
  COUNT(n, FUDP_STAT_RX_FRAMES);
  n->h->delay_cycles(n->h->host, CYCLES_PER_FRAME);
  struct parsed p;
  parse(f, len, &p);
  if (!p.udp) {
    to_kernel(n, f, len);
    return;
  }
  const uint8_t *udp = f + p.l4;
  /* RFC 768: the length counts the header; more than the IP payload carries
   * cannot be a whole datagram. Octets after it (the surplus area) are not
   * the datagram's. */
  if (p.udp_len < 8 || p.udp_len > p.ip_payload) {
    COUNT(n, FUDP_STAT_RX_MALFORMED);
    return;
  }
  uint16_t csum = rd16(udp + 6);
  uint32_t eflags = 0;
  if (csum == 0) {
    /* IPv4: no checksum was computed (RFC 768). IPv6: a zero checksum is
     * discarded (RFC 8200 §8.1; no RFC 6936 tunnel is configured here). */
    if (p.v6) {
      COUNT(n, FUDP_STAT_RX_CSUM_BAD);
      return;
    }
#ifdef FUDP_FAULT_SWAP_FLAGS
    eflags |= FUDP_ENTRY_F_CSUM_OK; /* Fault: the two checksum flags swapped. */
#else
    eflags |= FUDP_ENTRY_F_NO_CSUM;
#endif
  } else {
#ifndef FUDP_FAULT_SKIP_CSUM
    if (udp_sum(p.v6, f + p.l3, udp, p.udp_len) != 0) {
      /* RFC 1122 §4.1.3.4: silently discarded. */
      COUNT(n, FUDP_STAT_RX_CSUM_BAD);
      return;
    }
#endif
#ifdef FUDP_FAULT_SWAP_FLAGS
    eflags |= FUDP_ENTRY_F_NO_CSUM;
#else
    eflags |= FUDP_ENTRY_F_CSUM_OK;
#endif
  }
#ifdef FUDP_FAULT_WRONG_PORT
  uint16_t port = rd16(udp); /* Fault: matches the source port. */
#else
  uint16_t port = rd16(udp + 2);
#endif
  size_t k = 0;
  while (k < n->rx_count && !matches(&n->rx[n->rx_head + k], &p, port)) ++k;
  if (k == n->rx_count) {
    to_kernel(n, f, len);
    return;
  }
  if (!ring_free(n)) {
    COUNT(n, FUDP_STAT_RX_RING_FULL);
    return;
  }
  struct posted r = posted_take(n, k);
  uint32_t payload = p.udp_len - 8;
  uint32_t put = payload < r.length ? payload : r.length;
  if (put < payload) {
    eflags |= FUDP_ENTRY_F_TRUNCATED;
    COUNT(n, FUDP_STAT_RX_TRUNCATED);
  }
#ifdef FUDP_FAULT_OVERRUN
  /* Fault: DMA in whole 64-octet lines, the last one past a short buffer. */
  if (put < payload) {
    uint32_t lines = (put + 63) / 64 * 64;
    n->h->mem_write(n->h->host, r.buffer, udp + 8, lines < payload ? lines : payload);
  } else {
    n->h->mem_write(n->h->host, r.buffer, udp + 8, put);
  }
#else
  if (put) n->h->mem_write(n->h->host, r.buffer, udp + 8, put);
#endif
  n->h->delay_cycles(n->h->host, CYCLES_PER_LINE * ((put + 63) / 64));
  COUNT(n, FUDP_STAT_RX_SPLINTERED);
  uint32_t hdr = (uint32_t)(p.l4 + 8);
  uint32_t room = (uint32_t)(n->slot_size - FUDP_ENTRY_SIZE);
  put_entry(n, FUDP_ENTRY_SPLINTER, eflags, r.cookie, (uint32_t)len, payload, put, f, hdr < room ? hdr : room);
}

static void post_rx(struct nic *n, uint64_t addr) {
  uint8_t d[40];
  if (n->h->mem_read(n->h->host, addr, d, sizeof d) != FUDP_OK) {
    logf_(n, "rx descriptor at 0x%llx unreadable", (unsigned long long)addr);
    return;
  }
  if (n->rx_count == MAX_POSTED) {
    logf_(n, "more than %llu receives posted: dropped", MAX_POSTED);
    return;
  }
  struct posted *r = posted_append(n);
  r->buffer = le64(d);
  r->length = le32(d + 8);
  r->port = (uint16_t)(d[12] | d[13] << 8);
  r->family = d[14];
  r->cookie = le64(d + 16);
  memcpy(r->addr, d + 24, 16);
}

static void cancel_rx(struct nic *n, uint64_t cookie) {
#ifdef FUDP_FAULT_IGNORE_CANCEL
  (void)n, (void)cookie; /* Fault: a cancelled receive stays posted. */
  return;
#endif
  for (size_t k = 0; k < n->rx_count; ++k) {
    if (n->rx[n->rx_head + k].cookie != cookie) continue;
    (void)posted_take(n, k);
    return;
  }
}

static void post_tx(struct nic *n, uint64_t addr) {
  uint8_t d[24];
  if (n->h->mem_read(n->h->host, addr, d, sizeof d) != FUDP_OK) return;
  uint64_t frame = le64(d);
  uint32_t len = le32(d + 8), flags = le32(d + 12);
  uint64_t cookie = le64(d + 16);
  if (len > MAX_FRAME || n->h->mem_read(n->h->host, frame, n->frame, len) != FUDP_OK) {
    logf_(n, "tx frame of %llu octets unreadable", len);
    return;
  }
  n->h->delay_cycles(n->h->host, CYCLES_PER_FRAME + CYCLES_PER_LINE * ((len + 63) / 64));
  if (flags & FUDP_TX_CSUM) {
    struct parsed p;
    parse(n->frame, len, &p);
    if (p.udp && p.udp_len >= 8 && p.udp_len <= p.ip_payload) {
      uint8_t *udp = n->frame + p.l4;
      wr16(udp + 6, 0);
      uint16_t c = udp_sum(p.v6, n->frame + p.l3, udp, p.udp_len);
      /* RFC 768: a computed zero is sent as all ones (zero means "none"). */
      wr16(udp + 6, c == 0 ? 0xffff : c);
    }
  }
  n->h->transmit(n->h->host, n->frame, len);
  COUNT(n, FUDP_STAT_TX_FRAMES);
#ifndef FUDP_FAULT_NO_TX_DONE
  /* The completion; with no free slot it is lost, and counted. */
  if (ring_free(n))
    put_entry(n, FUDP_ENTRY_TX_DONE, 0, cookie, len, 0, 0, NULL, 0);
  else
    COUNT(n, FUDP_STAT_RX_RING_FULL);
#else
  /* Fault: no completion entry is ever written (a full ring is still counted). */
  (void)cookie;
  if (!ring_free(n)) COUNT(n, FUDP_STAT_RX_RING_FULL);
#endif
}

static uint64_t reg_value(struct nic *n, uint64_t off) {
  if (off >= FUDP_REG_STATS && off < FUDP_REG_STATS + 8 * FUDP_STAT_COUNT) return n->stats[(off - FUDP_REG_STATS) / 8];
  switch (off) {
    case FUDP_REG_KRING_CONS: return n->cons;
    case FUDP_REG_RX_POSTED: return n->rx_count;
    default: return 0;
  }
}

/* 8-octet reads, and 4-octet reads of either half (shim v2). */
static uint64_t mmio_read(void *nicp, uint64_t off, unsigned size) {
  struct nic *n = (struct nic *)nicp;
#ifdef FUDP_FAULT_WIDE_ONLY
  (void)size; /* Fault: every read answers the whole register at that offset. */
  return reg_value(n, off);
#else
  if (size == 8 && off % 8 == 0) return reg_value(n, off);
  if (size == 4 && off % 4 == 0) {
    uint64_t v = reg_value(n, off & ~(uint64_t)7);
    return off % 8 ? v >> 32 : v & 0xffffffffu;
  }
  return 0;
#endif
}

static void mmio_write(void *nicp, uint64_t off, uint64_t v, unsigned size) {
  struct nic *n = (struct nic *)nicp;
#ifdef FUDP_FAULT_WIDE_ONLY
  (void)size; /* Fault: a narrow write acts as a whole one. */
#else
  if (size != 8) return; /* registers are written 8 octets at a time (shim v2) */
#endif
  switch (off) {
    case FUDP_REG_CTRL:
#ifndef FUDP_FAULT_IGNORE_RESET
      if (v & FUDP_CTRL_RESET) {
        /* The posted receives and the counters go; the ring stays (shim v2). */
        n->rx_count = n->rx_head = 0;
        memset(n->stats, 0, sizeof n->stats);
      }
#endif
      n->enabled = (v & FUDP_CTRL_ENABLE) && n->ring_slots && n->slot_size && n->prod_addr;
      break;
    case FUDP_REG_KRING_BASE: n->ring_base = v; break;
    case FUDP_REG_KRING_SLOTS: n->ring_slots = (v >= 2 && v <= 65536 && !(v & (v - 1))) ? v : 0; break;
    case FUDP_REG_KRING_SLOT_SIZE: n->slot_size = (v >= 256 && v <= 65536 && v % 64 == 0) ? v : 0; break;
    case FUDP_REG_KRING_PROD_ADDR: n->prod_addr = v; break;
    case FUDP_REG_KRING_CONS:
      if (v - n->cons <= n->prod - n->cons) n->cons = v; /* never past what was produced */
      break;
    case FUDP_REG_RX_POST: post_rx(n, v); break;
    case FUDP_REG_TX_POST: post_tx(n, v); break;
    case FUDP_REG_RX_CANCEL: cancel_rx(n, v); break;
    case FUDP_REG_IRQ_COALESCE:
      n->coalesce_entries = (uint32_t)(v & 0xffff);
      n->coalesce_cycles = (uint32_t)(v >> 16);
      break;
    default: break;
  }
}

FUDP_EXPORT const uint32_t fudp_plugin_abi_version = FUDP_ABI_VERSION;

FUDP_EXPORT void *fudp_plugin_init(const struct fudp_host *host, const char *args) {
  (void)args;
  if (!host || host->abi_version != FUDP_ABI_VERSION) return NULL;
  struct nic *n = (struct nic *)calloc(1, sizeof *n);
  if (!n) return NULL;
  n->rx = (struct posted *)calloc(MAX_POSTED, sizeof *n->rx);
  if (!n->rx) {
    free(n);
    return NULL;
  }
  n->h = host;
  n->coalesce_entries = 1;
  if (host->mmap_define(host->host, 0, FUDP_WINDOW0_SIZE) != FUDP_OK ||
      host->set_mmap_io_funcs(host->host, 0, mmio_read, mmio_write, n) != FUDP_OK) {
    free(n->rx);
    free(n);
    return NULL;
  }
  return n;
}

FUDP_EXPORT void fudp_plugin_fini(void *nicp) {
  struct nic *n = (struct nic *)nicp;
  if (!n) return;
  n->h->mmap_delete(n->h->host, 0);
  free(n->rx);
  free(n);
}
