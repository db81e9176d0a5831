/* A stand-in libnvidia-ml.so for profiling gpumon's live sources where there is no GPU
 * (scripts/hot_text.py: GPUMON_NVML_LIB names it). One "GPU" with the processes whose PIDs
 * FAKE_NVML_PIDS lists (comma-separated), 1 GiB each. Only the calls a tick makes are here;
 * every other symbol is missing, which gpumon reads as "not supported" (n/a on screen).
 * Not a test double: nothing checks what it returns. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef void *nvmlDevice_t;
enum { OK = 0, INVALID = 2, INSUFFICIENT_SIZE = 7 };

typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct { unsigned int version; unsigned long long total, reserved, free, used; } nvmlMemory_v2_t;
typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;
typedef struct {
  unsigned int pid;
  unsigned long long timeStamp;
  unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;

static int the_gpu;
static const unsigned long long GIB = 1ULL << 30;

static unsigned int pids(unsigned int *out, unsigned int cap) {
  const char *list = getenv("FAKE_NVML_PIDS");
  unsigned int n = 0;
  while (list && *list && n < 64) {
    char *end;
    unsigned long pid = strtoul(list, &end, 10);
    if (end == list) break;
    if (n < cap) out[n] = (unsigned int)pid;
    n++;
    list = *end == ',' ? end + 1 : end;
  }
  return n;
}

static nvmlReturn_t copy(char *buf, unsigned int len, const char *s) {
  if (!buf || strlen(s) + 1 > len) return INSUFFICIENT_SIZE;
  strcpy(buf, s);
  return OK;
}

nvmlReturn_t nvmlInit_v2(void) { return OK; }
nvmlReturn_t nvmlInitWithFlags(unsigned int flags) { (void)flags; return OK; }
nvmlReturn_t nvmlShutdown(void) { return OK; }
const char *nvmlErrorString(nvmlReturn_t r) { return r == OK ? "Success" : "Not Supported"; }
nvmlReturn_t nvmlSystemGetDriverVersion(char *b, unsigned int n) { return copy(b, n, "580.159.04"); }
nvmlReturn_t nvmlSystemGetNVMLVersion(char *b, unsigned int n) { return copy(b, n, "13.580.159.04"); }
nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v) { *v = 13000; return OK; }
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) { *v = 13000; return OK; }
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n) { *n = 1; return OK; }
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d) {
  if (i != 0) return INVALID;
  *d = &the_gpu;
  return OK;
}
nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t d, unsigned int *i) { (void)d; *i = 0; return OK; }
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *b, unsigned int n) { (void)d; return copy(b, n, "Fake GPU"); }
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *b, unsigned int n) {
  (void)d;
  return copy(b, n, "GPU-00000000-0000-0000-0000-000000000000");
}
static unsigned long long used(void) {
  unsigned int p[64];
  unsigned int n = pids(p, 64);
  return (n > 64 ? 64 : n) * GIB + 512ULL * 1024 * 1024;
}
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m) {
  (void)d;
  m->total = 80 * GIB;
  m->used = used();
  m->free = m->total - m->used;
  return OK;
}
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m) {
  (void)d;
  m->total = 80 * GIB;
  m->reserved = 480ULL * 1024 * 1024;
  m->used = used();
  m->free = m->total - m->reserved - m->used;
  return OK;
}
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u) {
  (void)d;
  u->gpu = 50;
  u->memory = 20;
  return OK;
}
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int *t) {
  (void)d; (void)sensor;
  *t = 40;
  return OK;
}
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw) { (void)d; *mw = 150000; return OK; }
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int *cur, unsigned int *pending) {
  (void)d;
  *cur = *pending = 0;
  return OK;
}
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *count,
                                                     nvmlProcessInfo_t *infos) {
  unsigned int p[64];
  unsigned int n = pids(p, 64);
  (void)d;
  if (n > 64) n = 64;
  if (!infos || *count < n) {
    *count = n;
    return n ? INSUFFICIENT_SIZE : OK;
  }
  for (unsigned int i = 0; i < n; i++) {
    infos[i].pid = p[i];
    infos[i].usedGpuMemory = GIB;
    infos[i].gpuInstanceId = infos[i].computeInstanceId = 0xFFFFFFFF;
  }
  *count = n;
  return OK;
}
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t d, unsigned int *count,
                                                      nvmlProcessInfo_t *infos) {
  (void)d; (void)infos;
  *count = 0;
  return OK;
}
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t d, nvmlProcessUtilizationSample_t *s,
                                             unsigned int *count, unsigned long long since) {
  unsigned int p[64];
  unsigned int n = pids(p, 64);
  (void)d; (void)since;
  if (n > 64) n = 64;
  if (!s || *count < n) {
    *count = n;
    return INSUFFICIENT_SIZE;
  }
  for (unsigned int i = 0; i < n; i++) {
    s[i].pid = p[i];
    s[i].timeStamp = 0;
    s[i].smUtil = 50;
    s[i].memUtil = 20;
    s[i].encUtil = s[i].decUtil = 0;
  }
  *count = n;
  return OK;
}
