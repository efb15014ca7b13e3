/* util.c: result messages, strict parsing of numbers and booleans, string
 * vectors. Nothing here prints: callers decide what to do with a cause. */
#include "util/util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

char *hl_vasprintf(const char *fmt, va_list ap)
{
	char *s = NULL;

	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	return s;
}

int hl_fail(char **cause, int code, const char *fmt, ...)
{
	va_list ap;

	if (cause == NULL)
		return code;
	free(*cause);
	va_start(ap, fmt);
	*cause = hl_vasprintf(fmt, ap);
	va_end(ap);
	return code;
}

bool hl_parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	if (s == NULL || *s == '\0' || isspace((unsigned char)*s))
		return false;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return false;
	*out = v;
	return true;
}

bool hl_parse_double(const char *s, double min, double max, double *out)
{
	char *end;
	double v;

	if (s == NULL || *s == '\0' || isspace((unsigned char)*s))
		return false;
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || *end != '\0' || !isfinite(v) || v < min || v > max)
		return false;
	*out = v;
	return true;
}

bool hl_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = {"1", "true", "yes", "on"};
	static const char *const no[] = {"0", "false", "no", "off"};
	size_t i;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return true;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return true;
		}
	}
	return false;
}

bool hl_env_name_valid(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (i = 1; i < len; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
			return false;
	return true;
}

/* The optimal string alignment distance of a and b (each at most
 * SUGGEST_MAX bytes; longer: SIZE_MAX). */
#define SUGGEST_MAX 64
static size_t typo_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j;
	unsigned char d[SUGGEST_MAX + 1][SUGGEST_MAX + 1];

	if (la > SUGGEST_MAX || lb > SUGGEST_MAX)
		return SIZE_MAX;
	for (i = 0; i <= la; i++)
		d[i][0] = (unsigned char)i;
	for (j = 0; j <= lb; j++)
		d[0][j] = (unsigned char)j;
	for (i = 1; i <= la; i++)
		for (j = 1; j <= lb; j++) {
			size_t sub = d[i - 1][j - 1] +
				     (size_t)(a[i - 1] != b[j - 1]);
			size_t del = d[i - 1][j] + 1u, ins = d[i][j - 1] + 1u;
			size_t m = sub < del ? sub : del;

			m = m < ins ? m : ins;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1u < m)
				m = d[i - 2][j - 2] + 1u;
			d[i][j] = (unsigned char)m;
		}
	return d[la][lb];
}

void hl_suggest_init(struct hl_suggest *s, const char *word)
{
	s->word = word;
	s->best = NULL;
	/* Within reach: one typo, two from 7 letters on; none below 3 (of
	 * "-q", any one-letter name is a typo). */
	s->dist = strlen(word) < 3 ? 0 : (strlen(word) >= 7 ? 2 : 1) + 1;
}

void hl_suggest_try(struct hl_suggest *s, const char *cand)
{
	size_t d = typo_distance(s->word, cand);

	if (d > 0 && d < s->dist) {
		s->dist = d;
		s->best = cand;
	}
}

void hl_strvec_init(struct hl_strvec *sv)
{
	sv->v = NULL;
	sv->n = 0;
	sv->cap = 0;
}

void hl_strvec_close(struct hl_strvec *sv)
{
	size_t i;

	for (i = 0; i < sv->n; i++)
		free(sv->v[i]);
	free(sv->v);
	hl_strvec_init(sv);
}

int hl_strvec_push_owned(struct hl_strvec *sv, char *s)
{
	if (s == NULL)
		return HL_ENOMEM;
	if (sv->n + 2 > sv->cap) {
		size_t cap = sv->cap ? sv->cap * 2 : 16;
		char **v = realloc(sv->v, cap * sizeof(*v));

		if (v == NULL) {
			free(s);
			return HL_ENOMEM;
		}
		sv->v = v;
		sv->cap = cap;
	}
	sv->v[sv->n++] = s;
	sv->v[sv->n] = NULL;
	return HL_OK;
}

int hl_strvec_push(struct hl_strvec *sv, const char *s)
{
	return hl_strvec_push_owned(sv, hl_strdup(s));
}

int hl_strvec_push_once(struct hl_strvec *sv, const char *s)
{
	size_t i;

	for (i = 0; i < sv->n; i++)
		if (strcmp(sv->v[i], s) == 0)
			return HL_OK;
	return hl_strvec_push(sv, s);
}

int hl_strvec_pushf(struct hl_strvec *sv, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = hl_vasprintf(fmt, ap);
	va_end(ap);
	return hl_strvec_push_owned(sv, s);
}

const char *hl_env(const char *name)
{
	const char *v = getenv(name);

	return v != NULL && *v != '\0' ? v : NULL;
}

char *hl_strdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

char *hl_strndup(const char *s, size_t n)
{
	return strndup(s, n);
}

FILE *hl_fopen_text(const char *path)
{
	FILE *f = fopen(path, "r");
	struct stat st;

	if (f != NULL && fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		fclose(f);
		errno = EISDIR;
		return NULL;
	}
	return f;
}

char *hl_path_from(const char *base, const char *path)
{
	if (base == NULL || path[0] == '/' || path[0] == '~')
		return hl_strdup(path);
	return hl_asprintf("%s/%s", base, path);
}

const char *hl_folder_refused(const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0 ||
	    (S_ISDIR(st.st_mode) && access(path, X_OK) != 0))
		return strerror(errno);
	return S_ISDIR(st.st_mode) ? NULL : "not a folder";
}

char *hl_shell_quote(const char *s)
{
	size_t n = 3, i;
	char *q, *p;

	for (i = 0; s[i]; i++)
		n += s[i] == '\'' ? 4 : 1;
	q = malloc(n);
	if (q == NULL)
		return NULL;
	p = q;
	*p++ = '\'';
	for (i = 0; s[i]; i++) {
		if (s[i] == '\'') {
			memcpy(p, "'\\''", 4);
			p += 4;
		} else {
			*p++ = s[i];
		}
	}
	*p++ = '\'';
	*p = '\0';
	return q;
}

char *hl_shell_word(const char *s)
{
	static const char plain[] = "abcdefghijklmnopqrstuvwxyz"
				    "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				    "0123456789_@%+=:,./-";

	if (s[0] != '\0' && s[strspn(s, plain)] == '\0')
		return hl_strdup(s);
	return hl_shell_quote(s);
}

char *hl_asprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = hl_vasprintf(fmt, ap);
	va_end(ap);
	return s;
}

int hl_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t w = write(fd, p, len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return HL_ESYS;
		}
		p += w;
		len -= (size_t)w;
	}
	return HL_OK;
}

void hl_watch_silence(int fd, int idle_s, unsigned int lost_ms)
{
	int on = 1, every = 1;

	(void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_s,
			 sizeof(idle_s));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &every, sizeof(every));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &lost_ms,
			 sizeof(lost_ms));
}

int hl_thread_create(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int rc;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc == 0 ? HL_OK : HL_ESYS;
}

long long hl_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

long long hl_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double hl_median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void hl_cond_wait_ms(pthread_cond_t *cond, pthread_mutex_t *lock, int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(cond, lock, &ts);
}

char *hl_strvec_join(const struct hl_strvec *sv, const char *sep)
{
	size_t i, len = 1, at = 0, ns = strlen(sep);
	char *s;

	for (i = 0; i < sv->n; i++)
		len += strlen(sv->v[i]) + ns;
	s = malloc(len);
	for (i = 0; s != NULL && i < sv->n; i++) {
		size_t n = strlen(sv->v[i]);

		if (i > 0) {
			memcpy(s + at, sep, ns);
			at += ns;
		}
		memcpy(s + at, sv->v[i], n);
		at += n;
	}
	if (s != NULL)
		s[at] = '\0';
	return s;
}

const char *hl_strvec_field(const struct hl_strvec *sv, const char *name,
			    char sep)
{
	size_t i, n = strlen(name);

	for (i = 0; i < sv->n; i++)
		if (strncmp(sv->v[i], name, n) == 0 && sv->v[i][n] == sep)
			return sv->v[i] + n + 1;
	return NULL;
}

const char *hl_strvec_value(const struct hl_strvec *sv, const char *name)
{
	return hl_strvec_field(sv, name, '=');
}
