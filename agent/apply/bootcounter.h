/* The installed system's boot counter, on its disks (plan/bootcount.h has
 * the file's form and the look's rule; docs/reinstall.md "A boot that
 * failed"). The install puts two units into the target, both running
 * `FIRSTBOOT_BINARY bootcount`:
 *   BOOTCOUNT_ATTEMPT_UNIT  early at every boot, as soon as /boot is mounted
 *                           (DefaultDependencies=no, RequiresMountsFor= the
 *                           counter's directory, before sysinit.target): one
 *                           boot more; it runs also when the boot later drops
 *                           to emergency mode (a local-fs.target that failed)
 *   BOOTCOUNT_GOOD_UNIT     after multi-user.target (and network-online.target
 *                           with --network when the plan has a network): the
 *                           boot was good, the count back to 0
 * Writing the counter: atomically (a temporary file, fsync, rename, fsync of
 * the directory), then the filesystem frozen and thawed at once
 * (FIFREEZE/FITHAW): a freeze writes the journal back to its home blocks
 * (ext4's and XFS's log is checkpointed), so kiln's look from the netboot,
 * which mounts /boot ro,noload (ext4) or ro,norecovery (xfs) after a hard
 * reset and never replays a journal, reads the count that was written. */
#pragma once
#include "bootcount.h"
#include "plan.h"
#include "strbuf.h"

#define BOOTCOUNT_ATTEMPT_UNIT "kiln-bootcount-attempt.service"
#define BOOTCOUNT_GOOD_UNIT    "kiln-bootcount-good.service"
#define BOOTCOUNT_UNIT_DIR     "/etc/systemd/system"

/* The counter at path into *ret: 0; -ENOENT (none); -EBADMSG with err saying
 * what is wrong ("line 2: ..."); another read error. */
int bootcount_load(const char *path, struct bootcount *ret, struct strbuf *err);
/* bc written to path (parents made); with freeze, the filesystem holding it
 * frozen and thawed. 1 when written but the filesystem could not be frozen
 * (ret_freeze_err: why; the file is fsynced all the same), 0, or -errno. */
int bootcount_store(const char *path, const struct bootcount *bc, bool freeze, int *ret_freeze_err);

/* The units' texts. network: `good` waits for network-online.target and
 * checks that an interface has an address (bootcount good --network). */
int bootcount_attempt_unit_text(struct strbuf *out);
int bootcount_good_unit_text(bool network, struct strbuf *out);

/* Both units (enabled) and kiln itself under kiln_paths.target; the counter
 * is left as it is (a reinstall starts with the image's /boot, which has
 * none). warnings: as firstboot_install_binary()'s. */
int bootcount_install(const struct plan *p, struct strbuf *warnings, struct strbuf *err);
