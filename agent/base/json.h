/* The json-c helpers every stage shares: building a document with one
 * sticky error, reading members, parsing a buffer and printing into a
 * strbuf. They know json-c and no kiln type. */
#pragma once
#include "strbuf.h"
#include "util.h"
#include <json-c/json.h>

static inline void json_putp(json_object **o) {
        if (*o)
                json_object_put(*o);
}
#define _cleanup_json_ _cleanup_(json_putp)

/* A JSON string of s; NULL for NULL s (json-c's null). */
json_object *json_str(const char *s);

/* Adds v (taken) as member key of o; a NULL v is JSON null (json-c's
 * null is NULL). -ENOMEM when json-c fails. */
int json_add(json_object *o, const char *key, json_object *v);

/* Builders with one error idiom: *r starts at 0; once a call fails it is
 * negative and every later call only frees what it was given, so a block of
 * calls needs one check at its end. v is taken (freed on failure); a NULL v
 * is an allocation that failed (-ENOMEM). */
void json_set(json_object *o, const char *key, json_object *v, int *r);
/* The same, with NULL s stored as null. */
void json_set_str(json_object *o, const char *key, const char *s, int *r);
void json_set_null(json_object *o, const char *key, int *r);
void json_append(json_object *a, json_object *v, int *r);
/* o, or NULL (and o freed) when building it failed (r < 0). */
json_object *json_done(json_object *o, int r);

/* Member key of object o, or NULL (o may be NULL or not an object). */
json_object *json_get(json_object *o, const char *key);
/* Member key when it is a string, else NULL. */
const char *json_get_str(json_object *o, const char *key);
/* Member key as text when it is there and not null (a number too), else NULL. */
const char *json_get_text(json_object *o, const char *key);

/* The JSON value text[0..len) starts with; -EINVAL when there is none (or it is null). */
int json_parse(const char *text, size_t len, json_object **ret);
/* o as text (json-c's JSON_C_TO_STRING_* flags; '/' is never escaped),
 * appended to out, then a newline when nl. */
int json_print(json_object *o, int flags, bool nl, struct strbuf *out);
/* The JSON object whose text out holds gets member key = v (taken, freed
 * on failure), and out holds its new text (plain, then a newline). */
int json_text_add(struct strbuf *out, const char *key, json_object *v);
