#include "bootcount.h"
#include "util.h"

void bootcount_time(time_t t, char buf[static BOOTCOUNT_TIME_LEN + 1]) {
        struct tm tm;
        if (!gmtime_r(&t, &tm) || strftime(buf, BOOTCOUNT_TIME_LEN + 1, "%Y-%m-%dT%H:%M:%SZ", &tm) != BOOTCOUNT_TIME_LEN)
                buf[0] = 0;
}

/* YYYY-MM-DDTHH:MM:SSZ, digits where digits go */
static bool time_valid(const char *s, size_t n) {
        static const char form[] = "dddd-dd-ddTdd:dd:ddZ";
        if (n != BOOTCOUNT_TIME_LEN)
                return false;
        for (size_t i = 0; i < n; i++)
                if (form[i] == 'd' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != form[i])
                        return false;
        return true;
}

int bootcount_parse(const char *text, struct bootcount *ret, struct strbuf *err) {
        struct bootcount bc = {};
        bool have_version = false, have_attempts = false, have_attempt = false, have_good = false;
        unsigned line = 0;
        if (!text)
                return strbuf_errorf(err, -EBADMSG, "empty");
        for (const char *p = text; *p;) {
                const char *nl = strchr(p, '\n');
                size_t n = nl ? (size_t) (nl - p) : strlen(p);
                const char *l = p;
                line++;
                p = nl ? nl + 1 : p + n;
                if (n == 0 || l[0] == '#')
                        continue;
                const char *eq = memchr(l, '=', n);
                if (!eq)
                        return strbuf_errorf(err, -EBADMSG, "line %u: expected key=value", line);
                size_t klen = (size_t) (eq - l), vlen = n - klen - 1;
                const char *v = eq + 1;
                char num[16];
                unsigned u;
#define KEY(k) (klen == strlen(k) && memcmp(l, k, klen) == 0)
                if (KEY("version") || KEY("attempts")) {
                        bool *seen = KEY("version") ? &have_version : &have_attempts;
                        if (*seen)
                                return strbuf_errorf(err, -EBADMSG, "line %u: '%.*s' given twice", line, (int) klen, l);
                        if (vlen == 0 || vlen >= sizeof num || strspn(v, "0123456789") < vlen)
                                return strbuf_errorf(err, -EBADMSG, "line %u: '%.*s' is not a number: '%.*s'", line,
                                                     (int) klen, l, (int) (vlen > 32 ? 32 : vlen), v);
                        memcpy(num, v, vlen);
                        num[vlen] = 0;
                        if (safe_atou(num, &u) < 0 || (KEY("attempts") && u > BOOTCOUNT_ATTEMPTS_MAX))
                                return strbuf_errorf(err, -EBADMSG, "line %u: '%.*s' is out of range: %s", line,
                                                     (int) klen, l, num);
                        if (KEY("version") && u != BOOTCOUNT_VERSION)
                                return strbuf_errorf(err, -EBADMSG, "line %u: version %u (this kiln reads version %d)",
                                                     line, u, BOOTCOUNT_VERSION);
                        if (KEY("attempts"))
                                bc.attempts = u;
                        *seen = true;
                } else if (KEY("last_attempt") || KEY("last_good")) {
                        bool *seen = KEY("last_good") ? &have_good : &have_attempt;
                        char *dst = KEY("last_good") ? bc.last_good : bc.last_attempt;
                        if (*seen)
                                return strbuf_errorf(err, -EBADMSG, "line %u: '%.*s' given twice", line, (int) klen, l);
                        if (!time_valid(v, vlen))
                                return strbuf_errorf(err, -EBADMSG, "line %u: '%.*s' is not a UTC time "
                                                     "(YYYY-MM-DDTHH:MM:SSZ): '%.*s'", line, (int) klen, l,
                                                     (int) (vlen > 32 ? 32 : vlen), v);
                        memcpy(dst, v, vlen);
                        dst[vlen] = 0;
                        *seen = true;
                } else
                        return strbuf_errorf(err, -EBADMSG, "line %u: unknown key '%.*s'", line,
                                             (int) (klen > 32 ? 32 : klen), l);
#undef KEY
        }
        if (!have_version)
                return strbuf_errorf(err, -EBADMSG, "no 'version'");
        if (!have_attempts)
                return strbuf_errorf(err, -EBADMSG, "no 'attempts'");
        *ret = bc;
        return 0;
}

int bootcount_format(const struct bootcount *bc, struct strbuf *out) {
        int r = strbuf_addf(out, "# written by kiln bootcount: boots begun since the last good one (docs/reinstall.md)\n"
                                 "version=%d\nattempts=%u\n", BOOTCOUNT_VERSION, bc->attempts);
        if (r >= 0 && bc->last_attempt[0])
                r = strbuf_addf(out, "last_attempt=%s\n", bc->last_attempt);
        if (r >= 0 && bc->last_good[0])
                r = strbuf_addf(out, "last_good=%s\n", bc->last_good);
        return r < 0 ? r : 0;
}

void bootcount_unreadable(struct bootcount *ret) {
        *ret = (struct bootcount) { .attempts = 1 };
}

void bootcount_attempt(struct bootcount *bc, time_t now) {
        if (bc->attempts < BOOTCOUNT_ATTEMPTS_MAX)
                bc->attempts++;
        bootcount_time(now, bc->last_attempt);
}

void bootcount_good(struct bootcount *bc, time_t now) {
        bc->attempts = 0;
        bootcount_time(now, bc->last_good);
}

enum bootcount_verdict bootcount_verdict(const struct bootcount *bc, unsigned limit) {
        if (!bc || bc->attempts == 0)
                return BOOTCOUNT_BOOT;
        return bc->attempts < limit ? BOOTCOUNT_BOOT_REPORT : BOOTCOUNT_STOP;
}

const char *bootcount_verdict_name(enum bootcount_verdict v) {
        switch (v) {
        case BOOTCOUNT_BOOT: return "boot";
        case BOOTCOUNT_BOOT_REPORT: return "boot-failed, booting";
        case BOOTCOUNT_STOP: return "boot-failed, stopped";
        }
        return "?";
}
