#include "sigprobe.h"

#include <blkid/blkid.h>
#include <fcntl.h>

static inline void blkid_free_probep(blkid_probe *p) {
        if (*p)
                blkid_free_probe(*p);
}

/* Open a device read-only and attach a new probe to it; the caller keeps the
 * descriptor open for as long as the probe lives. */
static int probe_open(const char *path, int *ret_fd, blkid_probe *ret_pr) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        if (fd < 0)
                return -errno;
        __attribute__((cleanup(blkid_free_probep))) blkid_probe pr = blkid_new_probe();
        if (!pr)
                return -ENOMEM;
        if (blkid_probe_set_device(pr, fd, 0, 0) < 0)
                return errno > 0 ? -errno : -EIO;
        *ret_fd = TAKE_FD(fd);
        *ret_pr = TAKE_PTR(pr);
        return 0;
}

static int lookup(blkid_probe pr, const char *name, char **ret) {
        const char *v = NULL;
        *ret = NULL;
        if (blkid_probe_lookup_value(pr, name, &v, NULL) < 0 || !v || !*v)
                return 0;
        *ret = strdup(v);
        return *ret ? 0 : -ENOMEM;
}

static size_t lookup_len(blkid_probe pr, const char *name) {
        const char *v = NULL;
        size_t len = 0;
        if (blkid_probe_lookup_value(pr, name, &v, &len) < 0 || !v)
                return 0;
        return len;
}

static int lookup_u64(blkid_probe pr, const char *name, uint64_t *ret) {
        const char *v = NULL;
        *ret = 0;
        if (blkid_probe_lookup_value(pr, name, &v, NULL) < 0 || !v)
                return 0;
        return safe_atou64(v, ret);
}

static void sig_clear(struct inv_signature *s) {
        free(s->type);
        free(s->usage);
        free(s->uuid);
        free(s->label);
}

int sigprobe_device(const char *path, struct inv_signature **ret, size_t *ret_n) {
        _cleanup_close_ int fd = -1;
        __attribute__((cleanup(blkid_free_probep))) blkid_probe pr = NULL;
        int r = probe_open(path, &fd, &pr);
        if (r < 0)
                return r;
        /* what wipefs enables: also stale signatures with a bad checksum */
        if (blkid_probe_enable_superblocks(pr, 1) < 0 ||
            blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_MAGIC | BLKID_SUBLKS_TYPE | BLKID_SUBLKS_USAGE |
                                                          BLKID_SUBLKS_LABEL | BLKID_SUBLKS_UUID | BLKID_SUBLKS_BADCSUM) < 0 ||
            blkid_probe_enable_partitions(pr, 1) < 0 ||
            blkid_probe_set_partitions_flags(pr, BLKID_PARTS_MAGIC | BLKID_PARTS_FORCE_GPT) < 0)
                return -EIO;

        struct inv_signature *sigs = NULL;
        size_t n = 0;
        for (unsigned guard = 0; guard < 256; guard++) {
                errno = 0;
                int rc = blkid_do_probe(pr);
                if (rc == 1)
                        break;
                if (rc < 0) {
                        r = errno > 0 ? -errno : -EIO;
                        break;
                }
                struct inv_signature s = { 0 };
                size_t magic_len = 0;
                if ((r = lookup(pr, "TYPE", &s.type)) < 0)
                        break;
                if (s.type) {
                        magic_len = lookup_len(pr, "SBMAGIC");
                        if ((r = lookup(pr, "USAGE", &s.usage)) < 0 || (r = lookup(pr, "UUID", &s.uuid)) < 0 ||
                            (r = lookup(pr, "LABEL", &s.label)) < 0 || (r = lookup_u64(pr, "SBMAGIC_OFFSET", &s.offset)) < 0) {
                                sig_clear(&s);
                                break;
                        }
                } else {
                        if ((r = lookup(pr, "PTTYPE", &s.type)) < 0)
                                break;
                        if (!s.type)
                                continue;
                        magic_len = lookup_len(pr, "PTMAGIC");
                        if (!(s.usage = strdup("partition_table")) || (r = lookup(pr, "PTUUID", &s.uuid)) < 0 ||
                            (r = lookup_u64(pr, "PTMAGIC_OFFSET", &s.offset)) < 0) {
                                r = r < 0 ? r : -ENOMEM;
                                sig_clear(&s);
                                break;
                        }
                }
                struct inv_signature *ns = realloc(sigs, (n + 1) * sizeof *ns);
                if (!ns) {
                        sig_clear(&s);
                        r = -ENOMEM;
                        break;
                }
                sigs = ns;
                sigs[n++] = s;
                /* As wipefs lists them: hide this magic and probe the same chain
                 * again, which finds the next one (backup GPT, protective MBR,
                 * LUKS2's second header, an older superblock underneath). */
                if (magic_len > 0) {
                        if (blkid_probe_hide_range(pr, s.offset, magic_len) < 0) {
                                r = -EIO;
                                break;
                        }
                        blkid_probe_step_back(pr);
                }
        }
        if (r < 0) {
                for (size_t i = 0; i < n; i++)
                        sig_clear(&sigs[i]);
                free(sigs);
                return r;
        }
        *ret = sigs;
        *ret_n = n;
        return 0;
}

void sigprobe_partitions_free(struct sigprobe_part *p, size_t n) {
        for (size_t i = 0; p && i < n; i++) {
                free(p[i].uuid);
                free(p[i].type);
        }
        free(p);
}

int sigprobe_partitions(const char *disk, struct sigprobe_part **ret, size_t *ret_n) {
        _cleanup_close_ int fd = -1;
        __attribute__((cleanup(blkid_free_probep))) blkid_probe pr = NULL;
        int r = probe_open(disk, &fd, &pr);
        if (r < 0)
                return r;
        if (blkid_probe_enable_superblocks(pr, 0) < 0 || blkid_probe_enable_partitions(pr, 1) < 0 ||
            blkid_probe_set_partitions_flags(pr, BLKID_PARTS_FORCE_GPT) < 0)
                return -EIO;
        blkid_partlist pl = blkid_probe_get_partitions(pr);     /* owned by the probe */
        int n = pl ? blkid_partlist_numof_partitions(pl) : 0;
        if (n < 0)
                return -EIO;
        struct sigprobe_part *parts = calloc(n ? (size_t) n : 1, sizeof *parts);
        if (!parts)
                return -ENOMEM;
        for (int i = 0; i < n; i++) {
                blkid_partition p = blkid_partlist_get_partition(pl, i);
                const char *u = p ? blkid_partition_get_uuid(p) : NULL;
                const char *t = p ? blkid_partition_get_type_string(p) : NULL;
                int no = p ? blkid_partition_get_partno(p) : -1;
                blkid_loff_t start = p ? blkid_partition_get_start(p) : -1, size = p ? blkid_partition_get_size(p) : -1;
                if (no < 0 || start < 0 || size < 0) {
                        sigprobe_partitions_free(parts, (size_t) i);
                        return -EIO;
                }
                /* libblkid counts in 512-byte sectors whatever the disk's */
                parts[i] = (struct sigprobe_part) {
                        .number = (unsigned) no, .start = (uint64_t) start * 512, .size = (uint64_t) size * 512,
                        .sector_size = blkid_probe_get_sectorsize(pr),
                };
                if ((u && *u && !(parts[i].uuid = strdup(u))) || (t && *t && !(parts[i].type = strdup(t)))) {
                        sigprobe_partitions_free(parts, (size_t) i + 1);
                        return -ENOMEM;
                }
        }
        *ret = parts;
        *ret_n = (size_t) n;
        return 0;
}
