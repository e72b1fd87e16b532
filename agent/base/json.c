#include "json.h"
#include <limits.h>

json_object *json_str(const char *s) {
        return s ? json_object_new_string(s) : NULL;
}

/* json-c 0.16 leaves v to the caller when an add fails (it can only fail
 * to allocate) */
int json_add(json_object *o, const char *key, json_object *v) {
        if (json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

void json_set(json_object *o, const char *key, json_object *v, int *r) {
        if (*r >= 0 && (!o || !v))
                *r = -ENOMEM;
        if (*r < 0) {
                json_object_put(v);
                return;
        }
        *r = json_add(o, key, v);
}

void json_set_null(json_object *o, const char *key, int *r) {
        if (*r >= 0 && (!o || json_object_object_add(o, key, NULL) < 0))
                *r = -ENOMEM;
}

void json_set_str(json_object *o, const char *key, const char *s, int *r) {
        if (s)
                json_set(o, key, json_object_new_string(s), r);
        else
                json_set_null(o, key, r);
}

void json_append(json_object *a, json_object *v, int *r) {
        if (*r >= 0 && (!a || !v || json_object_array_add(a, v) < 0))
                *r = -ENOMEM;
        if (*r < 0)
                json_object_put(v);
}

json_object *json_done(json_object *o, int r) {
        if (r >= 0)
                return o;
        json_object_put(o);
        return NULL;
}

json_object *json_get(json_object *o, const char *key) {
        json_object *v;
        return o && json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

const char *json_get_str(json_object *o, const char *key) {
        json_object *v = json_get(o, key);
        return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

const char *json_get_text(json_object *o, const char *key) {
        json_object *v = json_get(o, key);
        return v && !json_object_is_type(v, json_type_null) ? json_object_get_string(v) : NULL;
}

int json_parse(const char *text, size_t len, json_object **ret) {
        if (len > INT_MAX)
                return -E2BIG;
        json_tokener *tok = json_tokener_new();
        if (!tok)
                return -ENOMEM;
        json_object *o = json_tokener_parse_ex(tok, text, (int) len);
        bool ok = json_tokener_get_error(tok) == json_tokener_success && o;
        json_tokener_free(tok);
        if (!ok) {
                json_object_put(o);
                return -EINVAL;
        }
        *ret = o;
        return 0;
}

int json_print(json_object *o, int flags, bool nl, struct strbuf *out) {
        const char *s = json_object_to_json_string_ext(o, flags | JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!s)
                return -ENOMEM;
        int r = strbuf_adds(out, s);
        return r < 0 || !nl ? r : strbuf_adds(out, "\n");
}

int json_text_add(struct strbuf *out, const char *key, json_object *v) {
        _cleanup_json_ json_object *o = NULL;
        int r = v ? json_parse(strbuf_str(out), out->len, &o) : -ENOMEM;
        if (r >= 0 && !json_object_is_type(o, json_type_object))
                r = -EINVAL;
        if (r < 0) {
                json_object_put(v);
                return r;
        }
        if ((r = json_add(o, key, v)) < 0)
                return r;
        strbuf_reset(out);
        return json_print(o, JSON_C_TO_STRING_PLAIN, true, out);
}
