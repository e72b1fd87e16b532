/* One string table per enum, kept by the module that owns the type (after
 * systemd's DEFINE_STRING_TABLE_LOOKUP; ours is smaller). The table is
 * indexed by the enum and ends with NULL, so a parser can also walk it to
 * read a name back or to list the choices. */
#pragma once
#include "util.h"

/* const char *func(type x): the name of x, or NULL when x is not in table. */
#define DEFINE_STRING_TABLE_TO_STRING(func, type, table)                         \
        const char *func(type x) {                                               \
                return (size_t) x < ELEMENTSOF(table) - 1 ? (table)[x] : NULL;   \
        }
