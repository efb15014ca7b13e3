/* fake_cudart.c: libcudart.so for the probe of `hvdrun check` in tests
 * without a GPU: the calls the probe makes (lib/check/gpucheck.c), as a
 * runtime with FAKE_CUDA_DEVICES devices (default 2) that can access
 * each other would answer them. The probe loads "libcudart.so" first; a
 * program linked against CUDA's runtime (libcudart.so.13) never loads
 * this one. */
#include <stdlib.h>

int cudaRuntimeGetVersion(int *v);
int cudaDriverGetVersion(int *v);
int cudaGetDeviceCount(int *n);
const char *cudaGetErrorString(int e);
int cudaDeviceCanAccessPeer(int *can, int a, int b);

int cudaRuntimeGetVersion(int *v)
{
	*v = 13000;
	return 0;
}

int cudaDriverGetVersion(int *v)
{
	*v = 13000;
	return 0;
}

int cudaGetDeviceCount(int *n)
{
	const char *s = getenv("FAKE_CUDA_DEVICES");

	*n = s ? atoi(s) : 2;
	return 0;
}

const char *cudaGetErrorString(int e)
{
	return e ? "fake error" : "no error";
}

int cudaDeviceCanAccessPeer(int *can, int a, int b)
{
	*can = a != b;
	return 0;
}
