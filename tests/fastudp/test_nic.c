/*
 * A NIC plug-in that misbehaves on purpose, for the harness's own tests.
 * Its --plugin-args choose how: "null" (init fails), "crash" and "hang" (in
 * the receive entry), "misuse" (bad shim calls), "wild" (a DMA write to an
 * address the host never registered), "fork" (a child of its own that
 * sleeps for ever, holding every descriptor), "hog" (allocates and touches
 * up to 20 GiB, aborting when an allocation fails), "spew" (10 MB on stdout). Built three times: as is, with
 * TEST_NIC_BAD_ABI (another ABI version) and with TEST_NIC_NO_RECEIVE (a
 * missing export). It never delivers anything.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdmaconf/fastudp_shim.h"

struct nic {
  const struct fudp_host *h;
  char mode[16];
  int once;
};

static uint64_t rd(void *n, uint64_t off, unsigned size) {
  (void)n, (void)off, (void)size;
  return 0;
}
static void wr(void *n, uint64_t off, uint64_t v, unsigned size) { (void)n, (void)off, (void)v, (void)size; }

#ifdef TEST_NIC_BAD_ABI
FUDP_EXPORT const uint32_t fudp_plugin_abi_version = 99;
#else
FUDP_EXPORT const uint32_t fudp_plugin_abi_version = FUDP_ABI_VERSION;
#endif

FUDP_EXPORT void *fudp_plugin_init(const struct fudp_host *h, const char *args) {
  if (strcmp(args, "null") == 0) return NULL;
  struct nic *n = (struct nic *)calloc(1, sizeof *n);
  n->h = h;
  strncpy(n->mode, args, sizeof n->mode - 1);
  h->mmap_define(h->host, 0, FUDP_WINDOW0_SIZE);
  h->set_mmap_io_funcs(h->host, 0, rd, wr, n);
  return n;
}

FUDP_EXPORT void fudp_plugin_fini(void *p) { free(p); }

#ifndef TEST_NIC_NO_RECEIVE
FUDP_EXPORT void fudp_plugin_receive(void *p, const void *frame, size_t len) {
  struct nic *n = (struct nic *)p;
  (void)frame, (void)len;
  if (strcmp(n->mode, "crash") == 0) raise(SIGSEGV);
  if (strcmp(n->mode, "hang") == 0)
    for (;;) sleep(1);
  if (strcmp(n->mode, "fork") == 0 && !n->once++ && fork() == 0)
    for (;;) sleep(1);
  if (strcmp(n->mode, "hog") == 0)
    for (int i = 0; i < 320; ++i) {
      char *m = (char *)malloc((size_t)64 << 20);
      if (!m) abort();
      memset(m, 1, (size_t)64 << 20);
    }
  if (strcmp(n->mode, "spew") == 0 && !n->once++) {
    static char line[1000];
    memset(line, 'x', sizeof line - 1);
    line[sizeof line - 1] = '\n';
    for (int i = 0; i < 10000; ++i) fwrite(line, 1, sizeof line, stdout);
    fflush(stdout);
  }
  if (strcmp(n->mode, "misuse") == 0) {
    n->h->raise_interrupt(n->h->host, 7);
    n->h->mmap_delete(n->h->host, 9);
    n->h->schedule_job(n->h->host, 10, NULL, n, 0);
  }
  if (strcmp(n->mode, "wild") == 0) {
    static const char junk[16] = "overwrite";
    n->h->mem_write(n->h->host, 0x10, junk, sizeof junk);
  }
}
#endif
