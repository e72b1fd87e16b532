/* The /proc files kiln reads, parsed in one place. procfs is the /proc
 * directory to read (kiln_paths.procfs, or a recorded tree's proc/). Pure:
 * returns 0 or -errno (-ENOENT when the file is not there). */
#pragma once
#include <stdbool.h>
#include <stdint.h>

/* /proc/meminfo; a field the file does not list stays 0. */
struct procfs_meminfo {
        uint64_t total;         /* MemTotal, bytes */
        uint64_t available;     /* MemAvailable, bytes */
};
int procfs_read_meminfo(const char *procfs, struct procfs_meminfo *ret);

/* /proc/cpuinfo: processors counted, the first "model name" and the first
 * "flags" line. ret->model is allocated (NULL if none): free it. */
struct procfs_cpuinfo {
        unsigned cpus;
        char *model;
        bool aes, vaes, avx2;
};
int procfs_read_cpuinfo(const char *procfs, struct procfs_cpuinfo *ret);

/* /proc/misc lists NAME (e.g. "device-mapper" once dm-mod is loaded):
 * 1 yes, 0 no, -errno if it cannot be read. */
int procfs_misc_has(const char *procfs, const char *name);
