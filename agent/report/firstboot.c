#include "firstboot.h"
#include "util.h"

#include <time.h>

void firstboot_conf_done(struct firstboot_conf *c) {
        if (!c)
                return;
        free(c->spec_url); free(c->spec_sha256); free(c->ca); free(c->report); free(c->marker); free(c->ip);
        *c = (struct firstboot_conf) {};
}

static const struct {
        const char *key;
        size_t off;
        bool required;
} conf_keys[] = {
        { "spec", offsetof(struct firstboot_conf, spec_url), true },
        { "spec_sha256", offsetof(struct firstboot_conf, spec_sha256), true },
        { "ca", offsetof(struct firstboot_conf, ca), false },
        { "report", offsetof(struct firstboot_conf, report), true },
        { "marker", offsetof(struct firstboot_conf, marker), true },
        { "ip", offsetof(struct firstboot_conf, ip), false },
};

static char **field(struct firstboot_conf *c, size_t i) {
        return (char **) ((char *) c + conf_keys[i].off);
}

int firstboot_conf_format(const struct firstboot_conf *c, struct strbuf *out) {
        int r = strbuf_adds(out, "# written by kiln: what kiln-register.service registers with at first boot.\n"
                                 "# No secret: the spec is fetched again from 'spec' and must hash to 'spec_sha256'.\n");
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(conf_keys); i++) {
                const char *v = *field((struct firstboot_conf *) c, i);
                if (!v) {
                        if (conf_keys[i].required)
                                return -EINVAL;
                        continue;
                }
                if (strpbrk(v, "\n\r"))
                        return -EINVAL;
                r = strbuf_addf(out, "%s=%s\n", conf_keys[i].key, v);
        }
        return r < 0 ? r : 0;
}

int firstboot_conf_parse(const char *text, struct firstboot_conf *ret, struct strbuf *err) {
        _cleanup_(firstboot_conf_done) struct firstboot_conf c = {};
        unsigned line = 0;
        for (const char *p = text; p && *p;) {
                const char *nl = strchr(p, '\n');
                size_t n = nl ? (size_t) (nl - p) : strlen(p);
                line++;
                const char *l = p;
                p = nl ? nl + 1 : NULL;
                if (n && l[n - 1] == '\r')
                        n--;
                if (n == 0 || l[0] == '#')
                        continue;
                const char *eq = memchr(l, '=', n);
                if (!eq)
                        return strbuf_errorf(err, -EINVAL, "line %u: expected key=value", line);
                size_t klen = (size_t) (eq - l), i;
                for (i = 0; i < ELEMENTSOF(conf_keys); i++)
                        if (strlen(conf_keys[i].key) == klen && memcmp(conf_keys[i].key, l, klen) == 0)
                                break;
                if (i == ELEMENTSOF(conf_keys))
                        return strbuf_errorf(err, -EINVAL, "line %u: unknown key '%.*s'", line, (int) (klen > 64 ? 64 : klen), l);
                char **f = field(&c, i);
                if (*f)
                        return strbuf_errorf(err, -EINVAL, "line %u: '%s' given twice", line, conf_keys[i].key);
                size_t vlen = n - klen - 1;
                if (vlen == 0)
                        return strbuf_errorf(err, -EINVAL, "line %u: '%s' is empty", line, conf_keys[i].key);
                if (memchr(eq + 1, '\r', vlen))
                        return strbuf_errorf(err, -EINVAL, "line %u: '%s' holds a carriage return", line, conf_keys[i].key);
                if (!(*f = strndup(eq + 1, vlen)))
                        return -ENOMEM;
        }
        for (size_t i = 0; i < ELEMENTSOF(conf_keys); i++)
                if (conf_keys[i].required && !*field(&c, i))
                        return strbuf_errorf(err, -EINVAL, "no '%s'", conf_keys[i].key);
        if (!hex_valid(c.spec_sha256, 64))
                return strbuf_errorf(err, -EINVAL, "'spec_sha256' is not 64 hexadecimal digits");
        *ret = c;
        c = (struct firstboot_conf) {};
        return 0;
}

int firstboot_unit_text(struct strbuf *out) {
        /* Ordering only on sshd and libvirtd (an image may lack libvirt): addHost
         * logs in over SSH and CloudStack's agent setup talks to libvirtd.
         * Wanted by multi-user.target, which therefore waits for it: a node
         * that reached multi-user has tried to register. A failure is tried
         * again a minute later (a controller down at first boot), except a bad
         * spec or usage (exit 2, 64) and required storage that is not up (exit
         * 4: an operator mends it and reboots), which no retry mends. The marker, which
         * kiln register writes once it succeeded, keeps the unit from running
         * at any later boot. */
        int r = strbuf_addf(out,
                            "# written by kiln: CloudStack's addHost from the running host, once (docs/register.md)\n"
                            "[Unit]\n"
                            "Description=kiln: register this node with CloudStack\n"
                            "Wants=network-online.target\n"
                            "After=network-online.target ssh.service libvirtd.service\n"
                            "ConditionPathExists=!%s\n"
                            "\n"
                            "[Service]\n"
                            "Type=oneshot\n"
                            "ExecStart=%s register --firstboot %s\n"
                            "Restart=on-failure\n"
                            "RestartSec=60\n"
                            "RestartPreventExitStatus=2 4 64\n"
                            "TimeoutStartSec=900\n"
                            "\n"
                            "[Install]\n"
                            "WantedBy=multi-user.target\n",
                            FIRSTBOOT_MARKER, FIRSTBOOT_BINARY, FIRSTBOOT_CONF);
        return r < 0 ? r : 0;
}

int firstboot_mark_write(const char *path, const char *run_id) {
        char line[256];
        time_t now = time(NULL);
        struct tm tm;
        char when[32] = "";
        if (gmtime_r(&now, &tm))
                strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
        snprintf(line, sizeof line, "registered %s run %s\n", when, run_id ? run_id : "-");
        return write_file_atomic(path, line, strlen(line));
}
