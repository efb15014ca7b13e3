/* util/error.c: what each of libhvd's error codes (hvd.h) means, for
 * hvd_strerror() and every message of the library; and each thread's
 * last error message (hvd_error_message). */
#include <stdarg.h>
#include <stdio.h>

#include "util/internal.h"

static __thread char last_error[512];

void hvd__set_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
}

HVD_EXPORT const char *hvd_error_message(void)
{
	return last_error;
}

HVD_EXPORT const char *hvd_strerror(int err)
{
	static const char *const names[] = {
		[0] = "success",
		[-HVD_EINVAL] = "invalid argument or environment value",
		[-HVD_ENOMEM] = "out of memory",
		[-HVD_ENOTINIT] = "libhvd is not initialised (call hvd_init)",
		[-HVD_EALREADY] = "libhvd is already initialised",
		[-HVD_ESYS] = "system call failed",
		[-HVD_ECONN] = "a peer closed its connection or died",
		[-HVD_ETIMEDOUT] = "a peer did not answer in time",
		[-HVD_EPROTO] = "a peer sent something unexpected",
		[-HVD_EMISMATCH] = "ranks disagree on a tensor",
		[-HVD_ESHUTDOWN] = "libhvd was shut down",
		[-HVD_ESTALL] = "some ranks never submitted the tensor",
		[-HVD_ENOTSUP] = "not available here",
		[-HVD_ERESET] = "a worker was lost: the job resets",
		[-HVD_ENOSET] = "no such process set",
		[-HVD_ENOTINSET] = "this rank is not in the process set",
	};

	if (err > 0 || -err >= (int)(sizeof(names) / sizeof(names[0])) ||
	    names[-err] == NULL)
		return "unknown error";
	return names[-err];
}
