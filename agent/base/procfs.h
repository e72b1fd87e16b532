/* The /proc files kiln reads, parsed in one place. procfs is the /proc
 * directory to read (kiln_paths.procfs, or a recorded tree's proc/). Pure:
 * returns 0 or -errno (-ENOENT when the file is not there). Each reader has
 * a parser of the file's text beside it (NUL-terminated, split in place),
 * which tests and tests/fuzz/fuzz-procfs.c call directly. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* /proc/meminfo; a field the file does not list stays 0. */
struct procfs_meminfo {
        uint64_t total;         /* MemTotal, bytes */
        uint64_t available;     /* MemAvailable, bytes */
};
int procfs_read_meminfo(const char *procfs, struct procfs_meminfo *ret);
int procfs_parse_meminfo(char *text, struct procfs_meminfo *ret);

/* /proc/cpuinfo: processors counted, the first "model name" and the first
 * "flags" line. ret->model is allocated (NULL if none): free it. */
struct procfs_cpuinfo {
        unsigned cpus;
        char *model;
        bool aes, vaes, avx2;
};
int procfs_read_cpuinfo(const char *procfs, struct procfs_cpuinfo *ret);
int procfs_parse_cpuinfo(char *text, struct procfs_cpuinfo *ret);

/* /proc/misc lists NAME (e.g. "device-mapper" once dm-mod is loaded):
 * 1 yes, 0 no, -errno if it cannot be read. */
int procfs_misc_has(const char *procfs, const char *name);
bool procfs_misc_lists(const char *text, const char *name);

/* "MAJOR:MINOR" (sysfs dev files, mountinfo's third field). */
int procfs_parse_devnum(const char *s, unsigned *ret_major, unsigned *ret_minor);

/* /proc/self/mountinfo: the mounts of block devices (major != 0), with the
 * mount point unescaped (\040 is a space). Free with procfs_mounts_free(). */
struct procfs_mount {
        unsigned major, minor;
        char *where;
};
int procfs_parse_mountinfo(char *text, struct procfs_mount **ret, size_t *ret_n);
void procfs_mounts_free(struct procfs_mount *m, size_t n);

/* Field 22 (starttime, clock ticks after boot) of a /proc/PID/stat text.
 * The comm field (2) may hold spaces and parentheses: fields are counted
 * after its last ')'. -EINVAL on anything else. */
int procfs_parse_stat_starttime(const char *stat, uint64_t *ret_ticks);

/* How long ago (microseconds, CLOCK_BOOTTIME) this process started, from
 * PROCFS/self/stat: exec, the dynamic or static start-up and main so far. */
int procfs_self_age_usec(const char *procfs, uint64_t *ret);
