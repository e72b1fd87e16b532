#include "mark.h"

#include "util.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <uuid/uuid.h>

static const uint8_t magic[MARK_MAGIC_LEN] = { 0x6b, 0x69, 0x6c, 0x6e, 0xf1, 0x5d };

int mark_token_id(const char *token, uint8_t ret[MARK_TOKEN_ID_LEN]) {
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned len = 0;
        if (!token)
                return -EINVAL;
        if (!EVP_Digest(token, strlen(token), md, &len, EVP_sha256(), NULL) || len != 32)
                return -EIO;
        memcpy(ret, md, MARK_TOKEN_ID_LEN);
        return 0;
}

int mark_encode(const char *token, const uint8_t random[MARK_RANDOM_LEN], char ret[MARK_UUID_LEN + 1]) {
        uint8_t b[16] = {};
        memcpy(b, magic, MARK_MAGIC_LEN);
        b[6] = 0x80 | MARK_FORMAT;
        b[7] = token ? MARK_FLAG_TOKEN : 0;
        b[8] = 0x80 | (random[0] & 0x3f);
        if (token) {
                int r = mark_token_id(token, b + 9);
                if (r < 0)
                        return r;
        }
        memcpy(b + 13, random + 1, 3);
        uuid_unparse_lower(b, ret);
        return 0;
}

int mark_decode(const char *uuid, struct mark *ret) {
        uint8_t b[16];
        if (!uuid || uuid_parse(uuid, b) < 0 || memcmp(b, magic, MARK_MAGIC_LEN) != 0 || (b[6] >> 4) != 8 || (b[8] >> 6) != 2)
                return 0;
        struct mark m = { .format = b[6] & 0x0f };
        if (m.format == MARK_FORMAT) {
                m.has_token = b[7] & MARK_FLAG_TOKEN;
                if (m.has_token)
                        memcpy(m.token_id, b + 9, MARK_TOKEN_ID_LEN);
        }
        *ret = m;
        return 1;
}

bool mark_has_token(const struct mark *m, const char *token) {
        uint8_t id[MARK_TOKEN_ID_LEN];
        if (!token || m->format != MARK_FORMAT || !m->has_token || mark_token_id(token, id) < 0)
                return false;
        return memcmp(id, m->token_id, MARK_TOKEN_ID_LEN) == 0;
}

const char *mark_describe(const struct mark *m, char *buf, size_t len) {
        char hex[2 * MARK_TOKEN_ID_LEN + 1];
        if (!len)
                return buf;
        if (m->format != MARK_FORMAT)
                snprintf(buf, len, "mark format %u of a later kiln", m->format);
        else if (!m->has_token)
                snprintf(buf, len, "installed without a reinstall token");
        else {
                hex_encode(m->token_id, MARK_TOKEN_ID_LEN, hex);
                snprintf(buf, len, "installed with the reinstall token #%s", hex);
        }
        return buf;
}
