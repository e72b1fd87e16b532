/* The installed system's first-boot registration (report/firstboot.h has
 * the paths and the config): with register.cloudstack, the run installs
 * under kiln_paths.target
 *   - kiln itself (FIRSTBOOT_BINARY), a copy of the running binary;
 *   - FIRSTBOOT_CA (the CA bundle the run used), FIRSTBOOT_CONF (no secret);
 *   - FIRSTBOOT_UNIT_PATH, enabled in multi-user.target.wants;
 *   - the login CloudStack's addHost uses, as the spec says: the account
 *     (useradd in a chroot of the target when missing), its password hashed
 *     (yescrypt, crypt(3)) into /etc/shadow, the management server's public
 *     key in its ~/.ssh/authorized_keys, sudo rights for an account other
 *     than root, and FIRSTBOOT_SSHD_DROPIN allowing exactly that login.
 * The run report itself is saved there by apply (FIRSTBOOT_REPORT). */
#pragma once
#include "spec.h"
#include "strbuf.h"

struct firstboot_source {
        const char *spec_url;           /* the spec's URL as fetched (it may carry a credential) */
        const char *spec_sha256;        /* of the spec the run applies */
        const char *ca_file;            /* the CA bundle the run used, or NULL */
        const char *ip;                 /* the installed system's address when the spec gives it, or NULL */
};

/* Everything above; the first failure stops it with what failed on in err.
 * Things the installed system may lack but kiln cannot add (sshd, sudo, a
 * static kiln) are one sentence each in warnings. Writes no secret. */
int firstboot_install(const struct spec *spec, const struct firstboot_source *src, struct strbuf *warnings,
                      struct strbuf *err);

/* kiln itself (a copy of the running binary) as FIRSTBOOT_BINARY under the
 * target: what the first-boot unit and the boot counter's units
 * (apply/bootcount.h) run. A dynamic build is one sentence in warnings. */
int firstboot_install_binary(struct strbuf *warnings, struct strbuf *err);

/* The texts, for tests and the writer alike. */
int firstboot_sshd_dropin(const struct spec_cloudstack *c, struct strbuf *out);
