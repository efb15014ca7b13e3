/* iris_mlp.c: data-parallel training of a small neural network on Fisher's
 * Iris data (examples/data/iris.csv: 150 flowers, 4 measurements, 3
 * species), in plain C with libhvd:
 *   - rank 0 initialises the weights and broadcasts them;
 *   - every rank walks the same shuffled global batches and takes its own
 *     shard of each;
 *   - gradients are averaged over the ranks with hvd_allreduce, so every
 *     rank takes the same step;
 *   - accuracy and loss are summed over the ranks' shares of the data.
 * With any number of ranks that divides the batch, training follows the
 * same path: 1, 2 or 4 ranks end with the same weights, up to the order
 * of floating-point sums.
 *
 *   hvdrun -np 4 build/examples/iris_mlp [CSV] [--epochs N] [--save FILE] */
#include <hvd.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NF 4	 /* features */
#define NH 16	 /* hidden units */
#define NC 3	 /* classes */
#define BATCH 24 /* global batch: divisible by 1, 2, 3, 4, 6, 8 */
#define MAXROWS 1024

#define NW1 (NH * NF)
#define NPARAM (NW1 + NH + NC * NH + NC)

struct data {
	double x[MAXROWS][NF];
	int y[MAXROWS];
	int n;
};

/* The parameters, one flat vector: W1, b1, W2, b2. */
static double param[NPARAM];
#define W1(h, f) param[(h)*NF + (f)]
#define B1(h) param[NW1 + (h)]
#define W2(c, h) param[NW1 + NH + (c)*NH + (h)]
#define B2(c) param[NW1 + NH + NC * NH + (c)]

static int load(const char *path, struct data *d)
{
	FILE *f = fopen(path, "r");
	char line[256];
	int lineno = 0;

	if (f == NULL) {
		fprintf(stderr, "iris_mlp: cannot read '%s'\n", path);
		return -1;
	}
	d->n = 0;
	while (fgets(line, sizeof(line), f) != NULL) {
		double v[NF];
		int y;

		if (lineno++ == 0)
			continue; /* the header */
		if (sscanf(line, "%lf,%lf,%lf,%lf,%d", &v[0], &v[1], &v[2],
			   &v[3], &y) != 5 ||
		    y < 0 || y >= NC || d->n == MAXROWS) {
			fprintf(stderr, "iris_mlp: %s:%d: bad row\n", path,
				lineno);
			fclose(f);
			return -1;
		}
		memcpy(d->x[d->n], v, sizeof(v));
		d->y[d->n++] = y;
	}
	fclose(f);
	return 0;
}

/* Standardise every feature: the same on every rank. */
static void standardise(struct data *d)
{
	int f, i;

	for (f = 0; f < NF; f++) {
		double mean = 0, var = 0;

		for (i = 0; i < d->n; i++)
			mean += d->x[i][f];
		mean /= d->n;
		for (i = 0; i < d->n; i++)
			var += (d->x[i][f] - mean) * (d->x[i][f] - mean);
		var = sqrt(var / d->n);
		for (i = 0; i < d->n; i++)
			d->x[i][f] = (d->x[i][f] - mean) / var;
	}
}

/* A small deterministic generator: the same numbers on every machine. */
static uint64_t rng = 42;

static double uniform(void)
{
	rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return (double)(rng >> 11) / 9007199254740992.0;
}

static void forward(const double *x, double *h, double *p)
{
	double m = -1e300, z = 0;
	int i, j;

	for (i = 0; i < NH; i++) {
		double s = B1(i);

		for (j = 0; j < NF; j++)
			s += W1(i, j) * x[j];
		h[i] = tanh(s);
	}
	for (i = 0; i < NC; i++) {
		double s = B2(i);

		for (j = 0; j < NH; j++)
			s += W2(i, j) * h[j];
		p[i] = s;
		m = s > m ? s : m;
	}
	for (i = 0; i < NC; i++) {
		p[i] = exp(p[i] - m);
		z += p[i];
	}
	for (i = 0; i < NC; i++)
		p[i] /= z;
}

/* Add the gradient of the cross-entropy of one sample to g; its loss. */
static double backward(const double *x, int y, double *g)
{
	double h[NH], p[NC], dh[NH] = {0};
	int i, j;

	forward(x, h, p);
	for (i = 0; i < NC; i++) {
		double d = p[i] - (i == y);

		for (j = 0; j < NH; j++) {
			g[NW1 + NH + i * NH + j] += d * h[j];
			dh[j] += d * W2(i, j);
		}
		g[NW1 + NH + NC * NH + i] += d;
	}
	for (j = 0; j < NH; j++) {
		double dz = dh[j] * (1 - h[j] * h[j]);

		for (i = 0; i < NF; i++)
			g[j * NF + i] += dz * x[i];
		g[NW1 + j] += dz;
	}
	return -log(p[y] > 1e-300 ? p[y] : 1e-300);
}

static int check(int rc, const char *what)
{
	if (rc != 0)
		fprintf(stderr, "iris_mlp: rank %d: %s: %s (%s)\n", hvd_rank(),
			what, hvd_strerror(rc), hvd_error_message());
	return rc;
}

int main(int argc, char **argv)
{
	static struct data d;
	const char *path = "examples/data/iris.csv", *save = NULL;
	int epochs = 300, order[MAXROWS], e, i, rc;
	double lr = 0.1;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--epochs") == 0 && i + 1 < argc)
			epochs = atoi(argv[++i]);
		else if (strcmp(argv[i], "--save") == 0 && i + 1 < argc)
			save = argv[++i];
		else
			path = argv[i];
	}
	rc = hvd_init();
	if (check(rc, "hvd_init"))
		return 1;
	if (BATCH % hvd_size() != 0) {
		fprintf(stderr,
			"iris_mlp: %d ranks do not divide the batch of %d\n",
			hvd_size(), BATCH);
		return 2;
	}
	if (load(path, &d) != 0)
		return 1;
	standardise(&d);
	/* Rank 0's weights for everyone. */
	if (hvd_rank() == 0)
		for (i = 0; i < NPARAM; i++)
			param[i] = (uniform() - 0.5) * (i < NW1 ? 1.0 : 0.5);
	if (check(hvd_broadcast("init", param, NPARAM, HVD_FLOAT64, 0),
		  "broadcast"))
		return 1;
	for (i = 0; i < d.n; i++)
		order[i] = i;
	rng = 7; /* the same shuffles on every rank */
	for (e = 1; e <= epochs; e++) {
		int b, shard = BATCH / hvd_size();

		for (i = d.n - 1; i > 0; i--) {
			int j = (int)(uniform() * (i + 1)), t = order[i];

			order[i] = order[j];
			order[j] = t;
		}
		for (b = 0; b + BATCH <= d.n; b += BATCH) {
			double g[NPARAM] = {0};
			int k;

			/* This rank's shard of the global batch. */
			for (k = 0; k < shard; k++) {
				int row = order[b + hvd_rank() * shard + k];

				backward(d.x[row], d.y[row], g);
			}
			for (k = 0; k < NPARAM; k++)
				g[k] /= shard;
			if (check(hvd_allreduce("grad", g, g, NPARAM,
						HVD_FLOAT64, HVD_AVERAGE),
				  "allreduce"))
				return 1;
			for (k = 0; k < NPARAM; k++)
				param[k] -= lr * g[k];
		}
		if (e % 50 == 0 || e == epochs) {
			/* Evaluate: each rank scores its share of the rows. */
			double stats[2] = {0, 0}; /* loss, correct */

			for (i = hvd_rank(); i < d.n; i += hvd_size()) {
				double h[NH], p[NC], g[NPARAM] = {0};
				int c, best = 0;

				forward(d.x[i], h, p);
				for (c = 1; c < NC; c++)
					best = p[c] > p[best] ? c : best;
				stats[1] += best == d.y[i];
				stats[0] += backward(d.x[i], d.y[i], g);
			}
			if (check(hvd_allreduce("eval", stats, stats, 2,
						HVD_FLOAT64, HVD_SUM),
				  "allreduce"))
				return 1;
			if (hvd_rank() == 0)
				printf("epoch %3d  loss %.4f  accuracy %.1f%% (%d ranks)\n",
				       e, stats[0] / d.n, 100 * stats[1] / d.n,
				       hvd_size());
		}
	}
	if (save != NULL && hvd_rank() == 0) {
		FILE *f = fopen(save, "w");

		for (i = 0; f != NULL && i < NPARAM; i++)
			fprintf(f, "%.17g\n", param[i]);
		if (f != NULL)
			fclose(f);
	}
	hvd_shutdown();
	return 0;
}
