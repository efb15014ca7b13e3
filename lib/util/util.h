/* util.h: small helpers shared by the launcher's modules: result codes, the
 * one-line "cause" messages every parser fills, strict number parsing and a
 * growable string vector. */
#ifndef HL_UTIL_H
#define HL_UTIL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Results of lib/ actions: 0 or one of these. cmd/ maps them to exit codes. */
enum hl_result {
	HL_OK = 0,
	HL_EINVAL = -1,	 /* bad user input: options, host lists, files */
	HL_ENOMEM = -2,	 /* out of memory */
	HL_ESYS = -3,	 /* a system call failed */
	HL_ENOENT = -4,	 /* the command to run was not found */
	HL_ENOEXEC = -5, /* the command exists but cannot be executed */
	HL_ESTART = -6,	 /* a worker or host could not be started */
	HL_EPROTO = -7,	 /* a peer sent what its protocol does not allow */
	HL_EAGAIN = -8,	 /* nothing to read yet; try again later */
};

/* Replace *cause (if cause is not NULL) with a formatted one-line message.
 * Returns code, so that callers can write `return hl_fail(cause, ...)`. */
int hl_fail(char **cause, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Parse all of s as a base-10 integer in [min, max]. */
bool hl_parse_long(const char *s, long min, long max, long *out);
/* Parse all of s as a finite decimal number in [min, max]. */
bool hl_parse_double(const char *s, double min, double max, double *out);
/* true/false, yes/no, on/off, 1/0 (any case). */
bool hl_parse_bool(const char *s, bool *out);
/* A valid environment variable name: [A-Za-z_][A-Za-z0-9_]*. */
bool hl_env_name_valid(const char *s, size_t len);

/* The name nearest a mistyped one, for "did you mean ...?": feed it every
 * candidate; best is the nearest within a typo's reach (one letter wrong,
 * missing, added or two swapped; two from 7 letters on; none for a word of
 * 1 or 2), else NULL. */
struct hl_suggest {
	const char *word, *best;
	size_t dist;
};
void hl_suggest_init(struct hl_suggest *s, const char *word);
void hl_suggest_try(struct hl_suggest *s, const char *cand);

/* A NULL-terminated vector of owned strings (argv/envp shaped). */
struct hl_strvec {
	char **v;
	size_t n;
	size_t cap;
};

void hl_strvec_init(struct hl_strvec *sv);
void hl_strvec_close(struct hl_strvec *sv);
int hl_strvec_push(struct hl_strvec *sv, const char *s);
int hl_strvec_push_owned(struct hl_strvec *sv, char *s);
/* Push a copy of s unless sv has it already. */
int hl_strvec_push_once(struct hl_strvec *sv, const char *s);
int hl_strvec_pushf(struct hl_strvec *sv, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The strings of sv, separated by sep; NULL when out of memory. */
char *hl_strvec_join(const struct hl_strvec *sv, const char *sep);
/* The value of NAME in a vector of NAME<sep>VALUE entries, NULL if none;
 * hl_strvec_value: NAME=VALUE (an environment). */
const char *hl_strvec_field(const struct hl_strvec *sv, const char *name,
			    char sep);
const char *hl_strvec_value(const struct hl_strvec *sv, const char *name);

char *hl_vasprintf(const char *fmt, va_list ap)
	__attribute__((format(printf, 1, 0)));
char *hl_strdup(const char *s);
/* Environment variable name's value when it is set and not empty, else
 * NULL (an empty SLURM_JOB_ID or PBS_NODEFILE says nothing). */
const char *hl_env(const char *name);
char *hl_strndup(const char *s, size_t n);
char *hl_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* s as one word of a POSIX shell's command line, in single quotes (a
 * quote in it as '\''); NULL when out of memory. */
char *hl_shell_quote(const char *s);
/* The same, but s as it is where the shell would read it as one word
 * unchanged (letters, digits and _@%+=:,./-), for a line to copy. */
char *hl_shell_word(const char *s);

/* fopen(path, "r") of a file to read as text: NULL with errno EISDIR for a
 * directory, which fopen opens and only a read refuses. */
FILE *hl_fopen_text(const char *path);

/* path as seen from the folder base (malloc'ed, NULL when out of memory):
 * itself where it is absolute, starts with ~ (its reader's) or base is
 * NULL, else base/path. */
char *hl_path_from(const char *base, const char *path);
/* Why a process could not start in the folder path (strerror's words, or
 * "not a folder"); NULL where it could. */
const char *hl_folder_refused(const char *path);

/* Write all of buf to fd, retrying on EINTR and short writes. */
int hl_write_all(int fd, const void *buf, size_t len);

/* Elastic: TCP socket fd finds its peer gone silent (its link down, the
 * machine off): keepalive probes after idle_s seconds without traffic,
 * one a second, and the connection fails with ETIMEDOUT once nothing came
 * back for lost_ms with a probe or data unanswered (TCP_USER_TIMEOUT
 * decides for keepalive too, tcp(7)). Not a socket: nothing happens. */
void hl_watch_silence(int fd, int idle_s, unsigned int lost_ms);

/* pthread_create with every signal blocked in the new thread: signals
 * are for the main thread's signalfd, never a helper's. */
int hl_thread_create(pthread_t *t, void *(*fn)(void *), void *arg);

/* pthread_cond_timedwait for at most ms milliseconds from now. */
void hl_cond_wait_ms(pthread_cond_t *cond, pthread_mutex_t *lock, int ms);

/* Monotonic clock in milliseconds. */
long long hl_now_ms(void);
/* The same clock in microseconds. */
long long hl_now_us(void);
/* The median of v's n values (n > 0); sorts v. */
double hl_median(double *v, size_t n);

#endif
