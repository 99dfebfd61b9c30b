/* Built by scripts/package.sh into the release's lib/libdet_glibc_compat.so.1: what the
 * libraries the release carries take from a glibc newer than 2.34, for the GPU nodes that run
 * older ones (RHEL 9 has 2.34, Ubuntu 22.04 2.35). Debian's libarchive calls arc4random_buf, which
 * glibc has only from 2.36; the release clears that reference's version and adds this library
 * to libarchive's needs, so that a newer glibc's own arc4random_buf is found first (it comes
 * earlier in the lookup order) and this one serves where glibc has none. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/random.h>

void arc4random_buf(void* buffer, size_t size) {
  unsigned char* out = buffer;
  while (size > 0) {
    ssize_t got = getrandom(out, size, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      abort(); /* as glibc's does: there is no way to report a failure to the caller */
    }
    out += got;
    size -= (size_t)got;
  }
}
