/* copy.c: the copy of the data path (reduce.h): the transports', the
 * fusion buffers' and the collectives' copies of tensor bytes.
 *
 * glibc's memcpy copies from about 2 KiB up to a cache's size with `rep
 * movsb` where the CPU says it is fast (ERMS, FSRM). On AMD's Zen 3
 * (EPYC 7003) that runs at 1.5 to 2 GB/s, against 25 to 45 GB/s, when the
 * destination is not aligned as the source is: a tensor of malloc's
 * (16 bytes past a page) copied into a segment's slot, or out of it.
 * Through libhvd's shared segment that made the allreduce of 256 KiB to
 * 16 MiB run at 0.6 to 0.75 of Open MPI's on such a host. Here the bytes
 * go in 64-byte blocks of vector loads and stores (built for the
 * baseline, AVX2 and AVX-512, as the reductions are), the destination
 * aligned first: 22 to 36 GB/s there whatever the alignment, and as fast
 * as memcpy from a cache's size up. */
#include <stdint.h>
#include <string.h>

#include "util/reduce.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CLONES __attribute__((target_clones("default", "avx2", "avx512f")))
#else
#define CLONES
#endif

/* Below this, memcpy's own small copies (no `rep movsb`). */
#define SMALL 1024

CLONES static void blocks(unsigned char *d, const unsigned char *s, size_t n)
{
	while (n-- > 0) {
		__builtin_memcpy(d, s, 64);
		/* d is opaque to the compiler here, so that it does not make
		 * the loop one call of memcpy again. */
		__asm__("" : "+r"(d));
		d += 64;
		s += 64;
	}
}

void hvd__copy(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;
	size_t head;

	if (n < SMALL) {
		if (n > 0)
			memcpy(d, s, n);
		return;
	}
	head = (size_t)(-(uintptr_t)d & 63);
	memcpy(d, s, head);
	d += head;
	s += head;
	n -= head;
	blocks(d, s, n / 64);
	memcpy(d + (n & ~(size_t)63), s + (n & ~(size_t)63), n & 63);
}
