/* The node's part of a generic initramfs. An image that ships one (the
 * images initramfs/base-image/ builds) carries a marker,
 * kiln_paths.generic_initramfs, with one line per kernel it covers:
 *   VERSION SIZE
 * where SIZE is the length of /boot/initrd.img-VERSION as the image built
 * it. kiln then does not rebuild the initramfs in the target (minutes under
 * emulation): it appends to each of those initrds a small newc cpio archive
 * with what Debian's hooks would have copied from this node's /etc —
 * /cryptroot/crypttab (cryptroot's hook: the LUKS lines of /etc/crypttab,
 * UUID= sources, key 'none', options as written) and /etc/mdadm/mdadm.conf,
 * with md also kiln's degraded start (configure.h), which an update-initramfs
 * takes from /etc/initramfs-tools/scripts. The kernel unpacks concatenated
 * archives in order, later files win.
 * A later update-initramfs on the node rebuilds the initrd from /etc (the
 * same files) and drops the appended archive. */
#pragma once
#include "plan.h"
#include "strbuf.h"

#include <stddef.h>

/* The marker's text parsed: versions[i] and sizes[i], n entries (-EINVAL,
 * err says which line, for anything else than "VERSION SIZE" lines). */
struct initrd_marker {
        char **versions;
        unsigned long long *sizes;
        size_t n;
};
int initrd_marker_parse(const char *text, struct initrd_marker *m, struct strbuf *err);
void initrd_marker_free(struct initrd_marker *m);

/* The newc cpio of the node's files (crypttab and/or mdadm.conf, either may
 * be NULL; with mdadm.conf the degraded start too) in *out. */
int initrd_node_cpio(const char *crypttab, const char *mdadm_conf, struct strbuf *out);

/* The boot-loader step's initramfs part, in the target: -ENOENT (nothing
 * done) when the image has no marker; otherwise each covered initrd cut back
 * to the size the image gave it, padded to 4 bytes (where the kernel looks
 * for the next archive) and the node cpio appended. A rerun gives the same
 * files. ret (may be NULL) takes the marker on success: the kernels GRUB's
 * menu lists (bootloader.h); initrd_marker_free() it. */
int initrd_generic_install(const struct plan *p, struct initrd_marker *ret, struct strbuf *err);
