/* engine/autotune.h: HOROVOD_AUTOTUNE, Horovod's autotuner. While the job
 * runs, rank 0 measures the job's throughput (bytes its collectives move
 * per microsecond, over samples of HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE
 * steps, a step being a return of the tensor that ran most often, as
 * Horovod counts them; a setting's score is the median of 3 samples) under
 * one
 * setting after another of the fusion threshold and the cycle time
 * (Bayesian optimisation: a Gaussian process over the scores so far,
 * the next setting the one of greatest expected improvement), then of the
 * CPU allreduce through the hosts' shared memory or over TCP, of the
 * hierarchical allgather, of the response cache on or off and of the GPU
 * allreduce within hosts then across or flat, and keeps the best. The
 * first
 * HOROVOD_AUTOTUNE_WARMUP_SAMPLES samples are not scored; a setting the
 * user gave (HOROVOD_FUSION_THRESHOLD, ...) is not tuned.
 *
 * Every rank uses the same setting from the same cycle: rank 0's setting
 * rides at the end of each cycle's agreement (negotiate.c), and every rank
 * takes it from there before the cycle runs anything. Rank 0 writes each
 * scored setting, and at the end the best, to HOROVOD_AUTOTUNE_LOG as
 * CSV, Horovod's columns and then the GPU's hierarchical allreduce. */
#ifndef HVD_AUTOTUNE_H
#define HVD_AUTOTUNE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Samples scored for one setting: its score is their median. */
#define HVD__TUNE_SAMPLES 3

/* Tensors counted in one sample (a hash table of their names). */
#define HVD__TUNE_NAMES 1024

/* One setting, as the agreement carries it. */
struct hvd__setting {
	uint32_t fusion_kib; /* fusion threshold */
	uint32_t cycle_us;   /* cycle time */
	uint8_t shm_allreduce, hier_allgather;
	uint8_t cache;	  /* the response cache on */
	uint8_t tuning;	  /* 1: still tuning, 0: the best, kept */
	uint8_t serial;	  /* changes with each new setting */
	uint8_t gpu_hier; /* the GPU allreduce within hosts, then across */
};

/* Its bytes at the end of the agreement's vector. */
#define HVD__SETTING_BYTES 14

#define HVD__TUNE_MAX 64 /* settings scored at most */

struct hvd__autotune {
	bool on;
	int rank;
	FILE *log; /* rank 0, or NULL */
	int warmup_left, steps_per_sample, max_samples;
	double noise;
	/* What may be tuned: not what the user set, and only what this job
	 * has (a shared segment; hosts for the allgather across them). */
	bool tune_fusion, tune_cycle, tune_shm, tune_allgather, tune_cache;
	/* The GPU's hierarchical allreduce: the user left it to the tuner
	 * (tune_gpu_hier), and the GPU engine runs with its communicator
	 * split by host (gpu_split: set when it starts, the same on every
	 * rank). */
	bool tune_gpu_hier, gpu_split;
	unsigned uses; /* rank 0: HVD__TUNE_USES_* of the tensors recorded */
	struct hvd__setting now;  /* in force on every rank */
	struct hvd__setting next; /* rank 0: what the next agreement carries */
	/* Rank 0's sample: how often each tensor ran (a step: the most
	 * often), the bytes since the first step ended, and when it did. */
	uint64_t names[HVD__TUNE_NAMES];
	int counts[HVD__TUNE_NAMES];
	int steps;
	long long t0_us;
	double bytes;
	double samples[HVD__TUNE_SAMPLES]; /* of the setting in force */
	int nsamples;
	/* The search: the scored settings, in order. */
	int stage; /* 0 fusion and cycle, 1 shared memory, 2 allgather,
		      3 the response cache, 4 the GPU's hierarchical
		      allreduce */
	int n, stage_start;
	struct hvd__setting tried[HVD__TUNE_MAX];
	double score[HVD__TUNE_MAX];
	uint64_t rng;
};

struct hvd__knobs;

/* HOROVOD_AUTOTUNE* read; the setting in force starts as the knobs'.
 * shm: the job has a shared segment; hosts: it spans several. */
int hvd__autotune_open(struct hvd__autotune *a, const struct hvd__knobs *k,
		       int rank, bool shm, bool hosts);
void hvd__autotune_close(struct hvd__autotune *a);
/* The agreement's tail: rank 0's next setting, 0xff from the others (the
 * agreement's MIN over bytes then gives rank 0's). */
void hvd__autotune_put(const struct hvd__autotune *a, uint8_t *tail);
/* The setting agreed: true when it differs from the one in force, which
 * it then replaces (the caller applies it). */
bool hvd__autotune_take(struct hvd__autotune *a, const uint8_t *tail);
/* Which of the tuned choices a tensor's collective runs through: a
 * choice that none of the job's collectives ran through while the tuner
 * scored fusion and cycle is not tried (shared memory in a job of GPU
 * collectives, the hierarchical allgather in one without allgathers). */
#define HVD__TUNE_USES_SHM 1u	 /* a CPU allreduce or reducescatter */
#define HVD__TUNE_USES_GATHER 2u /* a CPU allgather */

/* Rank 0, after a cycle ran its responses: each tensor's name, bytes and
 * uses (HVD__TUNE_USES_*); may choose the next setting. */
void hvd__autotune_record(struct hvd__autotune *a, const char *name,
			  size_t bytes, unsigned uses);

/* The Gaussian process's choice (exposed for the unit test): of n scored
 * points x (in [0, 1]^2) with scores y, the candidate of greatest expected
 * improvement among ncand random ones (rng: the generator's state). */
void hvd__bayes_next(const double (*x)[2], const double *y, int n, double noise,
		     uint64_t *rng, int ncand, double out[2]);

#endif
