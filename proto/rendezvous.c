/* rendezvous.c: encoders, decoders and MACs of the rendezvous protocol
 * (rendezvous.h). HMAC-SHA256 from OpenSSL's libcrypto. */
#include "rendezvous.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

int rdv_random(uint8_t *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = getrandom(buf + got, n - got, 0);

		if (r < 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
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

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
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

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
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
	memcpy(out, "HVDR", 4);
	out[4] = RDV_VERSION;
	memcpy(out + 5, nonce, RDV_NONCE_LEN);
}

bool rdv_hello_decode(const uint8_t *in, uint8_t *nonce)
{
	if (memcmp(in, "HVDR", 4) != 0 || in[4] != RDV_VERSION)
		return false;
	memcpy(nonce, in + 5, RDV_NONCE_LEN);
	return true;
}

size_t rdv_register_max(void)
{
	return 4 + 4 + RDV_NONCE_LEN + 2 + RDV_ADDR_MAX + RDV_MAC_LEN;
}

/* The bytes the register mac covers after the label and server nonce. */
static size_t register_body(const struct rdv_register *r, uint8_t *body)
{
	size_t alen = strlen(r->addr);

	put32(body, r->rank);
	put32(body + 4, r->size);
	memcpy(body + 8, r->addr, alen);
	return 8 + alen;
}

size_t rdv_register_encode(struct rdv_register *r, const uint8_t *secret,
			   const uint8_t *server_nonce, uint8_t *out)
{
	uint8_t body[8 + RDV_ADDR_MAX];
	size_t alen = strlen(r->addr), blen, n = 0;

	blen = register_body(r, body);
	mac3(secret, "hvd-register", server_nonce, RDV_NONCE_LEN, body, blen,
	     r->mac);
	put32(out, r->rank);
	put32(out + 4, r->size);
	memcpy(out + 8, r->nonce, RDV_NONCE_LEN);
	n = 8 + RDV_NONCE_LEN;
	out[n++] = (uint8_t)(alen >> 8);
	out[n++] = (uint8_t)alen;
	memcpy(out + n, r->addr, alen);
	n += alen;
	memcpy(out + n, r->mac, RDV_MAC_LEN);
	return n + RDV_MAC_LEN;
}

long rdv_register_decode(const uint8_t *in, size_t len, struct rdv_register *r)
{
	size_t head = 8 + RDV_NONCE_LEN + 2, alen;

	if (len < head)
		return 0;
	alen = (size_t)in[head - 2] << 8 | in[head - 1];
	if (alen == 0 || alen > RDV_ADDR_MAX)
		return -1;
	if (len < head + alen + RDV_MAC_LEN)
		return 0;
	r->rank = get32(in);
	r->size = get32(in + 4);
	memcpy(r->nonce, in + 8, RDV_NONCE_LEN);
	memcpy(r->addr, in + head, alen);
	r->addr[alen] = '\0';
	if (memchr(r->addr, '\0', alen) != NULL)
		return -1;
	memcpy(r->mac, in + head + alen, RDV_MAC_LEN);
	return (long)(head + alen + RDV_MAC_LEN);
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

	put32(r, rank);
	mac3(secret, "hvd-welcome", worker_nonce, RDV_NONCE_LEN, r, 4, mac);
}

uint8_t *rdv_peers_encode(char *const *addrs, uint32_t size,
			  const uint8_t *secret, const uint8_t *worker_nonce,
			  size_t *len)
{
	size_t n = 4, i;
	uint8_t *out;

	for (i = 0; i < size; i++)
		n += 2 + strlen(addrs[i]);
	out = malloc(n + RDV_MAC_LEN);
	if (out == NULL)
		return NULL;
	put32(out, size);
	n = 4;
	for (i = 0; i < size; i++) {
		size_t alen = strlen(addrs[i]);

		out[n++] = (uint8_t)(alen >> 8);
		out[n++] = (uint8_t)alen;
		memcpy(out + n, addrs[i], alen);
		n += alen;
	}
	mac3(secret, "hvd-peers", worker_nonce, RDV_NONCE_LEN, out, n, out + n);
	*len = n + RDV_MAC_LEN;
	return out;
}

int rdv_peers_decode(const uint8_t *in, size_t len, const uint8_t *secret,
		     const uint8_t *worker_nonce, uint32_t size, char *addrs)
{
	uint8_t mac[RDV_MAC_LEN];
	size_t n = 4, i;

	if (len < 4)
		return 0;
	if (get32(in) != size)
		return -1;
	for (i = 0; i < size; i++) {
		size_t alen;

		if (len < n + 2)
			return 0;
		alen = (size_t)in[n] << 8 | in[n + 1];
		if (alen == 0 || alen > RDV_ADDR_MAX)
			return -1;
		if (len < n + 2 + alen)
			return 0;
		n += 2 + alen;
	}
	if (len < n + RDV_MAC_LEN)
		return 0;
	mac3(secret, "hvd-peers", worker_nonce, RDV_NONCE_LEN, in, n, mac);
	if (!rdv_mac_equal(mac, in + n))
		return -1;
	n = 4;
	for (i = 0; i < size; i++) {
		size_t alen = (size_t)in[n] << 8 | in[n + 1];
		char *a = addrs + i * (RDV_ADDR_MAX + 1);

		memcpy(a, in + n + 2, alen);
		a[alen] = '\0';
		n += 2 + alen;
	}
	return 1;
}

void rdv_mesh_token(const uint8_t *secret, uint8_t *token)
{
	mac3(secret, "hvd-mesh", NULL, 0, NULL, 0, token);
}
