/* The benchmark gate's decisions, cipher spec parsing and the report's
 * shapes, on figures set by hand (the measurements themselves run in the rig). */
#include "bench.h"
#include "luks.h"
#include "tap.h"

#include <json-c/json.h>
#include <libcryptsetup.h>

static struct bench_io io(double mbps) {
        return (struct bench_io) { .done = true, .block_size = 1 << 20, .depth = 4, .mbps = mbps, .iops = mbps,
                                   .seconds = 0.7, .bytes = (uint64_t) (mbps * 700000) };
}

static void fill(struct bench_result *r) {
        *r = (struct bench_result) { .chosen = 0 };
        r->ciphers = calloc(2, sizeof *r->ciphers);
        r->n_ciphers = 2;
        r->ciphers[0] = (struct bench_cipher) { .cipher = strdup("aes-xts-plain64"), .key_size = 512, .sector_size = 4096,
                                                .write = io(800), .read = io(900), .kernel_enc_mbps = 1500,
                                                .kernel_dec_mbps = 1400 };
        r->ciphers[1] = (struct bench_cipher) { .cipher = strdup("xchacha12,aes-adiantum-plain64"), .key_size = 256,
                                                .sector_size = 4096, .error = strdup("dm-crypt could not run it") };
        r->device = strdup("/dev/md/md1");
        r->crypt_device = strdup("/dev/mapper/crypted");
        r->raw_write = io(400);
        r->raw_read = io(500);
        r->raw_rand = io(100);
        r->crypt_write = io(300);
        r->crypt_read = io(450);
        r->crypt_rand = io(90);
        r->overhead_write = 0.25;
        r->overhead_read = 0.10;
        r->overhead_rand = 0.10;
        r->seconds = 6.5;
        r->startup_seconds = 0.0234;
        r->phases[0] = (struct bench_phase) { .name = "kernel check", .start = 0.024, .seconds = 0.0004 };
        r->phases[1] = (struct bench_phase) { .name = "dm: create zero target", .start = 0.0245, .seconds = 0.0051 };
        r->n_phases = 2;
        r->crypt_write.drain_seconds = 0.1094;
        r->crypt_write.warmup_seconds = 0.0316;
        r->crypt_write.window_seconds = 0.0221;
        r->crypt_write.window_ios = 2;
}

static void test_parse(void) {
        char *c = NULL;
        unsigned ks = 0;
        CHECK_INT(bench_parse_cipher("aes-xts-plain64:256", &c, &ks), 0);
        CHECK_STR(c, "aes-xts-plain64");
        CHECK_INT(ks, 256);
        free(c);
        CHECK_INT(bench_parse_cipher("aes-xts-plain64", &c, &ks), 0);
        CHECK_INT(ks, 512);
        free(c);
        CHECK_INT(bench_parse_cipher("xchacha12,aes-adiantum-plain64", &c, &ks), 0);
        CHECK_STR(c, "xchacha12,aes-adiantum-plain64");
        CHECK_INT(ks, 256);
        free(c);
        c = NULL;
        CHECK_INT(bench_parse_cipher("aes", &c, &ks), -EINVAL);
        CHECK_INT(bench_parse_cipher("aes-xts-plain64:300x", &c, &ks), -EINVAL);
        CHECK_INT(bench_parse_cipher("aes-xts-plain64:12", &c, &ks), -EINVAL);
        CHECK_INT(bench_parse_cipher("AES-XTS", &c, &ks), -EINVAL);
        CHECK_INT(bench_parse_cipher("", &c, &ks), -EINVAL);
        CHECK(c == NULL);
}

static void test_gate(void) {
        struct bench_result r;
        fill(&r);
        struct spec_bench pass = { .present = true, .cipher_mbps = 700, .write_mbps = 250, .read_mbps = 400,
                                   .max_overhead = 0.3 };
        _cleanup_strbuf_ struct strbuf why = STRBUF_INIT;
        CHECK_INT(bench_gate(&pass, &r, &why), 0);
        CHECK_INT(why.len, 0);
        CHECK_INT(bench_gate(NULL, &r, &why), 0);

        struct spec_bench fail = { .present = true, .cipher_mbps = 850, .write_mbps = 301, .read_mbps = 400,
                                   .max_overhead = 0.2 };
        CHECK_INT(bench_gate(&fail, &r, &why), -ERANGE);
        CHECK_STR(strbuf_str(&why),
                  "cipher aes-xts-plain64 through dm-crypt: 800.0 MB/s is below the floor of 850.0 MB/s\n"
                  "encrypted sequential write: 300.0 MB/s is below the floor of 301.0 MB/s\n"
                  "write overhead of dm-crypt: 25 % exceeds the limit of 20 %");

        /* floors without figures fail instead of passing silently */
        struct bench_result empty = { .chosen = -1 };
        strbuf_reset(&why);
        struct spec_bench need = { .present = true, .write_mbps = 1, .max_overhead = 0.5 };
        CHECK_INT(bench_gate(&need, &empty, &why), -ERANGE);
        CHECK_STR(strbuf_str(&why), "encrypted sequential write: 0.0 MB/s is below the floor of 1.0 MB/s\n"
                                    "overhead: no raw and encrypted figures to compare");
        CHECK(bench_chosen(&empty) == NULL);
        CHECK_STR(bench_chosen(&r)->cipher, "aes-xts-plain64");
        bench_result_done(&r);
        CHECK(r.ciphers == NULL && r.chosen == -1);
}

static void test_output(void) {
        struct bench_result r;
        fill(&r);
        _cleanup_strbuf_ struct strbuf js = STRBUF_INIT, txt = STRBUF_INIT;
        CHECK_INT(bench_to_json(&r, &js), 0);
        struct json_object *o = json_tokener_parse(strbuf_str(&js)), *v, *w;
        CHECK(o != NULL);
        if (o) {
                CHECK(json_object_object_get_ex(o, "ciphers", &v) && json_object_array_length(v) == 2);
                w = json_object_array_get_idx(v, 0);
                CHECK(json_object_get_boolean(json_object_object_get(w, "chosen")));
                CHECK_INT(json_object_get_int(json_object_object_get(w, "key_size")), 512);
                CHECK(json_object_get_double(json_object_object_get(json_object_object_get(w, "write"), "mbps")) == 800.0);
                w = json_object_array_get_idx(v, 1);
                CHECK_STR(json_object_get_string(json_object_object_get(w, "error")), "dm-crypt could not run it");
                CHECK(json_object_object_get(w, "write") == NULL);
                CHECK(json_object_object_get_ex(o, "overhead", &v));
                CHECK(json_object_get_double(json_object_object_get(v, "write")) == 0.25);
                CHECK(json_object_object_get_ex(o, "raw", &v));
                CHECK_STR(json_object_get_string(json_object_object_get(v, "device")), "/dev/md/md1");
                CHECK(json_object_get_double(json_object_object_get(json_object_object_get(v, "rand_read"), "iops")) == 100.0);
                CHECK(json_object_object_get_ex(o, "kernel_api_missing", &v) && v == NULL);
                /* where the time went: to the millisecond */
                CHECK(json_object_object_get_ex(o, "startup_seconds", &v) && json_object_get_double(v) == 0.023);
                CHECK(json_object_object_get_ex(o, "phases", &v) && json_object_array_length(v) == 2);
                w = json_object_array_get_idx(v, 1);
                CHECK_STR(json_object_get_string(json_object_object_get(w, "name")), "dm: create zero target");
                CHECK(json_object_get_double(json_object_object_get(w, "start")) == 0.025);  /* 0.0245 rounds up */
                CHECK(json_object_get_double(json_object_object_get(w, "seconds")) == 0.005);
                CHECK(json_object_object_get_ex(o, "crypt", &v));
                w = json_object_object_get(v, "seq_write");
                CHECK(json_object_get_double(json_object_object_get(w, "drain_seconds")) == 0.109);
                CHECK(json_object_get_double(json_object_object_get(w, "warmup_seconds")) == 0.032);
                CHECK(json_object_get_double(json_object_object_get(w, "window_seconds")) == 0.022);
                CHECK(json_object_get_int64(json_object_object_get(w, "window_ios")) == 2);
                CHECK(json_object_get_double(json_object_object_get(w, "prep_seconds")) == 0);
                json_object_put(o);
        }
        CHECK_INT(bench_to_text(&r, &txt), 0);
        const char *t = strbuf_str(&txt);
        CHECK(strstr(t, "crypt benchmark (6.5 s)\n") == t);
        CHECK(strstr(t, "aes-xts-plain64                   512   4096 no          800.0      900.0         1500/1400  <- chosen\n"));
        CHECK(strstr(t, "xchacha12,aes-adiantum-plain64    256   4096 no     dm-crypt could not run it\n"));
        CHECK(strstr(t, "/dev/mapper/crypted          seq write       300.0        300"));
        CHECK(strstr(t, "overhead of dm-crypt: write 25 %, read 10 %, 4k random read 10 %\n"));
        if (!strstr(t, "<- chosen"))
                fputs(t, stderr);
        bench_result_done(&r);
}

static void test_io_slice(void) {
        /* --slice wins */
        CHECK_U64(bench_io_slice_usec(0, 6, 1000), 1000000);
        CHECK_U64(bench_io_slice_usec(9000000, 3, 7), 7000);
        /* by default a 20 ms window: the gate's 5 s leave plenty */
        CHECK_U64(bench_io_slice_usec(0, 6, 0), 20000);
        CHECK_U64(bench_io_slice_usec(4880000, 6, 0), 20000);
        /* shortened to an equal share of what is left ... */
        CHECK_U64(bench_io_slice_usec(4955000, 3, 0), 15000);
        /* ... but never below 10 ms, even past the limit */
        CHECK_U64(bench_io_slice_usec(4990000, 3, 0), 10000);
        CHECK_U64(bench_io_slice_usec(60000000, 3, 0), 10000);
        CHECK_U64(bench_io_slice_usec(0, 0, 0), 10000);
}

static struct bench_cipher cand(const char *cipher, unsigned ks, unsigned sector, bool nowq, double mbps) {
        return (struct bench_cipher) { .cipher = strdup(cipher), .key_size = ks, .sector_size = sector,
                                       .no_workqueue = nowq, .write = io(mbps), .read = io(mbps) };
}

/* Tuning's choice is what luksFormat gets, within what the LUKS object allows. */
/* The volume's own values, as the plan hands them to the bench step. */
static const struct bench_luks_choice *own(const struct spec_luks *l) {
        static struct bench_luks_choice o;
        o = (struct bench_luks_choice) { .cipher = l->cipher, .key_size = l->key_size, .sector_size = l->sector_size,
                                         .flags = luks_flags(l->no_read_workqueue, l->no_write_workqueue, l->discard),
                                         .candidate = -1 };
        return &o;
}

static void test_choose(void) {
        struct bench_result r = { .chosen = 0 };
        r.n_ciphers = 7;
        r.ciphers = calloc(r.n_ciphers, sizeof *r.ciphers);
        r.ciphers[0] = cand("aes-xts-plain64", 512, 4096, false, 20);
        r.ciphers[1] = cand("aes-xts-plain64", 256, 4096, false, 30);
        r.ciphers[2] = cand("aes-xts-plain64", 512, 4096, true, 25);
        r.ciphers[3] = cand("aes-xts-plain64", 512, 512, false, 22);
        r.ciphers[4] = cand("aes-xts-plain64", 256, 4096, true, 35);
        r.ciphers[5] = cand("aes-xts-plain64", 256, 512, true, 40);
        r.ciphers[6] = cand("xchacha12,aes-adiantum-plain64", 256, 4096, true, 99);
        free(r.ciphers[6].error);
        r.ciphers[6].error = strdup("dm-crypt could not run it");   /* fastest on paper, but not measured */

        struct spec_luks l = { .id = "crypt0", .cipher = "aes-xts-plain64", .key_size = 512, .sector_size = 4096,
                               .discard = true };
        struct spec_bench tune = { .present = true, .tune = true }, plain = { .present = true };
        struct bench_luks_choice ch;
        const uint32_t nowq = CRYPT_ACTIVATE_NO_READ_WORKQUEUE | CRYPT_ACTIVATE_NO_WRITE_WORKQUEUE;

        /* the spec pins 4096-byte sectors: the fastest 4096 candidate wins, flags added to discard */
        CHECK_INT(bench_choose_for_luks(&tune, own(&l), &r, &ch), 1);
        CHECK_INT(ch.candidate, 4);
        CHECK_INT(r.chosen, 4);
        CHECK_STR(ch.cipher, "aes-xts-plain64");
        CHECK_INT(ch.key_size, 256);
        CHECK_INT(ch.sector_size, 4096);
        CHECK_INT(ch.flags, nowq | CRYPT_ACTIVATE_ALLOW_DISCARDS);

        /* sector size left open: 512-byte sectors may win */
        l.sector_size = 0;
        CHECK_INT(bench_choose_for_luks(&tune, own(&l), &r, &ch), 1);
        CHECK_INT(ch.candidate, 5);
        CHECK_INT(ch.sector_size, 512);

        /* perf flags the spec sets stay on: a candidate with workqueues cannot win */
        r.ciphers[5].write.mbps = r.ciphers[5].read.mbps = 1;
        r.ciphers[1].write.mbps = r.ciphers[1].read.mbps = 50;
        l.no_read_workqueue = true;
        CHECK_INT(bench_choose_for_luks(&tune, own(&l), &r, &ch), 1);
        CHECK_INT(ch.candidate, 4);
        CHECK(ch.flags & CRYPT_ACTIVATE_NO_READ_WORKQUEUE && ch.flags & CRYPT_ACTIVATE_NO_WRITE_WORKQUEUE);
        /* ... and without them it may */
        l.no_read_workqueue = false;
        CHECK_INT(bench_choose_for_luks(&tune, own(&l), &r, &ch), 1);
        CHECK_INT(ch.candidate, 1);
        CHECK_INT(ch.flags, CRYPT_ACTIVATE_ALLOW_DISCARDS);

        /* without tuning: the spec's values, and the gate judges the spec's cipher */
        l.sector_size = 4096;
        r.chosen = 1;
        CHECK_INT(bench_choose_for_luks(&plain, own(&l), &r, &ch), 0);
        CHECK_INT(ch.candidate, -1);
        CHECK_INT(r.chosen, 0);
        CHECK_INT(ch.key_size, 512);
        CHECK_INT(ch.sector_size, 4096);
        CHECK_INT(ch.flags, CRYPT_ACTIVATE_ALLOW_DISCARDS);

        /* tuning with nothing the spec allows measured: the spec's values */
        l.sector_size = 1024;
        CHECK_INT(bench_choose_for_luks(&tune, own(&l), &r, &ch), 0);
        CHECK_INT(ch.candidate, -1);
        CHECK_INT(ch.sector_size, 1024);
        CHECK_STR(ch.cipher, "aes-xts-plain64");
        bench_result_done(&r);
}

int main(void) {
        test_parse();
        test_choose();
        test_gate();
        test_output();
        test_io_slice();
        return TEST_DONE();
}
