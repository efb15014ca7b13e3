/* engine/autotune.c: see autotune.h. */
#include "engine/autotune.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

/* The search space, as Horovod's: fusion threshold 0 to 64 MiB, cycle
 * time 1 to 100 ms; its first settings after the job's own. */
#define FUSION_MAX_KIB (64u << 10)
#define CYCLE_MIN_US 1000u
#define CYCLE_MAX_US 100000u
static const double first_points[][2] = {
	{4, 5}, {32, 50}, {16, 25}, {8, 10}}; /* MiB, ms */
#define NFIRST (int)(sizeof(first_points) / sizeof(first_points[0]))
/* The kernel's length scale, on inputs scaled to [0, 1]. */
#define LENGTH 0.25
#define CANDIDATES 2000
#define KEEP_MARGIN 0.05 /* see best_of */

/* Whether v is given (rank 0's, for the job-wide settings: knobs.c). */
static bool env_set(enum wenv_id v)
{
	return hvd__env_text(v) != NULL;
}

int hvd__autotune_open(struct hvd__autotune *a, const struct hvd__knobs *k,
		       int rank, bool shm, bool hosts)
{
	long on, warm, steps, max;
	const char *path;
	int rc;

	memset(a, 0, sizeof(*a));
	rc = hvd__env_long(WENV_AUTOTUNE, &on);
	if (rc == HVD_OK)
		rc = hvd__env_long(WENV_AUTOTUNE_WARMUP_SAMPLES, &warm);
	if (rc == HVD_OK)
		rc = hvd__env_long(WENV_AUTOTUNE_STEPS_PER_SAMPLE, &steps);
	if (rc == HVD_OK)
		rc = hvd__env_long(WENV_AUTOTUNE_BAYES_OPT_MAX_SAMPLES, &max);
	if (rc == HVD_OK)
		rc = hvd__env(WENV_AUTOTUNE_GAUSSIAN_PROCESS_NOISE, &a->noise);
	if (rc != HVD_OK)
		return rc;
	a->on = on != 0;
	a->rank = rank;
	a->warmup_left = (int)warm;
	a->steps_per_sample = (int)steps;
	/* Room for the choices of stages 1 to 4 after them. */
	a->max_samples =
		(int)max < HVD__TUNE_MAX - 4 ? (int)max : HVD__TUNE_MAX - 4;
	a->rng = 0x9e3779b97f4a7c15ull;
	a->now.fusion_kib = (uint32_t)(k->fusion_threshold >> 10);
	a->now.cycle_us = (uint32_t)lround(k->cycle_ms * 1000);
	a->now.shm_allreduce = 1;
	a->now.hier_allgather = k->hier_allgather;
	a->now.cache = k->cache_cap > 0;
	a->now.gpu_hier = k->hier_allreduce;
	a->now.tuning = a->on;
	a->next = a->now;
	if (!a->on)
		return HVD_OK;
	a->tune_fusion = !env_set(WENV_FUSION_THRESHOLD);
	a->tune_cycle = !env_set(WENV_CYCLE_TIME);
	a->tune_shm = shm;
	a->tune_allgather =
		shm && hosts && !env_set(WENV_HIERARCHICAL_ALLGATHER);
	a->tune_cache = k->cache_cap > 0 && !env_set(WENV_CACHE_CAPACITY);
	a->tune_gpu_hier = !env_set(WENV_HIERARCHICAL_ALLREDUCE);
	path = getenv(wenv_vars[WENV_AUTOTUNE_LOG].name);
	if (rank == 0 && path != NULL && *path != '\0') {
		a->log = fopen(path, "w");
		if (a->log == NULL) {
			hvd__error("HOROVOD_AUTOTUNE_LOG='%s': cannot write it "
				   "(%s)",
				   path, strerror(errno));
			return HVD_EINVAL;
		}
		fprintf(a->log,
			"hierarchical_allreduce,hierarchical_allgather,"
			"cache_enabled,cycle_time_ms,tensor_fusion_threshold,"
			"score,hierarchical_allreduce_gpu\n");
		fflush(a->log);
	}
	return HVD_OK;
}

void hvd__autotune_close(struct hvd__autotune *a)
{
	if (a->log != NULL)
		fclose(a->log);
	memset(a, 0, sizeof(*a));
}

static void encode(const struct hvd__setting *s, uint8_t *b)
{
	int i;

	for (i = 0; i < 4; i++) {
		b[i] = (uint8_t)(s->fusion_kib >> (24 - 8 * i));
		b[4 + i] = (uint8_t)(s->cycle_us >> (24 - 8 * i));
	}
	b[8] = s->shm_allreduce;
	b[9] = s->hier_allgather;
	b[10] = s->cache;
	b[11] = s->tuning;
	b[12] = s->serial;
	b[13] = s->gpu_hier;
}

void hvd__autotune_put(const struct hvd__autotune *a, uint8_t *tail)
{
	if (a->rank == 0)
		encode(&a->next, tail);
	else
		memset(tail, 0xff, HVD__SETTING_BYTES);
}

static bool same(const struct hvd__setting *x, const struct hvd__setting *y)
{
	return x->fusion_kib == y->fusion_kib && x->cycle_us == y->cycle_us &&
	       x->shm_allreduce == y->shm_allreduce &&
	       x->hier_allgather == y->hier_allgather && x->cache == y->cache &&
	       x->tuning == y->tuning && x->serial == y->serial &&
	       x->gpu_hier == y->gpu_hier;
}

bool hvd__autotune_take(struct hvd__autotune *a, const uint8_t *b)
{
	struct hvd__setting s = {0};
	int i;

	for (i = 0; i < 4; i++) {
		s.fusion_kib = s.fusion_kib << 8 | b[i];
		s.cycle_us = s.cycle_us << 8 | b[4 + i];
	}
	s.shm_allreduce = b[8];
	s.hier_allgather = b[9];
	s.cache = b[10];
	s.tuning = b[11];
	s.serial = b[12];
	s.gpu_hier = b[13];
	if (same(&s, &a->now))
		return false;
	a->now = s;
	return true;
}

/* ---- the Gaussian process ---- */

static double kernel(const double *p, const double *q)
{
	double d0 = p[0] - q[0], d1 = p[1] - q[1];

	return exp(-(d0 * d0 + d1 * d1) / (2 * LENGTH * LENGTH));
}

static double uniform01(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return (double)(*s >> 11) / 9007199254740992.0;
}

void hvd__bayes_next(const double (*x)[2], const double *y, int n, double noise,
		     uint64_t *rng, int ncand, double out[2])
{
	double L[HVD__TUNE_MAX][HVD__TUNE_MAX], alpha[HVD__TUNE_MAX] = {0};
	double z[HVD__TUNE_MAX], mean = 0, sd = 0, best = -INFINITY, top = -1;
	int i, j, k, c;

	out[0] = uniform01(rng);
	out[1] = uniform01(rng);
	if (n < 1 || n > HVD__TUNE_MAX)
		return;
	for (i = 0; i < n; i++)
		mean += y[i] / n;
	for (i = 0; i < n; i++)
		sd += (y[i] - mean) * (y[i] - mean) / n;
	sd = sd > 0 ? sqrt(sd) : 1;
	for (i = 0; i < n; i++) {
		z[i] = (y[i] - mean) / sd;
		best = z[i] > best ? z[i] : best;
	}
	/* K + noise^2 I = L L^T (Cholesky), then alpha = K^-1 z. */
	for (i = 0; i < n; i++)
		for (j = 0; j <= i; j++) {
			double s = kernel(x[i], x[j]) +
				   (i == j ? noise * noise + 1e-9 : 0);

			for (k = 0; k < j; k++)
				s -= L[i][k] * L[j][k];
			L[i][j] = i == j ? sqrt(s > 1e-12 ? s : 1e-12)
					 : s / L[j][j];
		}
	for (i = 0; i < n; i++) {
		double s = z[i];

		for (k = 0; k < i; k++)
			s -= L[i][k] * alpha[k];
		alpha[i] = s / L[i][i];
	}
	for (i = n - 1; i >= 0; i--) {
		double s = alpha[i];

		for (k = i + 1; k < n; k++)
			s -= L[k][i] * alpha[k];
		alpha[i] = s / L[i][i];
	}
	/* The candidate of greatest expected improvement. */
	for (c = 0; c < ncand; c++) {
		double p[2] = {uniform01(rng), uniform01(rng)};
		double v[HVD__TUNE_MAX] = {0};
		double mu = 0, var = 1, sigma, g, ei;

		for (i = 0; i < n; i++) {
			double s = kernel(p, x[i]);

			mu += s * alpha[i];
			for (k = 0; k < i; k++)
				s -= L[i][k] * v[k];
			v[i] = s / L[i][i];
			var -= v[i] * v[i];
		}
		sigma = var > 1e-12 ? sqrt(var) : 1e-6;
		g = (mu - best - 0.01) / sigma;
		ei = (mu - best - 0.01) * 0.5 * erfc(-g / M_SQRT2) +
		     sigma * exp(-g * g / 2) / sqrt(2 * M_PI);
		if (ei > top) {
			top = ei;
			out[0] = p[0];
			out[1] = p[1];
		}
	}
}

/* ---- the search (rank 0) ---- */

static void to_x(const struct hvd__setting *s, double x[2])
{
	x[0] = (double)s->fusion_kib / FUSION_MAX_KIB;
	x[1] = ((double)s->cycle_us - CYCLE_MIN_US) /
	       (CYCLE_MAX_US - CYCLE_MIN_US);
}

/* The best setting scored: the job's own (the first) unless another beat
 * it by more than KEEP_MARGIN. The best of many noisy scores is biased
 * up: on a busy host a sample scatters by several percent, and the plain
 * best of ten settings that all ran alike could end below the job's own
 * (MLP at np 2: 0.85 of it, keeping 30 MiB and 5.3 ms). */
static int best_of(const struct hvd__autotune *a)
{
	int i, b = 0;

	for (i = 1; i < a->n; i++)
		if (a->score[i] > a->score[b])
			b = i;
	return a->score[b] > a->score[0] * (1 + KEEP_MARGIN) ? b : 0;
}

/* s with the fusion threshold and cycle time at x, where they are tuned
 * (else the job's own, kept in the first setting tried). */
static void at_x(const struct hvd__autotune *a, struct hvd__setting *s,
		 const double x[2])
{
	if (a->tune_fusion)
		s->fusion_kib = (uint32_t)lround(x[0] * FUSION_MAX_KIB);
	if (a->tune_cycle)
		s->cycle_us = (uint32_t)lround(
			CYCLE_MIN_US + x[1] * (CYCLE_MAX_US - CYCLE_MIN_US));
}

static void log_row(const struct hvd__autotune *a, const struct hvd__setting *s,
		    double score)
{
	if (a->log == NULL)
		return;
	fprintf(a->log, "%d,%d,%d,%.3f,%u,%.6f,%d\n", s->shm_allreduce,
		s->hier_allgather, s->cache, s->cycle_us / 1000.0,
		s->fusion_kib << 10, score, s->gpu_hier);
	fflush(a->log);
}

#define LAST_STAGE 4

/* Stage 1 to 4's choice (the shared-memory allreduce, the hierarchical
 * allgather, the response cache, the GPU's hierarchical allreduce)
 * turned the other way in s, if tuned (and, the first two, used). */
static bool flip(const struct hvd__autotune *a, int stage,
		 struct hvd__setting *s)
{
	uint8_t *v[LAST_STAGE + 1] = {NULL, &s->shm_allreduce,
				      &s->hier_allgather, &s->cache,
				      &s->gpu_hier};
	bool tuned[LAST_STAGE + 1] = {
		false, a->tune_shm && (a->uses & HVD__TUNE_USES_SHM),
		a->tune_allgather && (a->uses & HVD__TUNE_USES_GATHER),
		a->tune_cache, a->tune_gpu_hier && a->gpu_split};

	if (tuned[stage])
		*v[stage] = !*v[stage];
	return tuned[stage];
}

/* The setting to score next, or the best kept (tuning 0). */
static struct hvd__setting choose(struct hvd__autotune *a)
{
	struct hvd__setting s = a->tried[best_of(a)];
	int k = a->n - a->stage_start;

	if (a->stage == 0 && (a->tune_fusion || a->tune_cycle) &&
	    k < a->max_samples) {
		double x[2], xs[HVD__TUNE_MAX][2];
		int i;

		s = a->tried[a->n - 1];
		if (k - 1 < NFIRST) {
			x[0] = first_points[k - 1][0] / 64.0; /* of 64 MiB */
			x[1] = (first_points[k - 1][1] * 1000 - CYCLE_MIN_US) /
			       (CYCLE_MAX_US - CYCLE_MIN_US);
		} else {
			for (i = 0; i < a->n; i++)
				to_x(&a->tried[i], xs[i]);
			hvd__bayes_next((const double(*)[2])xs, a->score, a->n,
					a->noise, &a->rng, CANDIDATES, x);
		}
		at_x(a, &s, x);
		return s;
	}
	/* Then each choice in turn, the best so far with it the other way. */
	while (a->stage < LAST_STAGE) {
		a->stage++;
		a->stage_start = a->n;
		if (flip(a, a->stage, &s))
			return s;
	}
	s.tuning = 0;
	log_row(a, &s, a->score[best_of(a)]);
	hvd__debug("autotune: kept fusion threshold %u KiB, cycle time %.3f "
		   "ms, shared-memory allreduce %d, hierarchical allgather %d, "
		   "response cache %d, GPU hierarchical allreduce %d (%.3f "
		   "bytes/us)",
		   s.fusion_kib, s.cycle_us / 1000.0, s.shm_allreduce,
		   s.hier_allgather, s.cache, s.gpu_hier, a->score[best_of(a)]);
	return s;
}

/* How often the tensor of this name has run in the sample, now one more;
 * 0 when the table is full (the sample starts again). */
static int count(struct hvd__autotune *a, const char *name)
{
	uint64_t h = 14695981039346656037ull;
	size_t i, k;

	for (; *name != '\0'; name++)
		h = (h ^ (uint8_t)*name) * 1099511628211ull;
	h |= 1;
	for (k = 0; k < HVD__TUNE_NAMES; k++) {
		i = (h + k) % HVD__TUNE_NAMES;
		if (a->names[i] == 0)
			a->names[i] = h;
		if (a->names[i] == h)
			return ++a->counts[i];
	}
	return 0;
}

static double median3(const double *v)
{
	double lo = v[0] < v[1] ? v[0] : v[1], hi = v[0] < v[1] ? v[1] : v[0];

	return v[2] < lo ? lo : v[2] > hi ? hi : v[2];
}

static void sample_reset(struct hvd__autotune *a)
{
	memset(a->names, 0, sizeof(a->names));
	memset(a->counts, 0, sizeof(a->counts));
	a->steps = 0;
	a->bytes = 0;
}

void hvd__autotune_record(struct hvd__autotune *a, const char *name,
			  size_t bytes, unsigned uses)
{
	long long now;
	double score;
	int c;

	if (!a->on || a->rank != 0 || !a->now.tuning)
		return;
	a->uses |= uses;
	if (a->now.serial != a->next.serial)
		return; /* a new setting not yet in force */
	c = count(a, name);
	if (c == 0) {
		sample_reset(a);
		return;
	}
	a->bytes += (double)bytes;
	if (c <= a->steps)
		return;
	a->steps = c;
	now = hvd__now_us();
	/* The first step under a setting is not timed: it pays for the
	 * change (a fusion buffer grown, ...). */
	if (c == 2) {
		a->t0_us = now;
		a->bytes = (double)bytes;
		return;
	}
	if (c < a->steps_per_sample + 2)
		return;
	score = (a->bytes - (double)bytes) /
		(double)(now - a->t0_us > 0 ? now - a->t0_us : 1);
	sample_reset(a);
	if (a->warmup_left > 0) {
		a->warmup_left--;
		return;
	}
	a->samples[a->nsamples++] = score;
	if (a->nsamples < HVD__TUNE_SAMPLES)
		return;
	score = median3(a->samples);
	a->nsamples = 0;
	a->tried[a->n] = a->now;
	a->score[a->n] = score;
	a->n++;
	log_row(a, &a->now, score);
	a->next = choose(a);
	a->next.serial = (uint8_t)(a->now.serial + 1);
}
