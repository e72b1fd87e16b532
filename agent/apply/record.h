/* The progress record on the disks (docs/apply.md "Resume after a
 * failure"): <target>/var/lib/kiln/progress.json, written by the executor
 * as the run goes, read by the next run. Its form (struct resume_record,
 * resume_record_to_json/from_json) is the plan stage's (plan/resume.h: the
 * pure decision reads it); reading and writing the file, and emptying the
 * target root for a new image, are the executor's. */
#pragma once
#include "resume.h"

/* Atomic: a temporary file in the same directory, fsync, rename, fsync of
 * the directory; missing parent directories are made. */
int resume_record_save(const struct resume_record *rec, const char *path);
/* resume_record_from_json()'s errors, or the file's (-ENOENT: no record). */
int resume_record_load(const char *path, struct resume_record *ret);

/* Empty the target root for a new image: everything under it is removed
 * except other filesystems' mount points (and what leads to them) and
 * lost+found. Never crosses into another filesystem. */
int resume_clean_root(const char *target, unsigned *ret_removed);
