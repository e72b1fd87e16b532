/* The finished-install mark (docs/reinstall.md "How kiln recognises a
 * finished node"): the GPT disk GUID (blkid's PTUUID) that a successful run
 * gives every disk it partitioned, readable by anyone with libblkid and no
 * key, and gone only with the partition table. The one place of its format.
 *
 * An RFC 9562 UUIDv8, bytes in the order of its text form:
 *   0-5    the magic 6b 69 6c 6e f1 5d ("kiln", then f15d: finished)
 *   6      0x80 | MARK_FORMAT (version nibble 8, the format in the low nibble)
 *   7      flags: MARK_FLAG_TOKEN when the run was made with a reinstall token
 *   8      0x80 | 6 random bits (variant 10)
 *   9-12   the token's identity: the first 4 bytes of sha256(token), zero without one
 *   13-15  random
 * So a mark reads 6b696c6e-f15d-8101-XXTT-TTTTTTXXXXXX. It holds no secret
 * (the token is no secret either: it is in the progress record in clear). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MARK_MAGIC_LEN 6
#define MARK_FORMAT 1
#define MARK_FLAG_TOKEN 0x01
#define MARK_TOKEN_ID_LEN 4
#define MARK_RANDOM_LEN 4       /* random bytes mark_encode() takes (6 bits of the first are used) */
#define MARK_UUID_LEN 36        /* the text form, without its terminator */

struct mark {
        unsigned format;                        /* MARK_FORMAT, or a later kiln's */
        bool has_token;                         /* the run was made with a reinstall token */
        uint8_t token_id[MARK_TOKEN_ID_LEN];    /* its identity (format 1); all zero without a token */
};

/* The identity of a reinstall token as a mark holds it (sha256, first 4 bytes). */
int mark_token_id(const char *token, uint8_t ret[MARK_TOKEN_ID_LEN]);

/* The mark of a run made with token (NULL: none), from random bytes the
 * caller draws (getrandom), as lower-case UUID text in ret. Pure. */
int mark_encode(const char *token, const uint8_t random[MARK_RANDOM_LEN], char ret[MARK_UUID_LEN + 1]);

/* 1 and *ret when uuid (a PTUUID, any case) is a kiln mark, 0 when it is
 * not (another UUID, another UUIDv8, not a UUID at all, NULL). A later
 * format of the mark is a mark, with no token identity this kiln can read. */
int mark_decode(const char *uuid, struct mark *ret);

/* Whether the mark says its run was made with this token: false for a NULL
 * token, for a mark without a token, and for a format whose identity this
 * kiln cannot read. */
bool mark_has_token(const struct mark *m, const char *token);

/* "installed without a reinstall token", "installed with the reinstall
 * token #1a2b3c4d" (its identity: the mark does not hold the token), or
 * "mark format N of a later kiln"; buf always terminated. */
const char *mark_describe(const struct mark *m, char *buf, size_t len);
