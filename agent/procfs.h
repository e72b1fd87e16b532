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

/* Field 22 (starttime, clock ticks after boot) of a /proc/PID/stat text.
 * The comm field (2) may hold spaces and parentheses: fields are counted
 * after its last ')'. -EINVAL on anything else. */
int procfs_parse_stat_starttime(const char *stat, uint64_t *ret_ticks);

/* How long ago (microseconds, CLOCK_BOOTTIME) this process started, from
 * PROCFS/self/stat: exec, the dynamic or static start-up and main so far. */
int procfs_self_age_usec(const char *procfs, uint64_t *ret);
