#include "netheal.h"

#include "configure.h"
#include "firstboot.h"
#include "paths.h"
#include "util.h"

#include <dirent.h>
#include <limits.h>
#include <sys/stat.h>

#define STATE_FILE_MAX (64u * 1024u)

void netheal_look_done(struct netheal_look *l) {
        strbuf_release(&l->failed);
        strbuf_release(&l->waiting);
}

/* ADMIN_STATE= of a state file into buf ("" when the line is missing);
 * -errno when it cannot be read. */
static int admin_state(const char *path, char buf[static 32]) {
        _cleanup_free_ char *text = NULL;
        int r = read_full_file(path, STATE_FILE_MAX, &text, NULL);
        if (r < 0)
                return r;
        buf[0] = 0;
        for (char *l = text, *nl; l && *l; l = nl ? nl + 1 : NULL) {
                nl = strchr(l, '\n');
                if (nl)
                        *nl = 0;
                if (strncmp(l, "ADMIN_STATE=", 12) == 0) {
                        snprintf(buf, 32, "%s", l + 12);
                        break;
                }
        }
        return 0;
}

/* The name of the link with this ifindex, from sysfs; "ifindex N" when none has it. */
static int link_name(const char *ifindex, struct strbuf *out) {
        _cleanup_free_ char *dir = strdupf("%s/class/net", kiln_paths.sysfs);
        if (!dir)
                return -ENOMEM;
        _cleanup_closedir_ DIR *d = opendir(dir);
        struct dirent *de;
        while (d && (de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                _cleanup_free_ char *p = strdupf("%s/%s/ifindex", dir, de->d_name), *v = NULL;
                if (!p)
                        return -ENOMEM;
                if (read_one_line(p, &v) == 0 && streq(v, ifindex))
                        return strbuf_adds(out, de->d_name);
        }
        return strbuf_addf(out, "ifindex %s", ifindex);
}

static bool newer(const struct stat *st, const struct timespec *since) {
        return !since || st->st_mtim.tv_sec > since->tv_sec ||
               (st->st_mtim.tv_sec == since->tv_sec && st->st_mtim.tv_nsec >= since->tv_nsec);
}

static int numeric(const struct dirent *de) {
        return de->d_name[0] >= '1' && de->d_name[0] <= '9' && strspn(de->d_name, "0123456789") == strlen(de->d_name);
}

static int by_ifindex(const struct dirent **a, const struct dirent **b) {
        size_t la = strlen((*a)->d_name), lb = strlen((*b)->d_name);
        return la != lb ? (la < lb ? -1 : 1) : strcmp((*a)->d_name, (*b)->d_name);
}

/* The failed links, in ifindex order (the order the kernel made them). */
static int look_failed(const struct timespec *since, struct strbuf *failed) {
        struct dirent **des = NULL;
        int n = scandir(kiln_paths.netif_links, &des, numeric, by_ifindex), r = 0;
        if (n < 0)
                return errno == ENOENT ? 0 : -errno;
        for (int i = 0; i < n; i++) {
                struct stat st;
                char state[32];
                _cleanup_free_ char *p = r < 0 ? NULL : strdupf("%s/%s", kiln_paths.netif_links, des[i]->d_name);
                if (r >= 0 && !p)
                        r = -ENOMEM;
                /* a file networkd replaces as we read it is read at the next look */
                if (r >= 0 && stat(p, &st) == 0 && admin_state(p, state) == 0 && streq(state, "failed") && newer(&st, since)) {
                        if (failed->len)
                                r = strbuf_adds(failed, ", ");
                        if (r >= 0)
                                r = link_name(des[i]->d_name, failed);
                }
                free(des[i]);
        }
        free(des);
        return r;
}

static int look_bridge(const char *name, struct strbuf *waiting) {
        _cleanup_free_ char *p = strdupf("%s/class/net/%s/ifindex", kiln_paths.sysfs, name), *ifindex = NULL, *s = NULL;
        if (!p)
                return -ENOMEM;
        char state[32] = "";
        const char *why = NULL;
        if (read_one_line(p, &ifindex) < 0)
                why = "no such link";
        else if (!(s = strdupf("%s/%s", kiln_paths.netif_links, ifindex)))
                return -ENOMEM;
        else if (admin_state(s, state) < 0 || !state[0])
                why = "not set up yet";
        else if (!streq(state, "configured"))
                why = state;
        if (!why)
                return 0;
        return strbuf_addf(waiting, "%s%s (%s)", waiting->len ? ", " : "", name, why);
}

int netheal_look(char *const *bridges, size_t n, const struct timespec *since, struct netheal_look *ret) {
        struct netheal_look l = { STRBUF_INIT, STRBUF_INIT };
        int r = look_failed(since, &l.failed);
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = look_bridge(bridges[i], &l.waiting);
        if (r < 0) {
                netheal_look_done(&l);
                return r;
        }
        *ret = l;
        return 0;
}

int netheal_unit_text(const struct netconf *n, struct strbuf *out) {
        /* Before network-online.target: what waits for the network (the
         * registration, the boot counter's good boot) waits for this too.
         * Wanted by multi-user.target: it runs at every boot, also when
         * nothing asks for network-online.target. Its lines go to the
         * console: whoever looks at a node that came up late sees why. */
        int r = strbuf_addf(out,
                            "# written by kiln: restart systemd-networkd when it gave up on a link "
                            "(docs/spec.md \"When systemd-networkd gives up\")\n"
                            "[Unit]\n"
                            "Description=kiln: bring up the network systemd-networkd gave up on\n"
                            "After=" NETHEAL_NETWORKD_UNIT "\n"
                            "Before=network-online.target\n"
                            "\n"
                            "[Service]\n"
                            "Type=oneshot\n"
                            "RemainAfterExit=yes\n"
                            "ExecStart=%s network heal", FIRSTBOOT_BINARY);
        for (size_t i = 0; r >= 0 && i < n->n_bridges; i++)
                r = strbuf_addf(out, " %s", n->bridges[i].spec->name);
        if (r >= 0)
                r = strbuf_adds(out,
                                "\n"
                                "StandardOutput=journal+console\n"
                                "StandardError=journal+console\n"
                                "\n"
                                "[Install]\n"
                                "WantedBy=multi-user.target\n");
        return r < 0 ? r : 0;
}

int netheal_install(const struct netconf *n, struct strbuf *err) {
        if (!n->n_bridges)
                return 0;
        _cleanup_strbuf_ struct strbuf t = STRBUF_INIT;
        char p[PATH_MAX];
        int r = netheal_unit_text(n, &t);
        if (r < 0)
                return r;
        if ((r = configure_target_path(NETHEAL_UNIT_PATH, p)) < 0 ||
            (r = write_file_atomic_mode(p, strbuf_str(&t), t.len, 0644)) < 0)
                return strbuf_adds(err, NETHEAL_UNIT_PATH), r;
        if ((r = configure_symlink(NETHEAL_UNIT_PATH, NETHEAL_WANTS_LINK)) < 0)
                return strbuf_adds(err, NETHEAL_WANTS_LINK), r;
        return 0;
}
