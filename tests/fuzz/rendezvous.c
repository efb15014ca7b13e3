/* rendezvous: what hvdrun's rendezvous port reads from anyone who
 * connects (HELLO's answer, REGISTER) and what a worker reads back
 * (PEERS; an elastic worker: WORLD and NOTICEs), decoded and checked
 * with a fixed secret (proto/rendezvous.h). */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "proto/rendezvous.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t secret[RDV_SECRET_LEN] = {1, 2, 3};
	uint8_t nonce[RDV_NONCE_LEN] = {4, 5, 6};
	struct rdv_register r;
	const uint8_t *p = data;
	size_t left = size;
	long used;
	char *addrs;
	uint32_t n, round;

	if (size >= RDV_HELLO_LEN)
		(void)rdv_hello_decode(data, nonce);
	/* One connection's REGISTERs, back to back. */
	while ((used = rdv_register_decode(p, left, &r)) > 0) {
		(void)rdv_register_verify(&r, secret, nonce);
		p += used;
		left -= (size_t)used;
	}
	/* PEERS of 1 to 8 ranks (the first byte says how many). */
	n = size > 0 ? 1 + data[0] % 8 : 1;
	addrs = malloc((size_t)n * (RDV_ADDR_MAX + 1));
	if (addrs != NULL)
		(void)rdv_peers_decode(data, size, secret, nonce, n, &round,
				       addrs);
	free(addrs);
	/* An elastic worker's stream: WORLDs and NOTICEs, back to back. */
	p = data;
	left = size;
	for (;;) {
		struct rdv_world w;
		char type, what;

		used = rdv_elastic_decode(p, left, secret, nonce, &type, &what,
					  &w, &addrs);
		free(addrs);
		if (used <= 0)
			break;
		p += used;
		left -= (size_t)used;
	}
	return 0;
}
