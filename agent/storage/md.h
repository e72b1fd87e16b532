/* md RAID through mdadm (exec with argv; mdadm owns the superblock format). */
#pragma once
#include "strbuf.h"
#include "util.h"

struct md_create_params {
        const char *name;               /* array name: /dev/md/NAME */
        const char *homehost;           /* recorded as the array's home (the node's hostname); NULL = "any" */
        unsigned level;                 /* 0 1 4 5 6 10 */
        const char *layout;             /* f2, n2, left-symmetric ...; NULL = default */
        uint64_t chunk;                 /* bytes; 0 = default */
        const char *metadata;           /* NULL = mdadm default (1.2) */
        const char *bitmap;             /* "internal", "none"; NULL = default */
        char *const *members;           /* NULL-terminated; the last `spares` are spares */
        unsigned spares;
        bool assume_clean;
};

/* Build the mdadm argv (for logs and tests); *ret is a NULL-terminated strv. */
int md_create_argv(const struct md_create_params *p, char ***ret);
int md_create(const struct md_create_params *p, struct strbuf *err);
/* Wait until /dev/md/NAME exists (mdadm makes it when there is no udev);
 * *ret_path gets the resolved node, e.g. /dev/md127. */
int md_wait(const char *name, uint64_t timeout_usec, char **ret_path);
/* mdadm --assemble /dev/md/NAME --uuid=UUID --run MEMBERS...: the array an
 * earlier run made, data untouched (resume); with readonly, --readonly too:
 * the array starts read-only, so neither its data nor a superblock is
 * written (looking at a finished node). */
int md_assemble(const char *name, const char *uuid, char *const *members, bool readonly, struct strbuf *err);
/* mdadm --stop DEVICE */
int md_stop(const char *dev, struct strbuf *err);
/* mdadm --detail --brief DEVICE into out (for mdadm.conf). */
int md_detail_brief(const char *dev, struct strbuf *out, struct strbuf *err);
