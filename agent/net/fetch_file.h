/* Where `kiln fetch` writes what it fetches: standard output, or a file that
 * is written whole beside its final name and renamed over it only when
 * fetch_file_commit() is called (after the fetch and any sha256 check
 * passed); on failure the file is left untouched. */
#pragma once
#include "fetch.h"

struct fetch_file {
        int fd;                 /* the temporary file, or STDOUT_FILENO */
        bool seekable;          /* a pipe is not: fetch then drops repeated bytes itself */
        char *tmp;              /* "DIR/.BASE.XXXXXX", removed by fetch_file_done() unless renamed */
        const char *path;       /* the final name, or NULL: standard output */
        struct fetch_sink sink; /* what fetch_url() writes through */
};

/* path NULL: standard output. Else the temporary file beside path, 0600,
 * O_CLOEXEC (its name in ret->tmp, for messages). 0 or -errno. */
int fetch_file_open(const char *path, struct fetch_file *ret);
/* The temporary file made the final one: its mode (0666 less the umask),
 * fsync, rename over path. Nothing for standard output. 0 or -errno;
 * *ret_renaming is true when the rename failed (not the write). */
int fetch_file_commit(struct fetch_file *f, bool *ret_renaming);
/* Closes the file; the temporary file is removed unless committed. */
void fetch_file_done(struct fetch_file *f);
