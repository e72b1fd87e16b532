#include "enlist.h"
#include "json.h"
#include "log.h"
#include "strbuf.h"
#include "webhook.h"

#include <sys/random.h>

int enlist_load_key(const char *path, char **ret_key) {
        _cleanup_free_ char *key = NULL;
        size_t len = 0;
        int r = read_full_file(path, ENLIST_KEY_MAX, &key, &len);
        if (r == -E2BIG)
                r = -EFBIG;
        if (r < 0)
                return r;
        while (len > 0 && (key[len - 1] == '\n' || key[len - 1] == '\r'))
                key[--len] = 0;
        if (len == 0 || strlen(key) != len) {
                explicit_wipe(key, len);
                return -EINVAL;         /* empty, or a NUL inside */
        }
        r = log_register_secret(key);
        if (r < 0) {
                explicit_wipe(key, len);
                return r;
        }
        *ret_key = TAKE_PTR(key);
        return 0;
}

const char *enlist_node_id(const struct inventory *inv) {
        if (!strempty(inv->machine_uuid))
                return inv->machine_uuid;
        return inventory_primary_mac(inv);
}

static int random_uuid(char buf[static 37]) {
        uint8_t id[16];
        if (getrandom(id, sizeof id, 0) != (ssize_t) sizeof id)
                return -errno;
        id[6] = (id[6] & 0x0f) | 0x40;
        id[8] = (id[8] & 0x3f) | 0x80;
        int q = 0;
        for (size_t i = 0; i < sizeof id; i++)
                q += snprintf(buf + q, 37 - q, "%s%02x", (i == 4 || i == 6 || i == 8 || i == 10) ? "-" : "", id[i]);
        return 0;
}

/* The inventory's JSON in body, with "enlist": why, the spec and every
 * layout's reason, printed as inventory_to_json() prints. */
static int add_reasons(const struct enlist_target *t, struct strbuf *body) {
        _cleanup_json_ json_object *root = json_tokener_parse(strbuf_str(body));
        if (!root)
                return -EINVAL;
        int r = 0;
        json_object *e = json_object_new_object(), *list = json_object_new_array();
        json_set_str(e, "why", t->why, &r);
        json_set_str(e, "spec", t->spec, &r);
        for (size_t i = 0; i < t->n_reasons; i++) {
                json_object *x = json_object_new_object();
                json_set_str(x, "layout", t->reasons[i].layout, &r);
                json_set_str(x, "rule", t->reasons[i].rule, &r);
                json_set_str(x, "reason", t->reasons[i].reason, &r);
                json_append(list, x, &r);
        }
        json_set(e, "layouts_not_fitting", list, &r);
        json_set(root, "enlist", e, &r);
        if (r < 0)
                return r;
        strbuf_release(body);
        return json_print(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED, true, body);
}

int enlist_post(const struct inventory *inv, const struct enlist_target *t, char **ret_body, struct strbuf *err) {
        static const struct delivery_policy def = {
                .connect_timeout_ms = 5000, .request_timeout_ms = 20000, .total_ms = ENLIST_DEFAULT_TIMEOUT_SEC * 1000u,
                .backoff_base_ms = 1000, .backoff_cap_ms = 30000,
        };
        _cleanup_strbuf_ struct strbuf body = STRBUF_INIT;
        char run_id[37];
        int r;

        if (!inv || !t || !t->url || !t->key)
                return -EINVAL;
        const char *node = enlist_node_id(inv);
        if (!node)
                return -ENODATA;
        r = inventory_to_json(inv, &body);
        if (r >= 0 && t->why)
                r = add_reasons(t, &body);
        if (r < 0)
                return r;
        r = random_uuid(run_id);
        if (r < 0)
                return r;
        _cleanup_free_ char *delivery = strdupf("%s/enlist/%s", node, run_id);
        if (!delivery)
                return -ENOMEM;
        struct webhook_target wt = {
                .url = t->url,
                .hmac_key = t->key,
                .ca_file = t->ca_file,
                .policy = t->policy ? t->policy : &def,
        };
        r = webhook_post(&wt, "enlist", run_id, node, delivery, strbuf_str(&body), err);
        if (ret_body) {
                char *b = strbuf_detach(&body);
                if (!b)
                        b = strdup("");
                free(*ret_body);
                *ret_body = b;
        }
        return r;
}
