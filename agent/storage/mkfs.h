/* Filesystems through their mkfs programs (exec with argv). */
#pragma once
#include "spec.h"
#include "strbuf.h"

/* options: extra argv from the spec, NULL-terminated (may be NULL). */
int mkfs_argv(enum spec_fs_type type, const char *dev, const char *label, char *const *options, char ***ret);
int mkfs_make(enum spec_fs_type type, const char *dev, const char *label, char *const *options, struct strbuf *err);
