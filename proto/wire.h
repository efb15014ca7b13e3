/* wire.h: the one way bytes are put on and taken off the wire, under
 * every protocol of hvdrun and libhvd (control.c, rendezvous.c, the mesh
 * hello, the agent and probe records, the launcher's pipes). Integers
 * are big-endian; a string is a u32 length (WIRE_NONE: no string) and
 * its bytes, without a terminator.
 *
 * A writer grows its buffer up to a cap, or fills one the caller gives;
 * a reader takes a buffer and its length. Both keep a sticky error: once
 * a put does not fit (out of memory, over the cap) or a get runs past the
 * end or finds a bad value, every later call does nothing, gets read as
 * zero, and `bad` says so; the caller checks once, at the end. */
#ifndef HVD_WIRE_H
#define HVD_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WIRE_NONE UINT32_MAX

struct wire_w {
	uint8_t *p;
	size_t len, cap;
	size_t max; /* the most bytes it may hold */
	bool fixed; /* p is the caller's, cap bytes: never grown or freed */
	bool bad;
};

struct wire_r {
	const uint8_t *p;
	size_t len, off;
	bool bad;
};

/* A growing writer of at most max bytes. */
void wire_w_init(struct wire_w *w, size_t max);
/* A writer into the caller's buf of cap bytes. */
void wire_w_fixed(struct wire_w *w, void *buf, size_t cap);
void wire_w_free(struct wire_w *w);

void wire_put(struct wire_w *w, const void *data, size_t n);
void wire_put_u8(struct wire_w *w, uint8_t v);
void wire_put_u16(struct wire_w *w, uint16_t v);
void wire_put_u32(struct wire_w *w, uint32_t v);
void wire_put_u64(struct wire_w *w, uint64_t v);
void wire_put_i32(struct wire_w *w, int32_t v);
/* An IEEE 754 double, as the u64 of its bits. */
void wire_put_f64(struct wire_w *w, double v);
/* s's length and bytes; NULL: WIRE_NONE. */
void wire_put_str(struct wire_w *w, const char *s);
/* Overwrite the u32 at offset at (a count known only at the end). */
void wire_patch_u32(struct wire_w *w, size_t at, uint32_t v);

void wire_r_init(struct wire_r *r, const void *buf, size_t len);
/* Bytes not read yet. */
size_t wire_left(const struct wire_r *r);
void wire_get(struct wire_r *r, void *data, size_t n);
/* n bytes in place (NULL, and bad, past the end). */
const uint8_t *wire_view(struct wire_r *r, size_t n);
uint8_t wire_get_u8(struct wire_r *r);
uint16_t wire_get_u16(struct wire_r *r);
uint32_t wire_get_u32(struct wire_r *r);
uint64_t wire_get_u64(struct wire_r *r);
int32_t wire_get_i32(struct wire_r *r);
double wire_get_f64(struct wire_r *r);
/* A string of at most max bytes, in a malloc'd copy with a terminator;
 * NULL for WIRE_NONE (bad stays false) or a failure (bad). A string with
 * a NUL byte inside is bad. */
char *wire_get_str(struct wire_r *r, size_t max);
/* A u32 count of items that each take at least min bytes: one more than
 * the rest of the buffer could hold is bad (and reads as 0), so a decoder
 * can allocate for it. */
uint32_t wire_get_count(struct wire_r *r, size_t min);
/* Whether every byte was read and none was bad. */
bool wire_r_done(const struct wire_r *r);

/* Fixed-size fields in place, for a buffer of known layout. */
void wire_be32(uint8_t *p, uint32_t v);
uint32_t wire_de32(const uint8_t *p);

#endif
