/* rendezvous.c: encoders, decoders and MACs of the rendezvous protocol
 * (rendezvous.h). HMAC-SHA256 from OpenSSL's libcrypto. */
#include "proto/rendezvous.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "proto/wire.h"

int rdv_random(uint8_t *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = getrandom(buf + got, n - got, 0);

		if (r < 0)
			return RDV_ESYS;
		got += (size_t)r;
	}
	return RDV_OK;
}

void rdv_secret_to_hex(const uint8_t *secret, char *hex)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < RDV_SECRET_LEN; i++) {
		hex[2 * i] = digits[secret[i] >> 4];
		hex[2 * i + 1] = digits[secret[i] & 15];
	}
	hex[2 * RDV_SECRET_LEN] = '\0';
}

/* The value of a hex digit, RDV_EBAD for another character. */
static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return RDV_EBAD;
}

bool rdv_secret_from_hex(const char *hex, uint8_t *secret)
{
	size_t i;

	if (hex == NULL || strlen(hex) != 2 * RDV_SECRET_LEN)
		return false;
	for (i = 0; i < RDV_SECRET_LEN; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return false;
		secret[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

bool rdv_mac_equal(const uint8_t *a, const uint8_t *b)
{
	return CRYPTO_memcmp(a, b, RDV_MAC_LEN) == 0;
}

/* HMAC-SHA256(secret, label || a || b). */
static void mac3(const uint8_t *secret, const char *label, const void *a,
		 size_t alen, const void *b, size_t blen, uint8_t *out)
{
	size_t llen = strlen(label);
	uint8_t *msg = malloc(llen + alen + blen + 1);
	unsigned int mlen = RDV_MAC_LEN;

	if (msg == NULL) {
		memset(out, 0, RDV_MAC_LEN); /* verifies against nothing */
		return;
	}
	/* Bytes, not a string: */
	/* NOLINTNEXTLINE(bugprone-not-null-terminated-result) */
	memcpy(msg, label, llen);
	if (alen)
		memcpy(msg + llen, a, alen);
	if (blen)
		memcpy(msg + llen + alen, b, blen);
	HMAC(EVP_sha256(), secret, RDV_SECRET_LEN, msg, llen + alen + blen, out,
	     &mlen);
	free(msg);
}

void rdv_hello_encode(const uint8_t *nonce, uint8_t *out)
{
	struct wire_w w;

	wire_w_fixed(&w, out, RDV_HELLO_LEN);
	wire_put(&w, "HVDR", 4);
	wire_put_u8(&w, RDV_VERSION);
	wire_put(&w, nonce, RDV_NONCE_LEN);
}

int rdv_hello_decode(const uint8_t *in, uint8_t *nonce)
{
	struct wire_r r;
	const uint8_t *magic;
	int version;

	wire_r_init(&r, in, RDV_HELLO_LEN);
	magic = wire_view(&r, 4);
	if (magic == NULL || memcmp(magic, "HVDR", 4) != 0)
		return RDV_EBAD;
	version = wire_get_u8(&r);
	if (version != RDV_VERSION)
		return version;
	wire_get(&r, nonce, RDV_NONCE_LEN);
	return wire_r_done(&r) ? version : RDV_EBAD;
}

size_t rdv_register_max(void)
{
	return 4 + 4 + RDV_NONCE_LEN + 2 + RDV_ADDR_MAX + RDV_MAC_LEN;
}

/* The bytes the register mac covers after the label and server nonce. */
static size_t register_body(const struct rdv_register *r, uint8_t *body)
{
	struct wire_w w;

	wire_w_fixed(&w, body, 8 + RDV_ADDR_MAX);
	wire_put_u32(&w, r->rank);
	wire_put_u32(&w, r->size);
	wire_put(&w, r->addr, strnlen(r->addr, RDV_ADDR_MAX));
	return w.len;
}

size_t rdv_register_encode(struct rdv_register *r, const uint8_t *secret,
			   const uint8_t *server_nonce, uint8_t *out)
{
	uint8_t body[8 + RDV_ADDR_MAX];
	size_t alen = strnlen(r->addr, RDV_ADDR_MAX), blen;
	struct wire_w w;

	blen = register_body(r, body);
	mac3(secret, "hvd-register", server_nonce, RDV_NONCE_LEN, body, blen,
	     r->mac);
	wire_w_fixed(&w, out, rdv_register_max());
	wire_put_u32(&w, r->rank);
	wire_put_u32(&w, r->size);
	wire_put(&w, r->nonce, RDV_NONCE_LEN);
	wire_put_u16(&w, (uint16_t)alen);
	wire_put(&w, r->addr, alen);
	wire_put(&w, r->mac, RDV_MAC_LEN);
	return w.len;
}

long rdv_register_decode(const uint8_t *in, size_t len, struct rdv_register *r)
{
	struct wire_r rd;
	size_t alen;

	wire_r_init(&rd, in, len);
	r->rank = wire_get_u32(&rd);
	r->size = wire_get_u32(&rd);
	wire_get(&rd, r->nonce, RDV_NONCE_LEN);
	alen = wire_get_u16(&rd);
	if (rd.bad)
		return 0;
	if (alen == 0 || alen > RDV_ADDR_MAX)
		return RDV_EBAD;
	wire_get(&rd, r->addr, alen);
	wire_get(&rd, r->mac, RDV_MAC_LEN);
	if (rd.bad)
		return 0;
	r->addr[alen] = '\0';
	if (memchr(r->addr, '\0', alen) != NULL)
		return RDV_EBAD;
	return (long)rd.off;
}

bool rdv_register_verify(const struct rdv_register *r, const uint8_t *secret,
			 const uint8_t *server_nonce)
{
	uint8_t body[8 + RDV_ADDR_MAX], mac[RDV_MAC_LEN];
	size_t blen = register_body(r, body);

	mac3(secret, "hvd-register", server_nonce, RDV_NONCE_LEN, body, blen,
	     mac);
	return rdv_mac_equal(mac, r->mac);
}

void rdv_welcome_mac(const uint8_t *secret, const uint8_t *worker_nonce,
		     uint32_t rank, uint8_t *mac)
{
	uint8_t r[4];
	struct wire_w w;

	wire_w_fixed(&w, r, sizeof(r));
	wire_put_u32(&w, rank);
	mac3(secret, "hvd-welcome", worker_nonce, RDV_NONCE_LEN, r, 4, mac);
}

/* size addresses, each addr_len(2) and its bytes. */
static void put_addrs(struct wire_w *w, char *const *addrs, uint32_t size)
{
	uint32_t i;

	for (i = 0; i < size; i++) {
		size_t alen = strlen(addrs[i]);

		if (alen == 0 || alen > RDV_ADDR_MAX)
			w->bad = true;
		wire_put_u16(w, (uint16_t)alen);
		wire_put(w, addrs[i], alen);
	}
}

static size_t addrs_len(char *const *addrs, uint32_t size)
{
	size_t n = 0;
	uint32_t i;

	for (i = 0; i < size; i++)
		n += 2 + strlen(addrs[i]);
	return n;
}

/* Append the mac of label over w's bytes; a bad writer is freed. */
static uint8_t *seal(struct wire_w *w, const char *label, const uint8_t *secret,
		     const uint8_t *worker_nonce, size_t *len)
{
	if (!w->bad) {
		uint8_t mac[RDV_MAC_LEN];

		mac3(secret, label, worker_nonce, RDV_NONCE_LEN, w->p, w->len,
		     mac);
		wire_put(w, mac, RDV_MAC_LEN);
	}
	if (w->bad) {
		wire_w_free(w);
		return NULL;
	}
	*len = w->len;
	return w->p;
}

uint8_t *rdv_peers_encode(char *const *addrs, uint32_t size, uint32_t round,
			  const uint8_t *secret, const uint8_t *worker_nonce,
			  size_t *len)
{
	struct wire_w w;

	wire_w_init(&w, 8 + addrs_len(addrs, size) + RDV_MAC_LEN);
	wire_put_u32(&w, size);
	wire_put_u32(&w, round);
	put_addrs(&w, addrs, size);
	return seal(&w, "hvd-peers", secret, worker_nonce, len);
}

/* Past size addresses and the mac that follows them, from r: 1 (*body:
 * where the mac starts), 0 more bytes needed, RDV_EBAD. */
static int scan_addrs(struct wire_r *r, uint32_t size, size_t *body)
{
	uint32_t i;

	for (i = 0; i < size; i++) {
		size_t alen;

		if (wire_left(r) < 2)
			return 0;
		alen = wire_get_u16(r);
		if (alen == 0 || alen > RDV_ADDR_MAX)
			return RDV_EBAD;
		if (wire_view(r, alen) == NULL)
			return 0;
	}
	*body = r->off;
	return wire_view(r, RDV_MAC_LEN) == NULL ? 0 : 1;
}

/* Whether the mac after in[0..body) is label's. */
static bool sealed(const uint8_t *in, size_t body, const char *label,
		   const uint8_t *secret, const uint8_t *worker_nonce)
{
	uint8_t mac[RDV_MAC_LEN];

	mac3(secret, label, worker_nonce, RDV_NONCE_LEN, in, body, mac);
	return rdv_mac_equal(mac, in + body);
}

/* The size addresses scanned from r into addrs. */
static void get_addrs(struct wire_r *r, uint32_t size, char *addrs)
{
	uint32_t i;

	for (i = 0; i < size; i++) {
		size_t alen = wire_get_u16(r);
		char *a = addrs + (size_t)i * (RDV_ADDR_MAX + 1);

		wire_get(r, a, alen);
		a[alen] = '\0';
	}
}

int rdv_peers_decode(const uint8_t *in, size_t len, const uint8_t *secret,
		     const uint8_t *worker_nonce, uint32_t size,
		     uint32_t *round, char *addrs)
{
	struct wire_r r;
	size_t body;
	int rc;

	wire_r_init(&r, in, len);
	if (wire_left(&r) < 8)
		return 0;
	if (wire_get_u32(&r) != size)
		return RDV_EBAD;
	(void)wire_get_u32(&r);
	rc = scan_addrs(&r, size, &body);
	if (rc != 1)
		return rc;
	if (!sealed(in, body, "hvd-peers", secret, worker_nonce))
		return RDV_EBAD;
	wire_r_init(&r, in + 4, body - 4);
	*round = wire_get_u32(&r);
	get_addrs(&r, size, addrs);
	return 1;
}

#define WORLD_HEAD (1 + 7 * 4)

uint8_t *rdv_world_encode(const struct rdv_world *w, char *const *addrs,
			  const uint8_t *secret, const uint8_t *worker_nonce,
			  size_t *len)
{
	struct wire_w o;

	wire_w_init(&o, WORLD_HEAD + addrs_len(addrs, w->size) + RDV_MAC_LEN);
	wire_put_u8(&o, 'W');
	wire_put_u32(&o, w->gen);
	wire_put_u32(&o, w->rank);
	wire_put_u32(&o, w->size);
	wire_put_u32(&o, w->local_rank);
	wire_put_u32(&o, w->local_size);
	wire_put_u32(&o, w->cross_rank);
	wire_put_u32(&o, w->cross_size);
	put_addrs(&o, addrs, w->size);
	return seal(&o, "hvd-world", secret, worker_nonce, len);
}

void rdv_notice_encode(char what, uint32_t gen, const uint8_t *secret,
		       const uint8_t *worker_nonce, uint8_t *out)
{
	struct wire_w w;

	wire_w_fixed(&w, out, RDV_NOTICE_LEN);
	wire_put_u8(&w, 'N');
	wire_put_u8(&w, (uint8_t)what);
	wire_put_u32(&w, gen);
	mac3(secret, "hvd-notice", worker_nonce, RDV_NONCE_LEN, out, w.len,
	     out + w.len);
}

static long world_decode(const uint8_t *in, size_t len, const uint8_t *secret,
			 const uint8_t *worker_nonce, struct rdv_world *w,
			 char **addrs)
{
	struct wire_r r;
	size_t body;
	int rc;

	wire_r_init(&r, in, len);
	if (wire_left(&r) < WORLD_HEAD)
		return 0;
	wire_get_u8(&r);
	w->gen = wire_get_u32(&r);
	w->rank = wire_get_u32(&r);
	w->size = wire_get_u32(&r);
	w->local_rank = wire_get_u32(&r);
	w->local_size = wire_get_u32(&r);
	w->cross_rank = wire_get_u32(&r);
	w->cross_size = wire_get_u32(&r);
	if (w->gen == 0 || w->size == 0 || w->size > RDV_MAX_SIZE ||
	    w->rank >= w->size || w->local_size == 0 ||
	    w->local_size > w->size || w->local_rank >= w->local_size ||
	    w->cross_size == 0 || w->cross_size > w->size ||
	    w->cross_rank >= w->cross_size)
		return RDV_EBAD;
	rc = scan_addrs(&r, w->size, &body);
	if (rc != 1)
		return rc;
	if (!sealed(in, body, "hvd-world", secret, worker_nonce))
		return RDV_EBAD;
	*addrs = malloc((size_t)w->size * (RDV_ADDR_MAX + 1));
	if (*addrs == NULL)
		return RDV_EBAD;
	wire_r_init(&r, in + WORLD_HEAD, body - WORLD_HEAD);
	get_addrs(&r, w->size, *addrs);
	return (long)(body + RDV_MAC_LEN);
}

long rdv_elastic_decode(const uint8_t *in, size_t len, const uint8_t *secret,
			const uint8_t *worker_nonce, char *type, char *what,
			struct rdv_world *w, char **addrs)
{
	*addrs = NULL;
	if (len < 1)
		return 0;
	*type = (char)in[0];
	if (in[0] == 'W')
		return world_decode(in, len, secret, worker_nonce, w, addrs);
	if (in[0] != 'N')
		return RDV_EBAD;
	if (len < RDV_NOTICE_LEN)
		return 0;
	*what = (char)in[1];
	w->gen = wire_de32(in + 2);
	if ((*what != RDV_NOTICE_RESET && *what != RDV_NOTICE_HOSTS &&
	     *what != RDV_NOTICE_REMOVED) ||
	    !sealed(in, RDV_NOTICE_LEN - RDV_MAC_LEN, "hvd-notice", secret,
		    worker_nonce))
		return RDV_EBAD;
	return RDV_NOTICE_LEN;
}

void rdv_generation_key(const uint8_t *secret, uint32_t gen, uint8_t *key)
{
	uint8_t g[4];

	if (gen == 0) {
		memcpy(key, secret, RDV_SECRET_LEN);
		return;
	}
	wire_be32(g, gen);
	mac3(secret, "hvd-generation", g, 4, NULL, 0, key);
}

void rdv_mesh_token(const uint8_t *secret, uint8_t *token)
{
	mac3(secret, "hvd-mesh", NULL, 0, NULL, 0, token);
}

void rdv_shm_name(const uint8_t *secret, char *name)
{
	static const char hex[] = "0123456789abcdef";
	uint8_t mac[RDV_MAC_LEN];
	int i;

	mac3(secret, "hvd-shm", NULL, 0, NULL, 0, mac);
	memcpy(name, "hvd-shm-", 8);
	for (i = 0; i < 16; i++) {
		name[8 + 2 * i] = hex[mac[i] >> 4];
		name[9 + 2 * i] = hex[mac[i] & 15];
	}
	name[40] = '\0';
}

void rdv_mesh_hello_encode(uint32_t rank, const uint8_t *token, uint8_t *out)
{
	struct wire_w w;

	wire_w_fixed(&w, out, RDV_MESH_HELLO_LEN);
	wire_put_u32(&w, rank);
	wire_put(&w, token, RDV_MAC_LEN);
}

long rdv_mesh_hello_decode(const uint8_t *in, const uint8_t *token)
{
	struct wire_r r;
	uint32_t rank;
	const uint8_t *theirs;

	wire_r_init(&r, in, RDV_MESH_HELLO_LEN);
	rank = wire_get_u32(&r);
	theirs = wire_view(&r, RDV_MAC_LEN);
	if (theirs == NULL || !rdv_mac_equal(theirs, token) ||
	    rank > RDV_MAX_SIZE)
		return RDV_EBAD;
	return (long)rank;
}
