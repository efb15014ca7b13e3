/* fuzz.h: what the libFuzzer targets of tests/fuzz share. Each target
 * feeds its input to the project's own parser or decoder, the one hvdrun
 * or libhvd runs, and frees what it returns: AddressSanitizer and
 * UndefinedBehaviorSanitizer (and LeakSanitizer) judge the rest. */
#ifndef HVD_FUZZ_H
#define HVD_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as a NUL-terminated string (malloc'ed; NULL for want of
 * memory). A NUL inside it ends the string early, as it would in argv or
 * the environment. */
char *fuzz_string(const uint8_t *data, size_t size);
/* A path whose file holds exactly the input (one memfd, rewritten each
 * time): for parsers that read files. */
const char *fuzz_file(const uint8_t *data, size_t size);

#endif
