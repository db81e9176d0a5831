/* A stand-in for libcuda.so.1 with the five driver calls the gpumon probe makes.
   FAKE_CUDA_COUNT: number of devices (default 2); FAKE_CUDA_ACTIVE: digits of the devices
   whose primary context is active. Calls before cuInit fail as the real driver's do (3). */
#include <stdlib.h>
#include <string.h>

static int initialised;

static int count(void) {
    const char *s = getenv("FAKE_CUDA_COUNT");
    return s ? atoi(s) : 2;
}

int cuInit(unsigned flags) { (void)flags; initialised = 1; return 0; }

int cuDeviceGetCount(int *n) {
    if (!initialised) return 3;
    *n = count();
    return 0;
}

int cuDeviceGet(int *dev, int ordinal) {
    if (!initialised) return 3;
    if (ordinal < 0 || ordinal >= count()) return 101;
    *dev = ordinal;
    return 0;
}

int cuDevicePrimaryCtxGetState(int dev, unsigned *flags, int *active) {
    const char *s = getenv("FAKE_CUDA_ACTIVE");
    if (!initialised) return 3;
    *flags = 0;
    *active = s != NULL && strchr(s, '0' + dev) != NULL;
    return 0;
}

int cuDeviceGetUuid(unsigned char *uuid, int dev) {
    if (!initialised) return 3;
    for (int i = 0; i < 16; i++) uuid[i] = (unsigned char)(dev * 16 + i);
    return 0;
}
