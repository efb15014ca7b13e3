/* hvd.h: libhvd, the data-parallel core linked into every worker. The only
 * public header. Every action returns 0 or a negative HVD_E* code;
 * hvd_strerror() names it. */
#ifndef HVD_H
#define HVD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define HVD_EXPORT __attribute__((visibility("default")))
#else
#define HVD_EXPORT
#endif

#define HVD_VERSION_MAJOR 0
#define HVD_VERSION_MINOR 1
#define HVD_VERSION_PATCH 0

enum hvd_error {
	HVD_OK = 0,
	HVD_EINVAL = -1,    /* a bad argument or environment value */
	HVD_ENOMEM = -2,    /* out of memory */
	HVD_ENOTINIT = -3,  /* hvd_init() has not succeeded */
	HVD_EALREADY = -4,  /* hvd_init() was already called */
	HVD_ESYS = -5,	    /* a system call failed */
	HVD_ECONN = -6,	    /* a peer closed its connection or died */
	HVD_ETIMEDOUT = -7, /* a peer did not answer in time */
	HVD_EPROTO = -8,    /* a peer sent something unexpected */
};

/* Element types and reduction operations of the collectives. float16 and
 * bfloat16 are reduced in float32. */
enum hvd_dtype {
	HVD_UINT8,
	HVD_INT8,
	HVD_INT32,
	HVD_INT64,
	HVD_FLOAT16,
	HVD_BFLOAT16,
	HVD_FLOAT32,
	HVD_FLOAT64
};

enum hvd_op { HVD_SUM, HVD_AVERAGE, HVD_MIN, HVD_MAX, HVD_PRODUCT };

/* Read the rank environment set by hvdrun and start libhvd. Without it,
 * the process runs as the only rank of a job of size 1. */
HVD_EXPORT int hvd_init(void);
HVD_EXPORT void hvd_shutdown(void);
HVD_EXPORT int hvd_initialized(void);

/* Ranks; -1 before hvd_init(). */
HVD_EXPORT int hvd_rank(void);
HVD_EXPORT int hvd_size(void);
HVD_EXPORT int hvd_local_rank(void);
HVD_EXPORT int hvd_local_size(void);
HVD_EXPORT int hvd_cross_rank(void);
HVD_EXPORT int hvd_cross_size(void);

HVD_EXPORT const char *hvd_strerror(int err);
HVD_EXPORT const char *hvd_version(void);

#ifdef __cplusplus
}
#endif

#endif
