/* The finished-install mark (agent/plan/mark.h): its bytes, its bits, the
 * token identity it carries, and what is not a mark. */
#include "mark.h"
#include "util.h"
#include "tap.h"

#include <openssl/evp.h>

static const uint8_t rnd[MARK_RANDOM_LEN] = { 0xff, 0xa1, 0xb2, 0xc3 };

static void test_encode(void) {
        char u[MARK_UUID_LEN + 1];
        /* without a token: magic, version 8 + format 1, no flag, variant 10 + 6 random bits, zero id, random */
        CHECK_INT(mark_encode(NULL, rnd, u), 0);
        CHECK_STR(u, "6b696c6e-f15d-8100-bf00-000000a1b2c3");
        /* with one: the flag, and the first 4 bytes of sha256(token) */
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned len = 0;
        CHECK(EVP_Digest("ticket-4711", 11, md, &len, EVP_sha256(), NULL) && len == 32);
        char id[9];
        hex_encode(md, 4, id);
        CHECK_INT(mark_encode("ticket-4711", rnd, u), 0);
        char want[MARK_UUID_LEN + 1];
        snprintf(want, sizeof want, "6b696c6e-f15d-8101-bf%.2s-%.6sa1b2c3", id, id + 2);
        CHECK_STR(u, want);
        fprintf(stderr, "mark of ticket-4711: %s\n", u);
        /* the version nibble and the variant bits, whatever the random bytes */
        static const uint8_t zero[MARK_RANDOM_LEN] = {};
        CHECK_INT(mark_encode(NULL, zero, u), 0);
        CHECK(u[14] == '8' && u[19] == '8');
        CHECK_INT(mark_encode(NULL, rnd, u), 0);
        CHECK(u[14] == '8' && u[19] == 'b');
        uint8_t tid[MARK_TOKEN_ID_LEN];
        CHECK_INT(mark_token_id("ticket-4711", tid), 0);
        CHECK(memcmp(tid, md, 4) == 0);
        CHECK_INT(mark_token_id(NULL, tid), -EINVAL);
}

static void test_decode(void) {
        char u[MARK_UUID_LEN + 1], what[64];
        struct mark m;
        CHECK_INT(mark_encode("ticket-4711", rnd, u), 0);
        CHECK_INT(mark_decode(u, &m), 1);
        CHECK_INT(m.format, MARK_FORMAT);
        CHECK(m.has_token);
        CHECK(mark_has_token(&m, "ticket-4711"));
        CHECK(!mark_has_token(&m, "ticket-4712"));
        CHECK(!mark_has_token(&m, NULL));
        CHECK(strncmp(mark_describe(&m, what, sizeof what), "installed with the reinstall token #", 36) == 0);
        /* blkid prints lower case, sfdisk upper: both are the mark */
        for (char *p = u; *p; p++)
                if (*p >= 'a' && *p <= 'f')
                        *p = (char) (*p - 'a' + 'A');
        CHECK_INT(mark_decode(u, &m), 1);
        CHECK(mark_has_token(&m, "ticket-4711"));

        CHECK_INT(mark_encode(NULL, rnd, u), 0);
        CHECK_INT(mark_decode(u, &m), 1);
        CHECK(!m.has_token);
        CHECK(!mark_has_token(&m, "ticket-4711"));
        CHECK_STR(mark_describe(&m, what, sizeof what), "installed without a reinstall token");

        /* a later format: a mark, with no identity this kiln reads */
        CHECK_INT(mark_decode("6b696c6e-f15d-8201-bf12-345678a1b2c3", &m), 1);
        CHECK_INT(m.format, 2);
        CHECK(!mark_has_token(&m, "ticket-4711"));
        CHECK_STR(mark_describe(&m, what, sizeof what), "mark format 2 of a later kiln");

        /* not marks */
        static const char *const not[] = {
                "7512c179-2e0d-46b9-bbc2-309d86a01e64",         /* libparted's random v4 */
                "6b696c6e-f15d-4101-bf00-000000a1b2c3",         /* the magic, version 4 */
                "6b696c6e-f15d-8101-7f00-000000a1b2c3",         /* the magic, variant 0 */
                "6b696c6e-f15d-8101-cf00-000000a1b2c3",         /* the magic, variant 110 */
                "6b696c6e-f15e-8101-bf00-000000a1b2c3",         /* another v8 (one magic bit off) */
                "12345678-9abc-8def-8123-456789abcdef",         /* someone else's v8 */
                "6b696c6e-f15d-8101-bf00-000000a1b2c",          /* short */
                "6b696c6e-f15d-8101-bf00-000000a1b2c3a",        /* long */
                "6b696c6ef15d-8101-bf00-000000a1b2c3-",         /* dashes moved */
                "6b696c6e-f15d-8101-bf00-000000a1b2g3",         /* not hex */
                "",
                "a1b2c3d4",                                     /* an MBR disk identifier */
                NULL,
        };
        for (const char *const *p = not; *p; p++) {
                m.format = 99;
                CHECK_INT(mark_decode(*p, &m), 0);
                CHECK_INT(m.format, 99);        /* untouched */
        }
        CHECK_INT(mark_decode(NULL, &m), 0);
}

int main(void) {
        test_encode();
        test_decode();
        return TEST_DONE();
}
