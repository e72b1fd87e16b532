#include "luks.h"

#include "log.h"
#include "paths.h"
#include "procfs.h"

#include <inttypes.h>
#include <libcryptsetup.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/random.h>

#define ARGON2_DEFAULT_MEMORY_KB (1024u * 1024u)
#define LUKS_MAX_KEY (64u * 1024u)

int luks_key_new(const void *data, size_t len, struct luks_key **ret) {
        if (len == 0 || len > LUKS_MAX_KEY)
                return -EINVAL;
        long page = sysconf(_SC_PAGESIZE);
        size_t mapped = (len + (size_t) page - 1) / (size_t) page * (size_t) page;
        struct luks_key *k = calloc(1, sizeof *k);
        if (!k)
                return -ENOMEM;
        void *p = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
                free(k);
                return -ENOMEM;
        }
        (void) madvise(p, mapped, MADV_DONTDUMP);
        if (mlock(p, mapped) < 0) {
                int r = -errno;
                munmap(p, mapped);
                free(k);
                return r;
        }
        k->data = p;
        k->len = len;
        k->mapped = mapped;
        if (data)
                memcpy(k->data, data, len);
        *ret = k;
        return 0;
}

int luks_key_generate(size_t len, struct luks_key **ret) {
        struct luks_key *k;
        int r = luks_key_new(NULL, len, &k);
        if (r < 0)
                return r;
        for (size_t got = 0; got < len;) {
                ssize_t n = getrandom(k->data + got, len - got, 0);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        r = -errno;
                        luks_key_free(k);
                        return r;
                }
                got += (size_t) n;
        }
        *ret = k;
        return 0;
}

int luks_key_generate_hex(size_t bytes, struct luks_key **ret) {
        _cleanup_luks_key_free_ struct luks_key *raw = NULL, *text = NULL;
        int r = luks_key_generate(bytes, &raw);
        if (r < 0 || (r = luks_key_new(NULL, 2 * bytes + 1, &text)) < 0)
                return r;
        hex_encode(raw->data, raw->len, text->data);
        text->len = 2 * bytes;
        *ret = TAKE_PTR(text);
        return 0;
}

struct luks_key *luks_key_free(struct luks_key *k) {
        if (!k)
                return NULL;
        if (k->data) {
                explicit_wipe(k->data, k->mapped);
                munlock(k->data, k->mapped);
                munmap(k->data, k->mapped);
        }
        free(k);
        return NULL;
}

uint32_t luks_flags(bool no_read_workqueue, bool no_write_workqueue, bool discard) {
        uint32_t f = 0;
        if (no_read_workqueue)
                f |= CRYPT_ACTIVATE_NO_READ_WORKQUEUE;
        if (no_write_workqueue)
                f |= CRYPT_ACTIVATE_NO_WRITE_WORKQUEUE;
        if (discard)
                f |= CRYPT_ACTIVATE_ALLOW_DISCARDS;
        return f;
}

int luks_pbkdf_memory_cap(uint64_t *ret) {
        struct procfs_meminfo m;
        int r = procfs_read_meminfo(kiln_paths.procfs, &m);
        if (r < 0)
                return r;
        if (m.available == 0)
                return -ENODATA;
        *ret = m.available / 4;
        return 0;
}

static void luks_log(int level, const char *msg, void *userdata) {
        char line[1024];
        snprintf(line, sizeof line, "%s", msg ? msg : "");
        size_t n = strlen(line);
        while (n > 0 && line[n - 1] == '\n')
                line[--n] = '\0';
        log_debug("libcryptsetup: %s", line);
}

void luks_setup_logging(void) {
        crypt_set_log_callback(NULL, luks_log, NULL);
}

static const char *pbkdf_name(enum spec_pbkdf_type t) {
        switch (t) {
        case SPEC_PBKDF_PBKDF2: return CRYPT_KDF_PBKDF2;
        case SPEC_PBKDF_ARGON2I: return CRYPT_KDF_ARGON2I;
        default: return CRYPT_KDF_ARGON2ID;
        }
}

int luks_cipher_split(const char *spec, char *ret_cipher, size_t clen, char *ret_mode, size_t mlen) {
        const char *dash = strchr(spec, '-');
        if (!dash || !dash[1] || (size_t) (dash - spec) >= clen || strlen(dash + 1) >= mlen)
                return -EINVAL;
        snprintf(ret_cipher, clen, "%.*s", (int) (dash - spec), spec);
        snprintf(ret_mode, mlen, "%s", dash + 1);
        return 0;
}

int luks_format(const char *dev, const struct luks_format_params *p, const struct luks_key *key, uint32_t *ret_memory_kb) {
        char cipher[64], mode[64];
        if (!p->cipher || luks_cipher_split(p->cipher, cipher, sizeof cipher, mode, sizeof mode) < 0)
                return -EINVAL;
        unsigned key_bits = p->key_size;
        if (!key_bits || key_bits % 8)
                return -EINVAL;

        struct crypt_pbkdf_type pbkdf = {
                .type = pbkdf_name(p->pbkdf),
                .hash = "sha256",
                .time_ms = p->time_ms ? p->time_ms : 2000,
                .parallel_threads = p->parallel ? p->parallel : 0,
        };
        bool argon = p->pbkdf != SPEC_PBKDF_PBKDF2;
        if (argon) {
                uint64_t cap;
                int r = luks_pbkdf_memory_cap(&cap);
                if (r < 0)
                        return r;
                uint64_t kb = p->max_memory ? p->max_memory / 1024 : ARGON2_DEFAULT_MEMORY_KB;
                if (kb > cap / 1024)
                        kb = cap / 1024;
                if (kb < 32)
                        return -ENOMEM;
                pbkdf.max_memory_kb = (uint32_t) kb;
                if (!pbkdf.parallel_threads) {
                        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
                        pbkdf.parallel_threads = cpus < 1 ? 1 : cpus > 4 ? 4 : (uint32_t) cpus;
                }
                if (p->iterations) {
                        pbkdf.iterations = p->iterations < 4 ? 4 : p->iterations;
                        pbkdf.flags |= CRYPT_PBKDF_NO_BENCHMARK;
                }
        } else if (p->iterations) {
                pbkdf.iterations = p->iterations;
                pbkdf.flags |= CRYPT_PBKDF_NO_BENCHMARK;
                pbkdf.parallel_threads = 0;
        } else
                pbkdf.parallel_threads = 0;

        _cleanup_crypt_free_ struct crypt_device *cd = NULL;
        int r = crypt_init(&cd, dev);
        if (r < 0)
                return r;
        crypt_set_log_callback(cd, luks_log, NULL);
        r = crypt_set_pbkdf_type(cd, &pbkdf);
        if (r < 0)
                return r;
        struct crypt_params_luks2 params = {
                .sector_size = p->sector_size,
                .label = p->label,
        };
        r = crypt_format(cd, CRYPT_LUKS2, cipher, mode, NULL, NULL, key_bits / 8, &params);
        if (r < 0)
                return r;
        r = crypt_keyslot_add_by_volume_key(cd, CRYPT_ANY_SLOT, NULL, 0, key->data, key->len);
        if (r < 0)
                return r;
        if (p->flags) {
                r = crypt_persistent_flags_set(cd, CRYPT_FLAGS_ACTIVATION, p->flags);
                if (r < 0)
                        return r;
        }
        if (ret_memory_kb)
                *ret_memory_kb = pbkdf.max_memory_kb;
        return 0;
}

int luks_load(const char *dev, struct crypt_device **ret, struct strbuf *err) {
        _cleanup_crypt_free_ struct crypt_device *cd = NULL;
        int r = crypt_init(&cd, dev);
        if (r == 0)
                r = crypt_load(cd, CRYPT_LUKS2, NULL);
        if (r < 0)
                return strbuf_errorf(err, r, "cannot load the LUKS2 header of %s", dev);
        crypt_set_log_callback(cd, luks_log, NULL);
        *ret = TAKE_PTR(cd);
        return 0;
}

int luks_open(const char *dev, const char *name, const struct luks_key *key, uint32_t flags) {
        _cleanup_crypt_free_ struct crypt_device *cd = NULL;
        int r = crypt_init(&cd, dev);
        if (r < 0)
                return r;
        crypt_set_log_callback(cd, luks_log, NULL);
        r = crypt_load(cd, CRYPT_LUKS2, NULL);
        if (r < 0)
                return r;
        r = crypt_activate_by_passphrase(cd, name, CRYPT_ANY_SLOT, key->data, key->len, flags);
        return r < 0 ? r : 0;
}

int luks_close(const char *name) {
        _cleanup_crypt_free_ struct crypt_device *cd = NULL;
        int r = crypt_init_by_name(&cd, name);
        if (r < 0)
                return r;
        r = crypt_deactivate(cd, name);
        return r < 0 ? r : 0;
}
