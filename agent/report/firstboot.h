/* Registration at the installed system's first boot (docs/register.md
 * "Where addHost belongs"). The initramfs run leaves CloudStack's addHost to
 * the installed system: it installs kiln, the run report, this config and a
 * oneshot unit there (apply/firstboot.c), and the unit runs
 * `kiln register --firstboot FIRSTBOOT_CONF` once the network, sshd and
 * libvirt are up. The config holds no secret: the unit fetches the spec
 * again from the URL the node was installed from, pinned by the sha256 that
 * spec had, so the API keys and the host password never lie on the disk.
 *
 * Every path and name of the first-boot flow is here, once: the writer
 * (apply) and the reader (`kiln register --firstboot`) share them, and the
 * rig test of the whole job names them (wholejob). Silent module. */
#pragma once
#include "strbuf.h"

/* In the installed system's root. */
#define FIRSTBOOT_UNIT_NAME   "kiln-register.service"
#define FIRSTBOOT_UNIT_PATH   "/etc/systemd/system/" FIRSTBOOT_UNIT_NAME
#define FIRSTBOOT_WANTS_LINK  "/etc/systemd/system/multi-user.target.wants/" FIRSTBOOT_UNIT_NAME
#define FIRSTBOOT_BINARY      "/usr/local/sbin/kiln"
#define FIRSTBOOT_CONF        "/etc/kiln/firstboot.conf"
#define FIRSTBOOT_CA          "/etc/kiln/ca.pem"
#define FIRSTBOOT_REPORT      "/var/lib/kiln/report.json"
#define FIRSTBOOT_MARKER      "/var/lib/kiln/registered"
#define FIRSTBOOT_SSHD_DROPIN "/etc/ssh/sshd_config.d/kiln.conf"
#define FIRSTBOOT_SUDOERS_DIR "/etc/sudoers.d"

/* registration.cloudstack.result of the install run */
#define FIRSTBOOT_RESULT "FIRSTBOOT"

#define FIRSTBOOT_CONF_MAX (16u * 1024u)

/* The config, one `key=value` a line ('#' comments, no quoting; a value
 * holds no newline):
 *   spec=URL            where the spec is fetched again (as given to kiln boot, ${...} expanded)
 *   spec_sha256=HEX     what it must hash to: the spec the node was installed with
 *   ca=PATH             CA bundle for HTTPS (FIRSTBOOT_CA), optional
 *   report=PATH         the saved run report (FIRSTBOOT_REPORT)
 *   marker=PATH         written once registration succeeded (FIRSTBOOT_MARKER)
 *   ip=ADDR             the installed system's address, when the spec's network
 *                       gives it one (a static bridge address); else the report's */
struct firstboot_conf {
        char *spec_url;
        char *spec_sha256;
        char *ca;
        char *report;
        char *marker;
        char *ip;
};

void firstboot_conf_done(struct firstboot_conf *c);
/* Text of c; -EINVAL when a value holds a newline or a required one
 * (spec, spec_sha256, report, marker) is missing. */
int firstboot_conf_format(const struct firstboot_conf *c, struct strbuf *out);
/* Parse text into *ret (filled only on success). -EINVAL with a message in
 * err (may be NULL: "line 3: unknown key 'foo'", "no 'spec_sha256'") otherwise. */
int firstboot_conf_parse(const char *text, struct firstboot_conf *ret, struct strbuf *err);

/* The unit file's text (FIRSTBOOT_UNIT_PATH). */
int firstboot_unit_text(struct strbuf *out);
/* The marker at path (atomically): "registered <UTC time> run <run_id>"
 * (run_id NULL: "-"). 0 or -errno. */
int firstboot_mark_write(const char *path, const char *run_id);
