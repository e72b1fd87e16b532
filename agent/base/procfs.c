#include "procfs.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PROCFS_MAX_FILE (16u * 1024 * 1024)

static int read_proc(const char *procfs, const char *name, char **ret) {
        _cleanup_free_ char *p = NULL;
        if (asprintf(&p, "%s/%s", procfs, name) < 0)
                return -ENOMEM;
        return read_full_file(p, PROCFS_MAX_FILE, ret, NULL);
}

/* Splits "key   : value" in place: *ret_key and *ret_val, both trimmed.
 * false for a line without a colon. */
static bool split_line(char *line, const char **ret_key, const char **ret_val) {
        char *colon = strchr(line, ':');
        if (!colon)
                return false;
        char *key_end = colon;
        while (key_end > line && (key_end[-1] == ' ' || key_end[-1] == '\t'))
                key_end--;
        *key_end = 0;
        const char *val = colon + 1;
        while (*val == ' ' || *val == '\t')
                val++;
        *ret_key = line;
        *ret_val = val;
        return true;
}

/* "16384 kB" -> bytes; false if it does not start with digits or overflows. */
static bool kb_value(const char *s, uint64_t *ret) {
        char num[32];
        size_t l = strspn(s, "0123456789");
        uint64_t kb;
        if (l == 0 || l >= sizeof num)
                return false;
        memcpy(num, s, l);
        num[l] = 0;
        if (safe_atou64(num, &kb) < 0 || kb > UINT64_MAX / 1024)
                return false;
        *ret = kb * 1024;
        return true;
}

int procfs_parse_meminfo(char *text, struct procfs_meminfo *ret) {
        struct procfs_meminfo m = {};
        for (char *line = text; line && *line;) {
                char *nl = strchr(line, '\n');
                if (nl)
                        *nl = 0;
                const char *key, *val;
                if (split_line(line, &key, &val)) {
                        if (streq(key, "MemTotal"))
                                (void) kb_value(val, &m.total);
                        else if (streq(key, "MemAvailable"))
                                (void) kb_value(val, &m.available);
                }
                line = nl ? nl + 1 : NULL;
        }
        *ret = m;
        return 0;
}

int procfs_read_meminfo(const char *procfs, struct procfs_meminfo *ret) {
        _cleanup_free_ char *buf = NULL;
        int r = read_proc(procfs, "meminfo", &buf);
        return r < 0 ? r : procfs_parse_meminfo(buf, ret);
}

int procfs_parse_cpuinfo(char *text, struct procfs_cpuinfo *ret) {
        _cleanup_free_ char *model = NULL;
        struct procfs_cpuinfo ci = {};
        bool flags_seen = false;
        for (char *line = text; line && *line;) {
                char *nl = strchr(line, '\n');
                if (nl)
                        *nl = 0;
                const char *key, *val;
                if (split_line(line, &key, &val)) {
                        if (streq(key, "processor"))
                                ci.cpus++;
                        else if (streq(key, "model name") && !model) {
                                if (!(model = strdup(val)))
                                        return -ENOMEM;
                        } else if (streq(key, "flags") && !flags_seen) {
                                flags_seen = true;
                                for (const char *q = val; *q;) {
                                        while (*q == ' ')
                                                q++;
                                        size_t l = strcspn(q, " ");
                                        if (l == 3 && strncmp(q, "aes", 3) == 0)
                                                ci.aes = true;
                                        else if (l == 4 && strncmp(q, "vaes", 4) == 0)
                                                ci.vaes = true;
                                        else if (l == 4 && strncmp(q, "avx2", 4) == 0)
                                                ci.avx2 = true;
                                        q += l;
                                }
                        }
                }
                line = nl ? nl + 1 : NULL;
        }
        ci.model = TAKE_PTR(model);
        *ret = ci;
        return 0;
}

int procfs_read_cpuinfo(const char *procfs, struct procfs_cpuinfo *ret) {
        _cleanup_free_ char *buf = NULL;
        int r = read_proc(procfs, "cpuinfo", &buf);
        return r < 0 ? r : procfs_parse_cpuinfo(buf, ret);
}

bool procfs_misc_lists(const char *text, const char *name) {
        size_t n = strlen(name);
        /* lines are "MINOR NAME" */
        for (const char *q = text; n > 0 && (q = strstr(q, name)); q++)
                if ((q == text || q[-1] == ' ') && (q[n] == '\n' || q[n] == 0))
                        return true;
        return false;
}

int procfs_misc_has(const char *procfs, const char *name) {
        _cleanup_free_ char *misc = NULL;
        int r = read_proc(procfs, "misc", &misc);
        return r < 0 ? r : procfs_misc_lists(misc, name);
}

int procfs_parse_devnum(const char *s, unsigned *ret_major, unsigned *ret_minor) {
        const char *colon = strchr(s, ':');
        if (!colon || colon - s > 15)
                return -EINVAL;
        char a[16];
        memcpy(a, s, (size_t) (colon - s));
        a[colon - s] = 0;
        unsigned ma, mi;
        int r = safe_atou(a, &ma);
        if (r < 0)
                return r;
        r = safe_atou(colon + 1, &mi);
        if (r < 0)
                return r;
        *ret_major = ma;
        *ret_minor = mi;
        return 0;
}

/* mountinfo escapes space, tab, newline and backslash as \ooo */
static char *unescape_mount(const char *s, size_t n) {
        char *o = malloc(n + 1);
        if (!o)
                return NULL;
        size_t j = 0;
        for (size_t i = 0; i < n; i++) {
                if (s[i] == '\\' && i + 3 < n &&
                    s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' && s[i + 2] <= '7' &&
                    s[i + 3] >= '0' && s[i + 3] <= '7') {
                        o[j++] = (char) ((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
                        i += 3;
                } else
                        o[j++] = s[i];
        }
        o[j] = 0;
        return o;
}

void procfs_mounts_free(struct procfs_mount *m, size_t n) {
        for (size_t i = 0; m && i < n; i++)
                free(m[i].where);
        free(m);
}

int procfs_parse_mountinfo(char *text, struct procfs_mount **ret, size_t *ret_n) {
        struct procfs_mount *mounts = NULL;
        size_t n = 0;
        int r = 0;
        for (char *line = text; line && *line;) {
                char *nl = strchr(line, '\n');
                if (nl)
                        *nl = 0;
                /* id parent major:minor root mountpoint ... */
                const char *f[5];
                size_t fl[5];
                size_t nf = 0;
                const char *q = line;
                while (nf < 5 && *q) {
                        while (*q == ' ')
                                q++;
                        if (!*q)
                                break;
                        const char *e = strchr(q, ' ');
                        size_t l = e ? (size_t) (e - q) : strlen(q);
                        f[nf] = q;
                        fl[nf] = l;
                        nf++;
                        q += l;
                }
                if (nf == 5 && fl[2] < 32) {
                        char mm[32];
                        memcpy(mm, f[2], fl[2]);
                        mm[fl[2]] = 0;
                        unsigned ma, mi;
                        if (procfs_parse_devnum(mm, &ma, &mi) >= 0 && ma != 0) {
                                struct procfs_mount *nm = realloc(mounts, (n + 1) * sizeof *nm);
                                if (!nm) {
                                        r = -ENOMEM;
                                        break;
                                }
                                mounts = nm;
                                char *w = unescape_mount(f[4], fl[4]);
                                if (!w) {
                                        r = -ENOMEM;
                                        break;
                                }
                                mounts[n++] = (struct procfs_mount) { ma, mi, w };
                        }
                }
                line = nl ? nl + 1 : NULL;
        }
        if (r < 0) {
                procfs_mounts_free(mounts, n);
                return r;
        }
        *ret = mounts;
        *ret_n = n;
        return 0;
}

int procfs_parse_stat_starttime(const char *stat, uint64_t *ret_ticks) {
        const char *p = stat ? strrchr(stat, ')') : NULL;
        if (!p)
                return -EINVAL;
        p++;
        /* after ')' come field 3 (state) ... field 22 (starttime) */
        for (int field = 3; field <= 22; field++) {
                if (*p != ' ')
                        return -EINVAL;
                p++;
                size_t l = strcspn(p, " \n");
                if (l == 0)
                        return -EINVAL;
                if (field == 22) {
                        char num[32];
                        if (l >= sizeof num)
                                return -EINVAL;
                        memcpy(num, p, l);
                        num[l] = 0;
                        return safe_atou64(num, ret_ticks) < 0 ? -EINVAL : 0;
                }
                p += l;
        }
        return -EINVAL;
}

int procfs_self_age_usec(const char *procfs, uint64_t *ret) {
        _cleanup_free_ char *buf = NULL;
        uint64_t ticks;
        struct timespec ts;
        int r = read_proc(procfs, "self/stat", &buf);
        if (r < 0)
                return r;
        if ((r = procfs_parse_stat_starttime(buf, &ticks)) < 0)
                return r;
        long hz = sysconf(_SC_CLK_TCK);
        if (hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &ts) < 0)
                return -EINVAL;
        uint64_t now = (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
        uint64_t start = ticks * (1000000u / (uint64_t) hz);
        *ret = now > start ? now - start : 0;
        return 0;
}
