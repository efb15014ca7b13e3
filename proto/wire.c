/* wire.c: big-endian puts and gets with a sticky error (wire.h). */
#include "proto/wire.h"

#include <stdlib.h>
#include <string.h>

void wire_w_init(struct wire_w *w, size_t max)
{
	*w = (struct wire_w){.max = max};
}

void wire_w_fixed(struct wire_w *w, void *buf, size_t cap)
{
	*w = (struct wire_w){.p = buf, .cap = cap, .max = cap, .fixed = true};
}

void wire_w_free(struct wire_w *w)
{
	if (!w->fixed)
		free(w->p);
	w->p = NULL;
	w->len = w->cap = 0;
}

static bool room(struct wire_w *w, size_t n)
{
	size_t cap;
	uint8_t *p;

	if (w->bad)
		return false;
	if (n > w->max - w->len) {
		w->bad = true;
		return false;
	}
	if (w->len + n <= w->cap)
		return true;
	if (w->fixed) {
		w->bad = true;
		return false;
	}
	cap = w->cap ? w->cap : 256;
	while (cap < w->len + n)
		cap = cap > SIZE_MAX / 2 ? SIZE_MAX : cap * 2;
	if (cap > w->max)
		cap = w->max;
	p = realloc(w->p, cap);
	if (p == NULL) {
		w->bad = true;
		return false;
	}
	w->p = p;
	w->cap = cap;
	return true;
}

void wire_put(struct wire_w *w, const void *data, size_t n)
{
	if (n == 0 || !room(w, n))
		return;
	memcpy(w->p + w->len, data, n);
	w->len += n;
}

static void put_be(struct wire_w *w, uint64_t v, size_t n)
{
	size_t i;

	if (!room(w, n))
		return;
	for (i = 0; i < n; i++)
		w->p[w->len + i] = (uint8_t)(v >> (8 * (n - 1 - i)));
	w->len += n;
}

void wire_put_u8(struct wire_w *w, uint8_t v)
{
	put_be(w, v, 1);
}

void wire_put_u16(struct wire_w *w, uint16_t v)
{
	put_be(w, v, 2);
}

void wire_put_u32(struct wire_w *w, uint32_t v)
{
	put_be(w, v, 4);
}

void wire_put_u64(struct wire_w *w, uint64_t v)
{
	put_be(w, v, 8);
}

void wire_put_i32(struct wire_w *w, int32_t v)
{
	put_be(w, (uint32_t)v, 4);
}

void wire_put_f64(struct wire_w *w, double v)
{
	uint64_t u;

	memcpy(&u, &v, sizeof(u));
	put_be(w, u, 8);
}

void wire_put_str(struct wire_w *w, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (s != NULL && n >= WIRE_NONE) {
		w->bad = true;
		return;
	}
	wire_put_u32(w, s ? (uint32_t)n : WIRE_NONE);
	wire_put(w, s, n);
}

void wire_patch_u32(struct wire_w *w, size_t at, uint32_t v)
{
	if (w->bad || at > w->len || w->len - at < 4) {
		w->bad = true;
		return;
	}
	wire_be32(w->p + at, v);
}

void wire_r_init(struct wire_r *r, const void *buf, size_t len)
{
	*r = (struct wire_r){.p = buf, .len = buf ? len : 0};
}

size_t wire_left(const struct wire_r *r)
{
	return r->bad ? 0 : r->len - r->off;
}

const uint8_t *wire_view(struct wire_r *r, size_t n)
{
	const uint8_t *p;

	if (r->bad || r->len - r->off < n) {
		r->bad = true;
		return NULL;
	}
	p = r->p + r->off;
	r->off += n;
	return p;
}

void wire_get(struct wire_r *r, void *data, size_t n)
{
	const uint8_t *p = wire_view(r, n);

	if (p != NULL)
		memcpy(data, p, n);
	else if (n > 0)
		memset(data, 0, n);
}

static uint64_t get_be(struct wire_r *r, size_t n)
{
	const uint8_t *p = wire_view(r, n);
	uint64_t v = 0;
	size_t i;

	for (i = 0; p != NULL && i < n; i++)
		v = v << 8 | p[i];
	return v;
}

uint8_t wire_get_u8(struct wire_r *r)
{
	return (uint8_t)get_be(r, 1);
}

uint16_t wire_get_u16(struct wire_r *r)
{
	return (uint16_t)get_be(r, 2);
}

uint32_t wire_get_u32(struct wire_r *r)
{
	return (uint32_t)get_be(r, 4);
}

uint64_t wire_get_u64(struct wire_r *r)
{
	return get_be(r, 8);
}

int32_t wire_get_i32(struct wire_r *r)
{
	return (int32_t)(uint32_t)get_be(r, 4);
}

double wire_get_f64(struct wire_r *r)
{
	uint64_t u = get_be(r, 8);
	double v;

	memcpy(&v, &u, sizeof(v));
	return v;
}

char *wire_get_str(struct wire_r *r, size_t max)
{
	uint32_t n = wire_get_u32(r);
	const uint8_t *p;
	char *s;

	if (r->bad || n == WIRE_NONE)
		return NULL;
	if (n > max) {
		r->bad = true;
		return NULL;
	}
	p = wire_view(r, n);
	if (p == NULL || memchr(p, '\0', n) != NULL) {
		r->bad = true;
		return NULL;
	}
	s = malloc((size_t)n + 1);
	if (s == NULL) {
		r->bad = true;
		return NULL;
	}
	memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

uint32_t wire_get_count(struct wire_r *r, size_t min)
{
	uint32_t n = wire_get_u32(r);

	if (!r->bad && min > 0 && n > wire_left(r) / min)
		r->bad = true;
	return r->bad ? 0 : n;
}

bool wire_r_done(const struct wire_r *r)
{
	return !r->bad && r->off == r->len;
}

void wire_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

uint32_t wire_de32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}
