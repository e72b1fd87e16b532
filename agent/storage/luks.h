/* LUKS2 with libcryptsetup: format (cipher, key size, sector size, PBKDF
 * with its memory capped to what this machine can spare, performance flags
 * stored in the header), open and close. Keys live in locked, non-dumpable
 * memory and are wiped when freed. */
#pragma once
#include "spec.h"
#include "strbuf.h"
#include "util.h"

#include <libcryptsetup.h>

DEFINE_CLEANUP(crypt_free, struct crypt_device *)
#define _cleanup_crypt_free_ _cleanup_(crypt_freep)

struct luks_key {
        char *data;             /* locked memory; never logged, never in argv or env */
        size_t len;
        size_t mapped;
};

int luks_key_new(const void *data, size_t len, struct luks_key **ret);
/* A random key of len bytes from the kernel's CSPRNG. */
int luks_key_generate(size_t len, struct luks_key **ret);
struct luks_key *luks_key_free(struct luks_key *k);
DEFINE_CLEANUP(luks_key_free, struct luks_key *)
#define _cleanup_luks_key_free_ _cleanup_(luks_key_freep)
/* bytes random bytes as lower-case hex text (2 * bytes characters): a key a
 * person can type at cryptroot's prompt and a pipe carries as one line. */
int luks_key_generate_hex(size_t bytes, struct luks_key **ret);

struct luks_format_params {
        const char *cipher;             /* "aes-xts-plain64" (the spec's, or the benchmark's choice) */
        unsigned key_size;              /* bits */
        unsigned sector_size;           /* 0 = libcryptsetup default */
        const char *label;
        enum spec_pbkdf_type pbkdf;
        unsigned time_ms;               /* 0 = default */
        unsigned iterations;            /* 0 = benchmark */
        uint64_t max_memory;            /* bytes, 0 = default; always capped by luks_pbkdf_memory_cap() */
        unsigned parallel;
        uint32_t flags;                 /* CRYPT_ACTIVATE_* stored as persistent flags */
};

/* The activation flags for luks[].no_read_workqueue, no_write_workqueue, discard. */
uint32_t luks_flags(bool no_read_workqueue, bool no_write_workqueue, bool discard);
/* "aes-xts-plain64" → "aes" + "xts-plain64": the split dm-crypt and
 * libcryptsetup use. -EINVAL without a '-', with an empty mode, or when a
 * part does not fit its buffer. */
int luks_cipher_split(const char *spec, char *ret_cipher, size_t clen, char *ret_mode, size_t mlen);

/* How much memory (bytes) a PBKDF may use here: a quarter of MemAvailable
 * (kiln_paths.procfs/meminfo); -ENODATA if it lists none. */
int luks_pbkdf_memory_cap(uint64_t *ret);

/* Send libcryptsetup's messages to kiln's log at debug level. */
void luks_setup_logging(void);

/* *ret_memory_kb (may be NULL) gets the PBKDF memory actually used. */
int luks_format(const char *dev, const struct luks_format_params *p, const struct luks_key *key, uint32_t *ret_memory_kb);
/* dev's LUKS2 header, loaded (libcryptsetup's messages to kiln's log);
 * err: "cannot load the LUKS2 header of DEV". */
int luks_load(const char *dev, struct crypt_device **ret, struct strbuf *err);
int luks_open(const char *dev, const char *name, const struct luks_key *key, uint32_t flags);
int luks_close(const char *name);
