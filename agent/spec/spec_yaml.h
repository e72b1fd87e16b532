/* A small YAML tree with source positions, built from libyaml's event API.
 * Used by the spec parser only. libyaml's own document API is not used
 * because it resolves aliases silently, loses duplicate keys and has no
 * nesting limit; here anchors and aliases are refused, depth is bounded and
 * every node keeps its 1-based line:col. */
#pragma once
#include "diag.h"
#include "util.h"

#define YTREE_MAX_KEYS 256u     /* per mapping: keeps duplicate-key checks cheap */
#define YTREE_MAX_ITEMS 1024u   /* per list: far more disks, members or volumes than a host has */

enum ynode_kind {
        YNODE_SCALAR,
        YNODE_SEQ,
        YNODE_MAP,
};

struct ynode {
        enum ynode_kind kind;
        unsigned line, col;     /* 1-based */
        bool plain;             /* scalar written without quotes */
        bool alias;             /* stands in for a refused alias: already reported */
        char *value;            /* scalar text, NUL-terminated */
        size_t len;             /* scalar length (may differ from strlen if it holds a NUL) */
        struct ynode **items;   /* seq: the items; map: key, value, key, value, ... */
        size_t n;               /* number of entries in items */
};

/* Parse one YAML document. Syntax errors, anchors, aliases, excessive depth
 * and extra documents go into diags. Returns 0 and the tree (NULL for an
 * empty document) when the structure could be built, even if diags got
 * anchor/alias errors; -EINVAL when the input does not parse; -ENOMEM. */
int ytree_parse(const char *file, const char *data, size_t len, unsigned max_depth,
                struct ynode **ret, struct diags *diags);
struct ynode *ynode_free(struct ynode *n);
DEFINE_CLEANUP(ynode_free, struct ynode *)

static inline bool ynode_is_null(const struct ynode *n) {
        return !n || (n->kind == YNODE_SCALAR && n->plain &&
                      (n->len == 0 || streq(n->value, "~") || streq(n->value, "null") ||
                       streq(n->value, "Null") || streq(n->value, "NULL")));
}
