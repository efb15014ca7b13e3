/* rendezvous.h: the one definition of the rendezvous between hvdrun and
 * its workers, spoken by hvdrun (lib/rdv/server.c) and libhvd
 * (core/transport/bootstrap.c). Pure encoders and decoders: each side does its own I/O.
 *
 * hvdrun gives each worker HVD_RENDEZVOUS (addresses to try, "IP:PORT,...")
 * and HVD_SECRET (the job's random 32-byte secret, in hex), never on a
 * command line. The secret never crosses the wire: both sides prove they
 * know it with HMAC-SHA256 over fresh nonces.
 *
 *   hvdrun -> worker  HELLO    "HVDR" version(1) server_nonce(32)
 *   worker -> hvdrun  REGISTER rank(4) size(4) worker_nonce(32)
 *                              addr_len(2) addr mac(32)
 *       mac = HMAC(secret, "hvd-register" server_nonce rank size addr)
 *   hvdrun -> worker  WELCOME  mac(32) = HMAC(secret, "hvd-welcome"
 *                              worker_nonce rank)
 *   ... once every rank has registered ...
 *   hvdrun -> worker  PEERS    size(4) round(4) { addr_len(2) addr } * size
 *                              mac(32) = HMAC(secret, "hvd-peers"
 *                              worker_nonce the bytes before the mac)
 *
 * A job that is not elastic meets in rounds: every hvd_init() of every
 * rank (hvd_shutdown() then hvd_init() again, any number of times) is
 * one, 0, 1, 2, ...; hvdrun sends PEERS once every rank has registered
 * for the round, and the next round starts. The round's key (below, as
 * a generation's) keys its mesh token and shared-memory name, so no
 * rank of an earlier round can join a later one's mesh.
 *
 * Integers are big-endian. addr is where the worker's transport listens,
 * "IP:PORT". The workers' mesh token is HMAC(secret, "hvd-mesh"); a
 * worker that connects to a peer's transport (core/transport/tcp.c) says first
 *
 *   worker -> peer    MESH     rank(4) token(32)
 *
 * and the peer closes a connection whose token is not the job's.
 *
 * An elastic job (hvdrun --min-np, --max-np; the worker has HVD_WORKER_ID)
 * runs in generations, 1, 2, ..., each its own world. REGISTER's rank is
 * the worker's id and its size the last generation it belonged to (0:
 * none); hvdrun answers WELCOME, holds the connection until a later
 * generation that has the worker is complete, and sends
 *
 *   hvdrun -> worker  WORLD    'W' gen(4) rank(4) size(4) local_rank(4)
 *                              local_size(4) cross_rank(4) cross_size(4)
 *                              { addr_len(2) addr } * size mac(32)
 *       mac = HMAC(secret, "hvd-world" worker_nonce the bytes before)
 *
 * and, on the same connection while the generation runs,
 *
 *   hvdrun -> worker  NOTICE   'N' what(1) gen(4) mac(32)
 *       mac = HMAC(secret, "hvd-notice" worker_nonce the bytes before)
 *
 * what: RDV_NOTICE_RESET (generation gen replaces the worker's: a worker
 * was lost), RDV_NOTICE_REMOVED (hosts leave the job: generation gen,
 * without them, follows; a reset comes with it), RDV_NOTICE_HOSTS (hosts
 * were added: the workers re-join at
 * their next commit). libhvd's watcher acts on the kind alone (anything
 * but a hosts notice, added or removed, ends the generation, so a forged one could only do
 * what closing the connection does); the mac is for readers that act on
 * more. A generation's key, HMAC(secret, "hvd-generation"
 * gen), takes the secret's place in the mesh token and the shared-memory
 * name: no worker of another generation can join its mesh. */
#ifndef HVD_PROTO_RENDEZVOUS_H
#define HVD_PROTO_RENDEZVOUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RDV_VERSION 2
#define RDV_SECRET_LEN 32
#define RDV_NONCE_LEN 32
#define RDV_MAC_LEN 32
#define RDV_ADDR_MAX 255
#define RDV_HELLO_LEN (4 + 1 + RDV_NONCE_LEN)
#define RDV_MESH_HELLO_LEN (4 + RDV_MAC_LEN)
#define RDV_MAX_SIZE (1 << 20)
#define RDV_NOTICE_LEN (1 + 1 + 4 + RDV_MAC_LEN)
#define RDV_NOTICE_RESET 'R'
#define RDV_NOTICE_HOSTS 'U'
#define RDV_NOTICE_REMOVED 'D'

/* What the rendezvous functions return besides lengths and counts. */
enum {
	RDV_OK = 0,
	RDV_EBAD = -1, /* malformed, or a mac that does not match: refuse */
	RDV_ESYS = -2, /* the system's random source failed */
};

struct rdv_register {
	uint32_t rank, size;
	uint8_t nonce[RDV_NONCE_LEN];
	char addr[RDV_ADDR_MAX + 1];
	uint8_t mac[RDV_MAC_LEN];
};

/* Fill buf with n random bytes: RDV_OK or RDV_ESYS. */
int rdv_random(uint8_t *buf, size_t n);
/* Hex of the secret (2 * RDV_SECRET_LEN + 1 bytes), and back. */
void rdv_secret_to_hex(const uint8_t *secret, char *hex);
bool rdv_secret_from_hex(const char *hex, uint8_t *secret);
/* Constant-time comparison of two MACs. */
bool rdv_mac_equal(const uint8_t *a, const uint8_t *b);

void rdv_hello_encode(const uint8_t *nonce, uint8_t *out);
/* The HELLO's version: RDV_VERSION with *nonce filled; another (0..255)
 * where an hvdrun of another build speaks another one (its first five
 * bytes are every version's); RDV_EBAD where in is no HELLO. */
int rdv_hello_decode(const uint8_t *in, uint8_t *nonce);

/* The worker's side: fill r (rank, size, addr) and compute its mac. Returns
 * the encoded length in out (at most rdv_register_max()). */
size_t rdv_register_max(void);
size_t rdv_register_encode(struct rdv_register *r, const uint8_t *secret,
			   const uint8_t *server_nonce, uint8_t *out);
/* hvdrun's side: decode one REGISTER from in[0..len). Returns its length,
 * 0 if more bytes are needed, RDV_EBAD if malformed. */
long rdv_register_decode(const uint8_t *in, size_t len, struct rdv_register *r);
bool rdv_register_verify(const struct rdv_register *r, const uint8_t *secret,
			 const uint8_t *server_nonce);

void rdv_welcome_mac(const uint8_t *secret, const uint8_t *worker_nonce,
		     uint32_t rank, uint8_t *mac);

/* PEERS: encode into a malloc'ed buffer; decode checks the mac and fills
 * addrs (size entries, each RDV_ADDR_MAX + 1 bytes) and *round. */
uint8_t *rdv_peers_encode(char *const *addrs, uint32_t size, uint32_t round,
			  const uint8_t *secret, const uint8_t *worker_nonce,
			  size_t *len);
/* 1 done, 0 more bytes needed, RDV_EBAD malformed or a bad mac. */
int rdv_peers_decode(const uint8_t *in, size_t len, const uint8_t *secret,
		     const uint8_t *worker_nonce, uint32_t size,
		     uint32_t *round, char *addrs);

/* An elastic generation's world, as WORLD gives it to one worker. */
struct rdv_world {
	uint32_t gen, rank, size, local_rank, local_size, cross_rank,
		cross_size;
};

/* WORLD, into a malloc'ed buffer (NULL: out of memory, a bad address). */
uint8_t *rdv_world_encode(const struct rdv_world *w, char *const *addrs,
			  const uint8_t *secret, const uint8_t *worker_nonce,
			  size_t *len);
/* NOTICE, RDV_NOTICE_LEN bytes into out. */
void rdv_notice_encode(char what, uint32_t gen, const uint8_t *secret,
		       const uint8_t *worker_nonce, uint8_t *out);
/* What hvdrun sends an elastic worker after WELCOME: the first message of
 * in[0..len). Returns its length, 0 when more bytes are needed, RDV_EBAD
 * when malformed or its mac does not match. *type: 'W' (w filled, *addrs
 * a malloc'ed array of w->size addresses of RDV_ADDR_MAX + 1 bytes, the
 * caller's to free) or 'N' (*what, w->gen). */
long rdv_elastic_decode(const uint8_t *in, size_t len, const uint8_t *secret,
			const uint8_t *worker_nonce, char *type, char *what,
			struct rdv_world *w, char **addrs);
/* Generation gen's key (RDV_SECRET_LEN bytes), or a static job's round's;
 * 0 (a static job's first round): the secret itself. */
void rdv_generation_key(const uint8_t *secret, uint32_t gen, uint8_t *key);

void rdv_mesh_token(const uint8_t *secret, uint8_t *token);
/* The name at which one host's ranks meet to share memory (core/transport/shm.h):
 * "hvd-shm-" and 32 hex digits of a MAC of the secret, which neither
 * the secret nor the mesh token can be read from (RDV_SHM_NAME_LEN
 * bytes with the NUL). */
#define RDV_SHM_NAME_LEN 41
void rdv_shm_name(const uint8_t *secret, char *name);
/* A worker's MESH message of RDV_MESH_HELLO_LEN bytes. */
void rdv_mesh_hello_encode(uint32_t rank, const uint8_t *token, uint8_t *out);
/* The rank a MESH message names, or RDV_EBAD when its token is not
 * token. */
long rdv_mesh_hello_decode(const uint8_t *in, const uint8_t *token);

#endif
