/*
 * rdmaconf Fast UDP shim ABI, version 2.
 *
 * A NIC model is a shared object built against this header alone. The host
 * (rdmaconf's harness, "the simulator") loads it, hands it a table of the ten
 * shim entry points of the Fast UDP design (León and Ostrowski) plus a
 * transmit-to-wire callback, and calls its receive-from-wire entry with every
 * frame that arrives. The NIC talks to the host only through that table:
 * DMA into and out of host memory (mem_* and cache_*), its register windows
 * (mmap_*), time (schedule_job, delay_cycles) and interrupts.
 *
 * The host's driver programs the NIC through register window 0 with the
 * layout below (the device contract): it gives the NIC a kernel ring, posts
 * user receives and transmits, and services interrupt vector 0. Everything
 * the NIC writes to host memory must land in the kernel ring, the producer
 * index word, or a posted receive buffer; the harness refuses and reports
 * any other write.
 *
 * Stability: names, layouts and values in this header never change within
 * an ABI version. A later version may append members to struct fudp_host
 * (struct_size tells which are present) and new registers; it changes
 * FUDP_ABI_VERSION only when an existing meaning changes. docs/fastudp.md
 * explains the contract in full.
 *
 * Compiles as C (C99 or later) and as C++.
 */
#ifndef RDMACONF_FASTUDP_SHIM_H
#define RDMACONF_FASTUDP_SHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version 2 decided what version 1 left open (register access widths,
 * CTRL_RESET, coalescing with a zero time, the flags of each entry kind,
 * what every counter counts, transmit completions on a full ring) and added
 * FUDP_REG_RX_POSTED; a version 1 plug-in is refused. */
#define FUDP_ABI_VERSION 2u

/* ---- Host entry points (host -> NIC table) ------------------------------ */

/* Return values of the entry points that can refuse. */
#define FUDP_OK 0
#define FUDP_EFAULT (-1)  /* an address range the NIC may not touch: nothing outside it was refused */
#define FUDP_EINVAL (-2)  /* a bad argument (unknown window, zero size, null function) */
#define FUDP_ENOSPC (-3)  /* the host's queue for jobs or windows is full */

/* A register access to a window the NIC defined: offset from the window's
 * start, size 1, 2, 4 or 8 octets (little-endian values). */
typedef uint64_t (*fudp_mmio_read_fn)(void *nic, uint64_t offset, unsigned size);
typedef void (*fudp_mmio_write_fn)(void *nic, uint64_t offset, uint64_t value, unsigned size);
/* A job the NIC scheduled: runs on the NIC's context, with its argument. */
typedef void (*fudp_job_fn)(void *nic, uint64_t arg);

struct fudp_host {
  uint32_t abi_version; /* FUDP_ABI_VERSION of the host */
  uint32_t struct_size; /* sizeof(struct fudp_host) of the host */
  void *host;           /* first argument of every entry point */

  /* DMA between the NIC and simulated host physical memory. cache_* are the
   * same transfers with a cache-injection hint (the data is placed in, or
   * read from, the host CPU's cache); the host counts them apart. A write
   * that reaches outside what the host allowed is refused for the octets
   * outside, reported, and returns FUDP_EFAULT. */
  int (*mem_write)(void *host, uint64_t addr, const void *src, size_t len);
  int (*cache_write)(void *host, uint64_t addr, const void *src, size_t len);
  int (*mem_read)(void *host, uint64_t addr, void *dst, size_t len);
  int (*cache_read)(void *host, uint64_t addr, void *dst, size_t len);

  /* Register windows (BARs): the NIC defines window `window` of `size`
   * octets, then gives its handlers. Window 0 is the device contract's. */
  int (*mmap_define)(void *host, uint32_t window, uint64_t size);
  int (*mmap_delete)(void *host, uint32_t window);
  int (*set_mmap_io_funcs)(void *host, uint32_t window, fudp_mmio_read_fn read, fudp_mmio_write_fn write, void *nic);

  /* Time, in NIC cycles. schedule_job runs `job` once `delay` cycles from
   * now; delay_cycles accounts for `cycles` of NIC work (the host's clock
   * moves on by that much before anything the NIC does next is seen). */
  int (*schedule_job)(void *host, uint64_t delay, fudp_job_fn job, void *nic, uint64_t arg);
  void (*delay_cycles)(void *host, uint64_t cycles);

  /* Raises interrupt vector `vector` (0: the receive/transmit vector). */
  int (*raise_interrupt)(void *host, uint32_t vector);

  /* Transmit-to-wire: one Ethernet frame (no FCS). */
  int (*transmit)(void *host, const void *frame, size_t len);

  /* A line of diagnostics, shown with the harness's report. */
  void (*log)(void *host, const char *message);
};

/* ---- NIC plug-in exports ------------------------------------------------ */

#if defined(_WIN32)
#define FUDP_EXPORT __declspec(dllexport)
#else
#define FUDP_EXPORT __attribute__((visibility("default")))
#endif

/* Every plug-in defines these four symbols:
 *
 *   FUDP_EXPORT const uint32_t fudp_plugin_abi_version = FUDP_ABI_VERSION;
 *   FUDP_EXPORT void *fudp_plugin_init(const struct fudp_host *host, const char *args);
 *   FUDP_EXPORT void fudp_plugin_fini(void *nic);
 *   FUDP_EXPORT void fudp_plugin_receive(void *nic, const void *frame, size_t len);
 *
 * init returns the NIC's state (passed back to every call) or NULL on
 * failure; it defines window 0 and registers its handlers before it
 * returns. `args` is the text of `--plugin-args` (never NULL). receive
 * gets one Ethernet frame from the wire (no FCS); the frame is valid only
 * during the call. The host never calls the NIC from two threads at once. */
typedef void *(*fudp_plugin_init_fn)(const struct fudp_host *host, const char *args);
typedef void (*fudp_plugin_fini_fn)(void *nic);
typedef void (*fudp_plugin_receive_fn)(void *nic, const void *frame, size_t len);

#define FUDP_SYM_ABI_VERSION "fudp_plugin_abi_version"
#define FUDP_SYM_INIT "fudp_plugin_init"
#define FUDP_SYM_FINI "fudp_plugin_fini"
#define FUDP_SYM_RECEIVE "fudp_plugin_receive"

/* ---- The device contract: window 0 --------------------------------------- */

#define FUDP_WINDOW0_SIZE 0x1000u

/* Registers (8-octet, little-endian). W: the driver writes; R: it reads.
 * Access widths: the driver writes registers with 8-octet accesses only; a
 * write of another size has no effect. It reads with 8-octet accesses, or
 * with 4-octet ones at a register's offset (its low half) or offset + 4
 * (its high half), as a 32-bit driver does. */
#define FUDP_REG_CTRL 0x000u            /* W: FUDP_CTRL_* */
#define FUDP_REG_KRING_BASE 0x008u      /* W: address of the kernel ring */
#define FUDP_REG_KRING_SLOTS 0x010u     /* W: number of slots (a power of two, 2..65536) */
#define FUDP_REG_KRING_SLOT_SIZE 0x018u /* W: octets per slot (a multiple of 64, 256..65536) */
#define FUDP_REG_KRING_PROD_ADDR 0x020u /* W: address of the 8-octet producer index word */
#define FUDP_REG_KRING_CONS 0x028u      /* W: slots the driver has consumed (free-running) */
#define FUDP_REG_RX_POST 0x030u         /* W: address of a struct fudp_rx_desc to take */
#define FUDP_REG_TX_POST 0x038u         /* W: address of a struct fudp_tx_desc to send */
#define FUDP_REG_IRQ_COALESCE 0x040u    /* W: bits 0-15 entries, 16-47 cycles. With both non-zero the
                                           NIC raises vector 0 once `entries` entries are unsignalled,
                                           or `cycles` after the first unsignalled entry was
                                           published, whichever comes first; otherwise (either field
                                           zero) after each entry */
#define FUDP_REG_RX_CANCEL 0x048u       /* W: cookie of a posted receive to withdraw: no datagram reaches it
                                           after the write, and no entry names it */
#define FUDP_REG_RX_POSTED 0x050u       /* R: posted receives the NIC holds now */
#define FUDP_REG_STATS 0x100u           /* R: FUDP_STAT_COUNT counters of 8 octets */

/* The value written to FUDP_REG_CTRL replaces the last. ENABLE set: the NIC
 * takes frames from the wire (the ring registers are set before). ENABLE
 * clear, and before the first write: a frame from the wire is ignored, no
 * write, no entry, no counter. RESET (acted on before ENABLE): every
 * posted receive is dropped without an entry (the driver takes its buffers
 * back), the counters go to zero, and RX_POSTED to zero. The ring stays as
 * it is: the producer index goes on from where it was, and entries already
 * published stay the driver's. */
#define FUDP_CTRL_ENABLE 0x1u
#define FUDP_CTRL_RESET 0x2u

/* Counters at FUDP_REG_STATS + 8 * index, free-running, zeroed by
 * CTRL_RESET. Each frame from the wire counts in RX_FRAMES and then in
 * exactly one of SPLINTERED, SLOW, CSUM_BAD, RING_FULL or MALFORMED. */
enum fudp_stat {
  FUDP_STAT_RX_FRAMES = 0,     /* frames taken from the wire while enabled */
  FUDP_STAT_RX_SPLINTERED = 1, /* datagrams placed in a user buffer (splinter entries written) */
  FUDP_STAT_RX_SLOW = 2,       /* frames handed whole to the kernel ring (whole entries written) */
  FUDP_STAT_RX_CSUM_BAD = 3,   /* UDP datagrams dropped for their checksum: a wrong non-zero one
                                  (IPv4, IPv6) or a zero one over IPv6 */
  FUDP_STAT_RX_RING_FULL = 4,  /* entries not written for want of a free slot: frames dropped, and
                                  transmit completions lost (the frame itself was sent) */
  FUDP_STAT_RX_TRUNCATED = 5,  /* splinters flagged truncated (also counted in SPLINTERED) */
  FUDP_STAT_RX_MALFORMED = 6,  /* UDP datagrams dropped for their length (below 8, or beyond the
                                  IP payload) */
  FUDP_STAT_TX_FRAMES = 7,     /* frames sent */
  FUDP_STAT_COUNT = 8
};

/* A user receive, in host memory (little-endian). The NIC copies it when
 * the driver writes its address to FUDP_REG_RX_POST. A datagram matches
 * when its UDP destination port is `port` and, unless `family` is 0, its IP
 * version is `family` and its destination address equals `addr` (IPv4 in
 * the first 4 octets). Of the matching receives the oldest posted wins. */
struct fudp_rx_desc {
  uint64_t buffer;  /* user buffer address */
  uint32_t length;  /* user buffer octets */
  uint16_t port;    /* UDP destination port */
  uint8_t family;   /* 0: any address, 4: IPv4, 6: IPv6 */
  uint8_t flags;    /* 0 */
  uint64_t cookie;  /* the driver's name for this receive (non-zero) */
  uint8_t addr[16]; /* destination address when family != 0 */
};

/* A transmit: an Ethernet frame in host memory. */
struct fudp_tx_desc {
  uint64_t frame;
  uint32_t length;
  uint32_t flags;  /* FUDP_TX_* */
  uint64_t cookie; /* reported in the completion entry */
};
#define FUDP_TX_CSUM 0x1u /* compute and fill in the UDP checksum (IPv4 and IPv6); one that
                             computes to zero is sent as 0xffff */

/* A NIC holds at least this many posted receives at once. A post beyond
 * what it holds is refused: the receive is not held (no datagram reaches
 * it) and RX_POSTED does not count it, which is how the driver learns. */
#define FUDP_MIN_POSTED 1024u

/* Kernel ring slot: a struct fudp_ring_entry followed by `stored` octets of
 * frame. The NIC writes the slot, then the producer index word (slots
 * produced, free-running), then raises vector 0 (subject to coalescing). It
 * never writes a slot the driver has not consumed. */
struct fudp_ring_entry {
  uint32_t kind;        /* FUDP_ENTRY_* */
  uint32_t flags;       /* FUDP_ENTRY_F_* */
  uint64_t cookie;      /* splinter: the receive's; tx: the transmit's */
  uint32_t frame_len;   /* octets of the frame on the wire */
  uint32_t payload_len; /* splinter: UDP payload octets (UDP length - 8) */
  uint32_t delivered;   /* splinter: octets placed in the user buffer */
  uint32_t stored;      /* octets of frame after this entry in the slot */
};
#define FUDP_ENTRY_SIZE 32u

/* The fast path takes an Ethernet frame (one VLAN tag at most) holding an
 * unfragmented UDP datagram: IPv4 with a good header checksum, or IPv6 whose
 * fixed header's Next Header is UDP (so the pseudo-header's addresses are
 * the fixed header's). Anything else, an IPv4 header checksum that fails and
 * any IPv6 extension header included, goes whole to the kernel ring. */
#define FUDP_ENTRY_SPLINTER 1u /* payload in the user buffer; the frame's headers through UDP here */
#define FUDP_ENTRY_WHOLE 2u    /* the whole frame here, for the kernel's own stack */
#define FUDP_ENTRY_TX_DONE 3u  /* a transmit completed: written once the frame is on the wire; cookie
                                  and frame_len from its descriptor, the other fields zero */

/* Flags by entry kind. Splinter: exactly one of CSUM_OK and NO_CSUM, and
 * TRUNCATED when the payload was longer than the buffer. Whole: TRUNCATED
 * when the frame was longer than the slot (the first slot size - 32 octets
 * are stored), nothing else. Tx-done: none. */
#define FUDP_ENTRY_F_TRUNCATED 0x1u
#define FUDP_ENTRY_F_CSUM_OK 0x2u /* the UDP checksum was verified */
#define FUDP_ENTRY_F_NO_CSUM 0x4u /* the datagram carried no checksum (IPv4, zero) */

#ifdef __cplusplus
}
#endif

#endif /* RDMACONF_FASTUDP_SHIM_H */
