/* tang.c's and sss.c's shared JOSE helpers (jansson types: only those two
 * include this). */
#pragma once
#include "strbuf.h"
#include "util.h"
#include <jansson.h>
#include <jose/jose.h>

/* json-c (every other file of kiln) and jansson (libjose's JSON) both define
 * these two names; kiln's references to them must all be json-c's (in the
 * static build, build.sh renames jansson's copies). */
#pragma GCC poison json_object_get json_object_iter_next

void jansson_decref_p(json_t **j);
#define _cleanup_jansson_ _cleanup_(jansson_decref_p)
/* For a JWK that holds key material: its "k", "d", "x", "y" zeroed first. */
void jansson_wipe_decref_p(json_t **j);
#define _cleanup_jansson_wipe_ _cleanup_(jansson_wipe_decref_p)

/* jansson's key lookup, without the name json-c also defines. */
json_t *jwe_member(const json_t *o, const char *key);
/* A compact JWE as the JSON object libjose reads; NULL if malformed. */
json_t *jwe_compact_parse(const char *s);
/* Its protected header, decoded; NULL if none. */
json_t *jwe_protected_header(const json_t *jwe);
/* "protected.encrypted_key.iv.ciphertext.tag" of jwe, appended to out. */
int jwe_compact_print(const json_t *jwe, struct strbuf *out);
