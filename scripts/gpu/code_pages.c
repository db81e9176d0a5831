/* Preloaded into a gpumon that scripts/gpu/touched_pages.sh measures: takes every right from
 * the executable's code pages before its code runs, and gives a page back its rights the first
 * time the program uses it (a SIGSEGV on it). Afterwards the executable's code mappings in
 * /proc/PID/maps that are r-x again are exactly the pages that ran; those still --- never did.
 * (Residency cannot tell: the kernel maps code 64 KiB at a time around each page used.) */
#define _GNU_SOURCE
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static uintptr_t code_start, code_end;
static struct sigaction previous;

static void give_back(int sig, siginfo_t *info, void *context) {
    uintptr_t at = (uintptr_t)info->si_addr;
    if (at >= code_start && at < code_end) {
        uintptr_t page = at & ~(uintptr_t)4095;
        if (mprotect((void *)page, 4096, PROT_READ | PROT_EXEC) == 0)
            return;
    }
    /* Not ours: as if this handler had never been installed. */
    sigaction(SIGSEGV, &previous, NULL);
    (void)context;
    raise(sig);
}

__attribute__((constructor)) static void take_rights(void) {
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return;
    exe[n] = '\0';
    FILE *maps = fopen("/proc/self/maps", "r");
    if (!maps)
        return;
    char line[PATH_MAX + 128];
    while (fgets(line, sizeof line, maps)) {
        unsigned long start, end;
        char perms[5], path[PATH_MAX];
        if (sscanf(line, "%lx-%lx %4s %*s %*s %*s %4095s", &start, &end, perms, path) == 4 &&
            strcmp(path, exe) == 0 && perms[2] == 'x') {
            code_start = start;
            code_end = end;
        }
    }
    fclose(maps);
    if (!code_start)
        return;
    struct sigaction trap;
    memset(&trap, 0, sizeof trap);
    trap.sa_sigaction = give_back;
    trap.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&trap.sa_mask);
    sigaction(SIGSEGV, &trap, &previous);
    mprotect((void *)code_start, code_end - code_start, PROT_NONE);
}
