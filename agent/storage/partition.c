#include "partition.h"

#include "log.h"
#include "paths.h"

#include <fcntl.h>
#include <unistd.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <parted/parted.h>
#include <sys/ioctl.h>
#include <uuid/uuid.h>
#include <zlib.h>
#include <sys/stat.h>
#include <time.h>

#define ALIGN_BYTES (1024u * 1024u)
#define GPT_BACKUP_SECTORS 33           /* backup header + 32 sectors of entries (512-byte sectors) */

/* libparted's exception handler has no user data: while partition_disk()
 * runs, its messages go to that call's err (the last one wins). */
static struct strbuf *handler_err;
static bool stderr_muted;       /* while libparted runs: its messages are logged after */

/* libparted runs "udevadm settle" through system() when it commits a table
 * (Debian's build); kiln runs without udev by design, so in the initramfs that
 * printed "sh: udevadm: not found" twice a disk. Its output goes nowhere
 * while libparted works; kiln waits for the partition nodes itself
 * (partition_wait). Returns the saved stderr, or -errno (then nothing changed). */
static int stderr_mute(void) {
        fflush(stderr);
        int saved = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
        if (saved < 0)
                return -errno;
        int null = open("/dev/null", O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (null < 0 || dup2(null, STDERR_FILENO) < 0) {
                int r = -errno;
                if (null >= 0)
                        close(null);
                close(saved);
                return r;
        }
        close(null);
        stderr_muted = true;
        return saved;
}

static void stderr_restore(int saved) {
        if (saved < 0)
                return;
        dup2(saved, STDERR_FILENO);
        close(saved);
        stderr_muted = false;
}


/* libparted asks questions through exceptions. kiln answers non-interactively:
 * record the text, log it at debug level, and cancel anything that is an error. */
static PedExceptionOption exception_handler(PedException *ex) {
        const char *m = ex->message ? ex->message : "";
        (void) strbuf_errorf(handler_err, 0, "%s", m);
        if (!stderr_muted)
                log_debug("libparted: %s: %s", ped_exception_get_type_string(ex->type), m);
        if (ex->type <= PED_EXCEPTION_WARNING && (ex->options & PED_EXCEPTION_IGNORE))
                return PED_EXCEPTION_IGNORE;
        if (ex->options & PED_EXCEPTION_CANCEL)
                return PED_EXCEPTION_CANCEL;
        return PED_EXCEPTION_UNHANDLED;
}

static void ped_device_destroyp(PedDevice **d) { if (*d) ped_device_destroy(*d); }
static void ped_disk_destroyp(PedDisk **d) { if (*d) ped_disk_destroy(*d); }
static void ped_constraint_destroyp(PedConstraint **c) { if (*c) ped_constraint_destroy(*c); }

int partition_wait(char *const *paths, uint64_t timeout_usec) {
        uint64_t deadline = now_usec() + timeout_usec;
        for (size_t i = 0; paths && paths[i]; i++) {
                struct stat st;
                while (stat(paths[i], &st) < 0 || !S_ISBLK(st.st_mode)) {
                        if (now_usec() >= deadline)
                                return -ETIMEDOUT;
                        nanosleep(&(struct timespec) { .tv_nsec = 20 * 1000 * 1000 }, NULL);
                }
        }
        return 0;
}

static int set_type(PedPartition *part, enum spec_part_type type) {
        PedPartitionFlag flag;
        switch (type) {
        case SPEC_PART_LINUX: return 0;
        case SPEC_PART_RAID: flag = PED_PARTITION_RAID; break;
        case SPEC_PART_LVM: flag = PED_PARTITION_LVM; break;
        case SPEC_PART_BIOS_GRUB: flag = PED_PARTITION_BIOS_GRUB; break;
        case SPEC_PART_ESP: flag = PED_PARTITION_ESP; break;
        case SPEC_PART_SWAP: flag = PED_PARTITION_SWAP; break;
        default: return -EINVAL;
        }
        if (!ped_partition_is_flag_available(part, flag))
                return -EOPNOTSUPP;
        return ped_partition_set_flag(part, flag, 1) ? 0 : -EIO;
}

static int write_table(PedDevice *dev, const char *disk, const struct partition_request *req, size_t n,
                       struct strbuf *err) {
        long long ss = dev->sector_size;
        PedSector align = ALIGN_BYTES / ss;
        /* the backup GPT (entries + header) lives in the last sectors */
        PedSector backup = (PedSector) GPT_BACKUP_SECTORS * 512 / ss + 1;
        PedSector limit = dev->length - backup;        /* first sector not usable */

        const PedDiskType *gpt = ped_disk_type_get("gpt");
        _cleanup_(ped_disk_destroyp) PedDisk *pdisk = gpt ? ped_disk_new_fresh(dev, gpt) : NULL;
        if (!pdisk)
                return -EIO;
        for (size_t i = 0; i < n; i++) {
                PedSector start = (PedSector) (req[i].start / (uint64_t) ss);
                PedSector len = (PedSector) (req[i].size / (uint64_t) ss);
                if (len <= 0 || start < align || start % align || req[i].start % (uint64_t) ss ||
                    start + len > limit) {
                        return strbuf_errorf(err, -ENOSPC, "partition %zu ('%s') does not fit on %s",
                                             i + 1, req[i].name, disk);
                }
                const PedFileSystemType *fs = req[i].type == SPEC_PART_SWAP ?
                        ped_file_system_type_get("linux-swap") : NULL;
                PedPartition *part = ped_partition_new(pdisk, PED_PARTITION_NORMAL, fs, start, start + len - 1);
                if (!part)
                        return -EIO;
                _cleanup_(ped_constraint_destroyp) PedConstraint *c = ped_constraint_exact(&part->geom);
                if (!c || !ped_disk_add_partition(pdisk, part, c)) {
                        ped_partition_destroy(part);
                        return -EIO;
                }
                if (!ped_partition_set_name(part, req[i].name))
                        return -EIO;
                int r = set_type(part, req[i].type);
                if (r < 0)
                        return r;
        }
        if (!ped_disk_commit_to_dev(pdisk))
                return -EIO;
        if (!ped_disk_commit_to_os(pdisk))
                return -EIO;
        return 0;
}

int partition_disk(const char *disk, const struct partition_request *req, size_t n, char ***ret_paths,
                   struct strbuf *err) {
        _cleanup_strbuf_ struct strbuf scratch = STRBUF_INIT;
        if (!err)
                err = &scratch;
        strbuf_reset(err);
        handler_err = err;
        ped_exception_set_handler(exception_handler);

        _cleanup_(ped_device_destroyp) PedDevice *dev = ped_device_get(disk);
        if (!dev)
                return -ENODEV;
        int muted = stderr_mute();
        bool opened = ped_device_open(dev);
        int r = opened ? write_table(dev, disk, req, n, err) : -EIO;
        if (opened)
                ped_device_close(dev);
        stderr_restore(muted);
        handler_err = NULL;
        if (err->len)
                log_debug("libparted: %s", err->buf);
        if (r < 0)
                return r;

        _cleanup_strv_free_ char **paths = NULL;
        for (size_t i = 0; i < n; i++) {
                char *p;
                r = paths_partition(disk, (unsigned) i + 1, &p);
                if (r < 0)
                        return r;
                r = strv_push(&paths, p);
                if (r < 0) {
                        free(p);
                        return r;
                }
        }
        r = partition_wait(paths, 10ull * 1000000ull);
        if (r < 0)
                return r;
        if (ret_paths)
                *ret_paths = TAKE_PTR(paths);
        return 0;
}

/* ---- the GPT disk GUID ----
 * Written here rather than through a tool: libparted 3.5 has no call for
 * the disk GUID, sfdisk --disk-id with its libraries (libfdisk, readline)
 * adds 353 KB (zstd -19) to an initramfs 340 KB under its 16 MiB limit, and
 * Debian ships libfdisk without a static archive for the static kiln. The
 * change is two fields of two headers (UEFI 2.10, 5.3.2), checked by
 * tests/host/test-boot-finish.sh with blkid and sfdisk --verify. */

#define GPT_SIGNATURE "EFI PART"
#define GPT_HEADER_MIN 92u
#define GPT_OFF_HEADER_SIZE 12
#define GPT_OFF_HEADER_CRC 16
#define GPT_OFF_MY_LBA 24
#define GPT_OFF_ALTERNATE_LBA 32
#define GPT_OFF_DISK_GUID 56

static uint32_t le32(const uint8_t *p) {
        return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 | (uint32_t) p[3] << 24;
}

static uint64_t le64(const uint8_t *p) {
        return (uint64_t) le32(p) | (uint64_t) le32(p + 4) << 32;
}

static void put_le32(uint8_t *p, uint32_t v) {
        for (int i = 0; i < 4; i++)
                p[i] = (uint8_t) (v >> (8 * i));
}

static uint32_t header_crc(uint8_t *h, uint32_t size) {
        uint8_t saved[4];
        memcpy(saved, h + GPT_OFF_HEADER_CRC, 4);
        memset(h + GPT_OFF_HEADER_CRC, 0, 4);
        uint32_t crc = (uint32_t) crc32(crc32(0L, Z_NULL, 0), h, size);
        memcpy(h + GPT_OFF_HEADER_CRC, saved, 4);
        return crc;
}

/* one header sector at lba into h (ss bytes), checked; its size in *ret_size */
static int header_read(int fd, unsigned ss, uint64_t lba, const char *which, uint8_t *h, uint32_t *ret_size,
                       struct strbuf *err) {
        ssize_t n = pread(fd, h, ss, (off_t) (lba * ss));
        if (n < 0)
                return strbuf_errorf(err, -errno, "cannot read the %s GPT header (LBA %" PRIu64 ")", which, lba);
        if ((size_t) n != ss)
                return strbuf_errorf(err, -EIO, "short read of the %s GPT header (LBA %" PRIu64 ")", which, lba);
        uint32_t size = le32(h + GPT_OFF_HEADER_SIZE);
        if (memcmp(h, GPT_SIGNATURE, 8) != 0 || size < GPT_HEADER_MIN || size > ss)
                return strbuf_errorf(err, -EBADMSG, "no %s GPT header at LBA %" PRIu64, which, lba);
        if (header_crc(h, size) != le32(h + GPT_OFF_HEADER_CRC))
                return strbuf_errorf(err, -EBADMSG, "the %s GPT header (LBA %" PRIu64 ") fails its CRC", which, lba);
        if (le64(h + GPT_OFF_MY_LBA) != lba)
                return strbuf_errorf(err, -EBADMSG, "the %s GPT header at LBA %" PRIu64 " says it is at LBA %" PRIu64,
                                     which, lba, le64(h + GPT_OFF_MY_LBA));
        *ret_size = size;
        return 0;
}

static int header_write(int fd, unsigned ss, uint64_t lba, const char *which, uint8_t *h, uint32_t size,
                        const uint8_t guid[16], struct strbuf *err) {
        memcpy(h + GPT_OFF_DISK_GUID, guid, 16);
        put_le32(h + GPT_OFF_HEADER_CRC, header_crc(h, size));
        ssize_t n = pwrite(fd, h, ss, (off_t) (lba * ss));
        if (n < 0)
                return strbuf_errorf(err, -errno, "cannot write the %s GPT header (LBA %" PRIu64 ")", which, lba);
        if ((size_t) n != ss)
                return strbuf_errorf(err, -EIO, "short write of the %s GPT header (LBA %" PRIu64 ")", which, lba);
        return 0;
}

int partition_set_disk_guid(const char *disk, const char *uuid, struct strbuf *err) {
        _cleanup_strbuf_ struct strbuf scratch = STRBUF_INIT;
        if (!err)
                err = &scratch;
        uuid_t u;
        if (!uuid || uuid_parse(uuid, u) < 0)
                return strbuf_errorf(err, -EINVAL, "'%s' is not a UUID", uuid ? uuid : "(null)");
        /* GPT's GUID layout: the first three fields little-endian */
        const uint8_t guid[16] = { u[3], u[2], u[1], u[0], u[5], u[4], u[7], u[6],
                                   u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15] };
        /* not O_EXCL: the partitions are in use (mounted, md members) at the end of a run */
        _cleanup_close_ int fd = open(disk, O_RDWR | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return strbuf_errorf(err, -errno, "cannot open '%s'", disk);
        unsigned ss = 512;
        uint64_t bytes = 0;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return strbuf_errorf(err, -errno, "cannot stat '%s'", disk);
        if (S_ISBLK(st.st_mode)) {
                int bss = 0;
                if (ioctl(fd, BLKSSZGET, &bss) < 0 || ioctl(fd, BLKGETSIZE64, &bytes) < 0)
                        return strbuf_errorf(err, -errno, "cannot read the geometry of '%s'", disk);
                ss = (unsigned) bss;
        } else
                bytes = (uint64_t) st.st_size;  /* an image file */
        if (ss < 512 || ss > 65536 || bytes / ss < 3)
                return strbuf_errorf(err, -EBADMSG, "'%s' is too small for a GPT", disk);
        _cleanup_free_ uint8_t *primary = malloc(ss), *backup = malloc(ss);
        if (!primary || !backup)
                return -ENOMEM;
        uint32_t psize, bsize;
        int r = header_read(fd, ss, 1, "primary", primary, &psize, err);
        if (r < 0)
                return r;
        uint64_t alt = le64(primary + GPT_OFF_ALTERNATE_LBA);
        if (alt <= 1 || alt >= bytes / ss)
                return strbuf_errorf(err, -EBADMSG, "the primary GPT header puts its backup at LBA %" PRIu64
                                     ", outside the disk", alt);
        if ((r = header_read(fd, ss, alt, "backup", backup, &bsize, err)) < 0)
                return r;
        if (memcmp(primary + GPT_OFF_DISK_GUID, backup + GPT_OFF_DISK_GUID, 16) != 0)
                return strbuf_errorf(err, -EBADMSG, "the primary and backup GPT headers name different disk GUIDs");
        /* the backup first: until the primary is written, readers see the old GUID, consistently */
        if ((r = header_write(fd, ss, alt, "backup", backup, bsize, guid, err)) < 0 ||
            (r = header_write(fd, ss, 1, "primary", primary, psize, guid, err)) < 0)
                return r;
        if (fsync(fd) < 0)
                return strbuf_errorf(err, -errno, "cannot sync '%s'", disk);
        return 0;
}
