/* register: where the node reports itself (docs/spec.md "register"):
 * CloudStack's addHost and the webhook. */
#include "spec_internal.h"

#include <ctype.h>

/* A login name useradd takes on Debian (its default NAME_REGEX, without the trailing '$'). */
static bool valid_username(const char *u) {
        size_t n = strlen(u);
        if (n == 0 || n > 32 || !(islower((unsigned char) u[0]) || u[0] == '_'))
                return false;
        for (size_t i = 1; i < n; i++)
                if (!islower((unsigned char) u[i]) && !isdigit((unsigned char) u[i]) && u[i] != '_' && u[i] != '-')
                        return false;
        return true;
}

/* Why k is not one line "TYPE BASE64 [COMMENT]" of authorized_keys (no
 * options), or NULL. */
static const char *ssh_key_problem(const char *k) {
        static const char *const types[] = {
                "ssh-ed25519", "ssh-rsa", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521",
                "sk-ssh-ed25519@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com", NULL,
        };
        if (strpbrk(k, "\n\r"))
                return "it holds a line break";
        size_t tl = strcspn(k, " ");
        bool known = false;
        for (size_t i = 0; types[i] && !known; i++)
                known = strlen(types[i]) == tl && strncmp(types[i], k, tl) == 0;
        if (!known)
                return "it does not start with a key type (ssh-ed25519, ssh-rsa, ecdsa-sha2-nistp256, ...)";
        const char *b = k + tl;
        while (*b == ' ')
                b++;
        size_t bl = strcspn(b, " ");
        if (bl < 16)
                return "no base64 key data after the type";
        for (size_t i = 0; i < bl; i++)
                if (!isalnum((unsigned char) b[i]) && !strchr("+/=", b[i]))
                        return "the key data is not base64";
        return NULL;
}

void spec_parse_register(struct ctx *c, const struct ynode *m, struct spec *s) {
        char f[256], t[QUOTE_MAX + 8];
        static const char *const keys[] = { "cloudstack", "webhook", NULL };
        static const char *const cs_keys[] = {
                "endpoint", "zone", "pod", "cluster", "api_key", "secret_key", "host_username", "host_password", "host_authorized_key",
                "host_url", NULL,
        };
        static const char *const wh_keys[] = { "url", "hmac_key", NULL };
        struct loc l = { "register", "" }, lc = { "register", "cloudstack." }, lw = { "register", "webhook." };
        spec_check_keys(c, m, &l, keys);
        const struct ynode *cs = spec_map_get(m, "cloudstack"), *wh = spec_map_get(m, "webhook"), *v;
        if (spec_want_map(c, &l, "cloudstack", cs) > 0) {
                struct spec_cloudstack *x = &s->cloudstack;
                x->present = true;
                x->mark = (struct spec_mark) { cs->line, cs->col };
                spec_check_keys(c, cs, &lc, cs_keys);
                static const char *const required[] = { "endpoint", "zone", "pod", "cluster", "api_key", "secret_key" };
                for (size_t i = 0; i < ELEMENTSOF(required); i++)
                        if (!spec_map_get(cs, required[i]))
                                emitn(c, cs, "'cloudstack' of register has no '%s'", required[i]);
                (void) spec_get_url(c, &lc, "endpoint", spec_map_get(cs, "endpoint"), false, &x->endpoint);
                (void) spec_get_str(c, &lc, "zone", spec_map_get(cs, "zone"), &x->zone);
                (void) spec_get_str(c, &lc, "pod", spec_map_get(cs, "pod"), &x->pod);
                (void) spec_get_str(c, &lc, "cluster", spec_map_get(cs, "cluster"), &x->cluster);
                (void) spec_get_str(c, &lc, "api_key", spec_map_get(cs, "api_key"), &x->api_key);
                (void) spec_get_secret(c, &lc, "secret_key", spec_map_get(cs, "secret_key"), &x->secret_key);
                if (spec_get_str(c, &lc, "host_username", v = spec_map_get(cs, "host_username"), &x->host_username) > 0 &&
                    !valid_username(x->host_username))
                        emitn(c, v, "%s must be a user name (lower-case letters, digits, '_' and '-', starting with a "
                              "letter or '_', at most 32), not '%s'", spec_field(&lc, "host_username", f), spec_quote(x->host_username, t));
                if (!x->host_username && !(x->host_username = strdup("root")))      /* addHost's default login */
                        c->error = -ENOMEM;
                if (spec_get_secret(c, &lc, "host_password", v = spec_map_get(cs, "host_password"), &x->host_password) > 0)
                        spec_warn(c, v, "%s is served in clear to whoever can fetch this spec, and logs in to the node: "
                                  "use 'host_authorized_key' (the management server's public key) instead",
                                  spec_field(&lc, "host_password", f));
                if (spec_get_str(c, &lc, "host_authorized_key", v = spec_map_get(cs, "host_authorized_key"), &x->host_authorized_key) > 0) {
                        const char *why = ssh_key_problem(x->host_authorized_key);
                        if (why)
                                emitn(c, v, "%s must be one OpenSSH public key ('ssh-ed25519 AAAA... comment'): %s",
                                      spec_field(&lc, "host_authorized_key", f), why);
                }
                (void) spec_get_url(c, &lc, "host_url", spec_map_get(cs, "host_url"), false, &x->host_url);
        }
        if (spec_want_map(c, &l, "webhook", wh) > 0) {
                struct spec_webhook *x = &s->webhook;
                x->present = true;
                x->mark = (struct spec_mark) { wh->line, wh->col };
                spec_check_keys(c, wh, &lw, wh_keys);
                if (!(v = spec_map_get(wh, "url")))
                        emitn(c, wh, "'webhook' of register has no 'url'");
                (void) spec_get_url(c, &lw, "url", v, false, &x->url);
                (void) spec_get_secret(c, &lw, "hmac_key", spec_map_get(wh, "hmac_key"), &x->hmac_key);
        }
}

void spec_free_register(struct spec *s) {
        struct spec_cloudstack *cs = &s->cloudstack;
        free(cs->endpoint); free(cs->zone); free(cs->pod); free(cs->cluster); free(cs->api_key);
        spec_free_secret(cs->secret_key); free(cs->host_username); spec_free_secret(cs->host_password); free(cs->host_url);
        free(cs->host_authorized_key);
        free(s->webhook.url); spec_free_secret(s->webhook.hmac_key);
}
