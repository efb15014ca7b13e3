/* config/yaml.c: horovodrun's YAML config file (its --config-file), read
 * with libyaml into the same option table as the command line and the
 * INI file. Its layout, horovodrun 0.28's:
 *
 *   controller: gloo | mpi
 *   params:          fusion_threshold_mb, cycle_time_ms, cache_capacity,
 *                    hierarchical_allreduce, hierarchical_allgather
 *   autotune:        enabled, log_file, warmup_samples, steps_per_sample,
 *                    bayes_opt_max_samples, gaussian_process_noise
 *   timeline:        filename, mark_cycles
 *   stall_check:     enabled, warning_time_seconds, shutdown_time_seconds
 *   library_options: mpi_threads_disable, num_nccl_streams,
 *                    thread_affinity, gloo_timeout_seconds,
 *                    ccl_bgt_affinity (nothing: no oneCCL)
 *   logging:         level, with_timestamp, hide_timestamp (its opposite)
 *
 * Every value is a scalar; a key hvdrun does not know is an error that
 * names the file, the line and the key (the rules between settings,
 * config/rules.c, refuse mpi_threads_disable with the mpi controller). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "config/config.h"

/* A section's key: the setting it is, taken as it is, or its opposite
 * (invert: a boolean that says the reverse of the setting's), or nothing
 * to do (HL_K_COUNT). */
struct ykey {
	const char *section, *name;
	enum hl_key key;
	bool invert;
};

static const struct ykey ykeys[] = {
	{"params", "fusion_threshold_mb", HL_K_FUSION_THRESHOLD_MB, false},
	{"params", "cycle_time_ms", HL_K_CYCLE_TIME_MS, false},
	{"params", "cache_capacity", HL_K_CACHE_CAPACITY, false},
	{"params", "hierarchical_allreduce", HL_K_HIERARCHICAL_ALLREDUCE,
	 false},
	{"params", "hierarchical_allgather", HL_K_HIERARCHICAL_ALLGATHER,
	 false},
	{"autotune", "enabled", HL_K_AUTOTUNE, false},
	{"autotune", "log_file", HL_K_AUTOTUNE_LOG, false},
	{"autotune", "warmup_samples", HL_K_AUTOTUNE_WARMUP, false},
	{"autotune", "steps_per_sample", HL_K_AUTOTUNE_STEPS, false},
	{"autotune", "bayes_opt_max_samples", HL_K_AUTOTUNE_MAX, false},
	{"autotune", "gaussian_process_noise", HL_K_AUTOTUNE_NOISE, false},
	{"timeline", "filename", HL_K_TIMELINE_FILENAME, false},
	{"timeline", "mark_cycles", HL_K_TIMELINE_MARK_CYCLES, false},
	{"stall_check", "enabled", HL_K_STALL_CHECK, false},
	{"stall_check", "warning_time_seconds", HL_K_STALL_WARNING_S, false},
	{"stall_check", "shutdown_time_seconds", HL_K_STALL_SHUTDOWN_S, false},
	{"library_options", "mpi_threads_disable", HL_K_MPI_THREADS_DISABLE,
	 false},
	{"library_options", "num_nccl_streams", HL_K_NUM_NCCL_STREAMS, false},
	{"library_options", "thread_affinity", HL_K_THREAD_AFFINITY, false},
	{"library_options", "gloo_timeout_seconds", HL_K_GLOO_TIMEOUT, false},
	/* oneCCL's background thread: no oneCCL here. */
	{"library_options", "ccl_bgt_affinity", HL_K_COUNT, false},
	{"logging", "level", HL_K_LOG_LEVEL, false},
	{"logging", "with_timestamp", HL_K_LOG_TIMESTAMP, false},
	/* horovodrun's --log-hide-timestamp, as a key. */
	{"logging", "hide_timestamp", HL_K_LOG_TIMESTAMP, true},
};

struct yctx {
	const char *path;
	struct hl_opts *o;
	char **cause;
	yaml_parser_t p;
	yaml_event_t ev;
	bool have; /* ev holds an event to delete */
};

static int next(struct yctx *y)
{
	if (y->have)
		yaml_event_delete(&y->ev);
	y->have = false;
	if (!yaml_parser_parse(&y->p, &y->ev))
		return hl_fail(y->cause, HL_EINVAL, "%s:%zu: YAML: %s", y->path,
			       y->p.problem_mark.line + 1,
			       y->p.problem ? y->p.problem : "malformed");
	y->have = true;
	return HL_OK;
}

static size_t line(const struct yctx *y)
{
	return y->ev.start_mark.line + 1;
}

static int expect(struct yctx *y, yaml_event_type_t t, const char *what)
{
	int rc = next(y);

	if (rc == HL_OK && y->ev.type != t)
		rc = hl_fail(y->cause, HL_EINVAL, "%s:%zu: want %s", y->path,
			     line(y), what);
	return rc;
}

static const char *scalar(const struct yctx *y)
{
	return (const char *)y->ev.data.scalar.value;
}

/* The current event, a mapping's key (what: in the error), copied into
 * *out; NULL on a failure. */
static int key_text(struct yctx *y, const char *what, char **out)
{
	*out = NULL;
	if (y->ev.type != YAML_SCALAR_EVENT)
		return hl_fail(y->cause, HL_EINVAL, "%s:%zu: want %s", y->path,
			       line(y), what);
	*out = hl_strdup(scalar(y));
	return *out ? HL_OK : hl_fail(y->cause, HL_ENOMEM, "out of memory");
}

/* Key k set to text, named in messages as the file writes it at line at
 * (label: the key's path): 'library_options.num_nccl_streams: 2
 * (job.yaml:4)'. */
static int set_said(struct yctx *y, enum hl_key k, const char *label,
		    const char *text, const char *where, size_t at)
{
	bool was = y->o->v[k].set;
	int rc = hl_opts_set(y->o, k, text, where, NULL, y->cause);
	char *said;

	if (rc != HL_OK || was)
		return rc;
	said = hl_asprintf("%s: %s (%s:%zu)", label, scalar(y), y->path, at);
	rc = said != NULL ? hl_opts_said_as(y->o, k, said, NULL) : HL_ENOMEM;
	free(said);
	return rc == HL_OK ? HL_OK : hl_fail(y->cause, rc, "out of memory");
}

/* One key of section: its value is the current scalar. */
static int set_one(struct yctx *y, const char *section, const char *name,
		   size_t at)
{
	char where[512], label[128];
	struct hl_suggest s;
	bool b = false;
	size_t i;

	snprintf(where, sizeof(where), "%s:%zu: ", y->path, at);
	snprintf(label, sizeof(label), "%s.%s", section, name);
	for (i = 0; i < sizeof(ykeys) / sizeof(*ykeys); i++) {
		const struct ykey *k = &ykeys[i];

		if (strcmp(k->section, section) != 0 ||
		    strcmp(k->name, name) != 0)
			continue;
		if (k->key == HL_K_COUNT)
			return HL_OK;
		if (k->invert) {
			if (!hl_parse_bool(scalar(y), &b))
				return hl_fail(
					y->cause, HL_EINVAL,
					"%sbad value '%s' for '%s' in %s (want true or false)",
					where, scalar(y), name, section);
			return set_said(y, k->key, label, b ? "false" : "true",
					where, at);
		}
		return set_said(y, k->key, label, scalar(y), where, at);
	}
	hl_suggest_init(&s, name);
	for (i = 0; i < sizeof(ykeys) / sizeof(*ykeys); i++)
		if (strcmp(ykeys[i].section, section) == 0)
			hl_suggest_try(&s, ykeys[i].name);
	if (s.best != NULL)
		return hl_fail(
			y->cause, HL_EINVAL,
			"%sunknown key '%s' in %s (horovodrun's config file; did you mean '%s'?)",
			where, name, section, s.best);
	return hl_fail(y->cause, HL_EINVAL,
		       "%sunknown key '%s' in %s (horovodrun's config file)",
		       where, name, section);
}

/* A section's mapping of scalars. */
static int section(struct yctx *y, const char *name)
{
	int rc = expect(y, YAML_MAPPING_START_EVENT, "a mapping of keys");

	while (rc == HL_OK && (rc = next(y)) == HL_OK &&
	       y->ev.type != YAML_MAPPING_END_EVENT) {
		char *key = NULL;
		size_t at = line(y);

		rc = key_text(y, "a key", &key);
		if (key == NULL)
			return rc; /* key_text's failure */
		rc = next(y);
		if (rc == HL_OK && y->ev.type != YAML_SCALAR_EVENT)
			rc = hl_fail(
				y->cause, HL_EINVAL,
				"%s:%zu: '%s' in %s: want a value, not a list or mapping",
				y->path, line(y), key, name);
		if (rc == HL_OK)
			rc = set_one(y, name, key, at);
		free(key);
	}
	return rc;
}

static int controller(struct yctx *y)
{
	char where[512];
	int rc = expect(y, YAML_SCALAR_EVENT, "gloo or mpi");

	snprintf(where, sizeof(where), "%s:%zu: ", y->path, line(y));
	if (rc != HL_OK)
		return rc;
	if (strcasecmp(scalar(y), "gloo") == 0)
		return set_said(y, HL_K_MPI, "controller", "false", where,
				line(y));
	if (strcasecmp(scalar(y), "mpi") == 0)
		return set_said(y, HL_K_MPI, "controller", "true", where,
				line(y));
	return hl_fail(y->cause, HL_EINVAL,
		       "%sbad controller '%s' (want gloo or mpi)", where,
		       scalar(y));
}

static int document(struct yctx *y)
{
	int rc = next(y);

	if (rc != HL_OK || y->ev.type == YAML_STREAM_END_EVENT)
		return rc; /* an empty file sets nothing */
	if (y->ev.type != YAML_DOCUMENT_START_EVENT)
		return hl_fail(y->cause, HL_EINVAL, "%s:%zu: want a document",
			       y->path, line(y));
	rc = next(y);
	if (rc == HL_OK && y->ev.type == YAML_DOCUMENT_END_EVENT)
		return HL_OK;
	if (rc == HL_OK && y->ev.type != YAML_MAPPING_START_EVENT)
		return hl_fail(y->cause, HL_EINVAL,
			       "%s:%zu: want a mapping of sections", y->path,
			       line(y));
	while (rc == HL_OK && (rc = next(y)) == HL_OK &&
	       y->ev.type != YAML_MAPPING_END_EVENT) {
		char *name = NULL;
		size_t at = line(y);

		rc = key_text(y, "a section name", &name);
		if (name == NULL)
			return rc; /* key_text's failure */
		if (strcmp(name, "controller") == 0)
			rc = controller(y);
		else if (strcmp(name, "params") == 0 ||
			 strcmp(name, "autotune") == 0 ||
			 strcmp(name, "timeline") == 0 ||
			 strcmp(name, "stall_check") == 0 ||
			 strcmp(name, "library_options") == 0 ||
			 strcmp(name, "logging") == 0)
			rc = section(y, name);
		else
			rc = hl_fail(
				y->cause, HL_EINVAL,
				"%s:%zu: unknown section '%s' (horovodrun's: controller, params, autotune, timeline, stall_check, library_options, logging)",
				y->path, at, name);
		free(name);
	}
	return rc;
}

int hl_config_load_yaml(const char *path, struct hl_opts *o, char **cause)
{
	struct yctx y;
	FILE *f = hl_fopen_text(path);
	int rc;

	if (f == NULL)
		return hl_fail(cause, HL_EINVAL,
			       "cannot read config file '%s': %s", path,
			       strerror(errno));
	memset(&y, 0, sizeof(y));
	y.path = path;
	y.o = o;
	y.cause = cause;
	if (!yaml_parser_initialize(&y.p)) {
		fclose(f);
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	}
	yaml_parser_set_input_file(&y.p, f);
	rc = expect(&y, YAML_STREAM_START_EVENT, "a YAML stream");
	if (rc == HL_OK)
		rc = document(&y);
	if (y.have)
		yaml_event_delete(&y.ev);
	yaml_parser_delete(&y.p);
	fclose(f);
	return rc;
}
