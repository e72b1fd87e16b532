/* The benchmark gate's decisions, cipher spec parsing and the report's
 * shapes, on figures set by hand (the measurements themselves run in the rig). */
#include "bench.h"
#include "luks.h"
#include "tap.h"

#include <json-c/json.h>
#include <math.h>
#include <libcryptsetup.h>

static struct bench_io io(double mbps) {
        return (struct bench_io) { .done = true, .block_size = 1 << 20, .depth = 4, .mbps = mbps, .iops = mbps,
                                   .seconds = 0.7, .bytes = (uint64_t) (mbps * 700000), .settled = true,
                                   .mbps_low = mbps, .mbps_high = mbps };
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
        /* a window that did not settle: its halves 350 and 650 MB/s, 500 over all of it */
        r.raw_read.settled = false;
        r.raw_read.mbps_low = 350;
        r.raw_read.mbps_high = 650;
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
                /* the figure is what a floor judges, never the burst: an unsettled window's lower
                 * half; the whole window's rate beside it */
                w = json_object_object_get(v, "seq_read");
                CHECK(json_object_get_double(json_object_object_get(w, "mbps")) == 350.0);
                CHECK(json_object_get_double(json_object_object_get(w, "mbps_window")) == 500.0);
                CHECK(!json_object_get_boolean(json_object_object_get(w, "settled")));
                w = json_object_object_get(v, "seq_write");
                CHECK(json_object_get_double(json_object_object_get(w, "mbps")) == 400.0);
                CHECK(json_object_get_double(json_object_object_get(w, "mbps_window")) == 400.0);
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
        CHECK(strstr(t, "/dev/md/md1                  seq read        350.0        500"));
        CHECK(strstr(t, "overhead of dm-crypt: write 25 %, read 10 %, 4k random read 10 %\n"));
        if (!strstr(t, "<- chosen"))
                fputs(t, stderr);
        bench_result_done(&r);
}

static void test_io_slice(void) {
        /* --slice wins */
        CHECK_U64(bench_io_slice_usec(0, 6, 1000), 1000000);
        CHECK_U64(bench_io_slice_usec(9000000, 3, 7), 7000);
        /* by default at least a 10 ms window (the settle rule lengthens it): the gate's 5 s leave plenty */
        CHECK_U64(bench_io_slice_usec(0, 6, 0), 10000);
        CHECK_U64(bench_io_slice_usec(4880000, 6, 0), 10000);
        /* shortened to an equal share of what is left ... */
        CHECK_U64(bench_io_slice_usec(4979000, 3, 0), 7000);
        /* ... but never below 5 ms, even past the limit */
        CHECK_U64(bench_io_slice_usec(4995000, 3, 0), 5000);
        CHECK_U64(bench_io_slice_usec(60000000, 3, 0), 5000);
        CHECK_U64(bench_io_slice_usec(0, 0, 0), 5000);

        /* the longest window: two thirds of an equal share of what is left of the 420 ms target */
        CHECK_U64(bench_io_budget_usec(0, 6, 10000), 46666);
        CHECK_U64(bench_io_budget_usec(120000, 3, 10000), 66666);
        /* never below the least window, also past the target or with no tests to share */
        CHECK_U64(bench_io_budget_usec(400000, 3, 10000), 10000);
        CHECK_U64(bench_io_budget_usec(900000, 3, 20000), 20000);
        CHECK_U64(bench_io_budget_usec(0, 0, 10000), 10000);
}

/* ---------- the settle rule, on series of (time, bytes) ---------- */

/* A device: the time (us) one request of bs bytes takes, the n-th since the window began. */
typedef uint64_t (*device_fn)(uint64_t t_usec, uint64_t n);

/* A cache: 2000 MB/s (1 MiB in 524 us) for its first 15 ms, then 200 MB/s (5243 us). */
static uint64_t bursty(uint64_t t, uint64_t n) {
        (void) n;
        return t < 15000 ? 524 : 5243;
}

/* 262 MB/s on average (4000 us per MiB), each completion 3500-4500 us apart */
static uint64_t steady(uint64_t t, uint64_t n) {
        (void) t;
        return 3500 + (n * 7919) % 1001;
}

/* What io_run does: a mark per completion (one request in flight: a cycle
 * is one request); stop when the window ends (bench_window_ends). */
static void simulate(device_fn dev, uint64_t min_usec, uint64_t budget, struct bench_settle *st, uint64_t *ret_usec) {
        static struct bench_mark m[100000];
        const uint64_t bs = 1 << 20;
        const struct bench_settle_rule rule = { .min_usec = min_usec, .min_half_bytes = 2 * bs, .cycle_bytes = bs,
                                                .tolerance = BENCH_SETTLE_TOLERANCE };
        size_t n = 0;
        uint64_t t = 0;
        m[n++] = (struct bench_mark) {};
        for (;;) {
                t += dev(t, n);
                m[n] = (struct bench_mark) { .usec = t, .bytes = n * bs };
                n++;
                if (bench_window_ends(m, n, &rule, budget, st) || n == sizeof m / sizeof *m)
                        break;
        }
        *ret_usec = t;
}

/* Four 1 MiB requests in flight on a device that serves two at a time, each
 * in 10 ms (dm-crypt encrypting on two CPUs under QEMU): completions come in
 * pairs, 0.5 ms apart, every 10 ms: 200 MiB/s, 209.7 MB/s. The window
 * starts at the first completion, alone in its batch, as io_run's does. A
 * mark per completion, up to the window's end (cycles of cycle_bytes, or
 * none with 0), or the first past budget with the old rule (at least 2
 * completions). */
static size_t paired(struct bench_mark *m, size_t max, uint64_t cycle, uint64_t budget, uint64_t min_usec,
                     struct bench_settle *st) {
        const uint64_t bs = 1 << 20;
        const struct bench_settle_rule rule = { .min_usec = min_usec, .min_half_bytes = 2 * bs, .cycle_bytes = cycle,
                                                .tolerance = BENCH_SETTLE_TOLERANCE };
        size_t n = 0;
        m[n++] = (struct bench_mark) {};       /* the first of a pair: the window's start */
        for (uint64_t k = 1; n < max; k++) {
                uint64_t t = k % 2 ? 500 + (k / 2) * 10000 : (k / 2) * 10000;      /* its partner, then the next pair */
                m[n] = (struct bench_mark) { .usec = t, .bytes = k * bs };
                n++;
                if (cycle ? bench_window_ends(m, n, &rule, budget, st)
                          : (bench_settle(m, n, &rule, st), t >= budget && k >= 2))
                        break;
        }
        return n;
}

static void test_cycles(void) {
        struct bench_mark m[64];
        struct bench_settle st;
        const double dev = 2.0 * (1 << 20) / 10000;     /* MB/s */
        /* the old window (a 20.25 ms budget): it ended at the completion past it, the second of a pair,
         * and counted 5 requests in 20.5 ms: 1.22x the device */
        size_t n = paired(m, 64, 0, 20250, 12500, &st);
        CHECK_INT((int) n, 6);
        CHECK(st.mbps > dev * 1.2 && st.mbps < dev * 1.25);
        /* whole cycles: 4 requests in 20 ms, the device's rate exactly, ended at the cycle nearest the budget */
        n = paired(m, 64, 4u << 20, 20250, 12500, &st);
        CHECK_INT((int) n, 5);
        CHECK_U64(st.usec, 20000);
        CHECK_U64(st.bytes, 4u << 20);
        CHECK(fabs(st.mbps - dev) < 0.01);
        CHECK(!st.settled && !st.halved);       /* one cycle: nothing to halve */
        CHECK(st.low_mbps == st.mbps && st.high_mbps == st.mbps);
        /* a budget nearer the second cycle: two, halved at the first, both halves the device's rate */
        n = paired(m, 64, 4u << 20, 30250, 12500, &st);
        CHECK_U64(st.usec, 40000);
        CHECK(st.settled && st.halved);
        CHECK(fabs(st.low_mbps - dev) < 0.01 && fabs(st.high_mbps - dev) < 0.01);
        /* the old halves (the same budget), split between the members of a pair, disagreed on the same
         * steady device */
        n = paired(m, 64, 0, 30250, 12500, &st);
        CHECK(!st.settled && st.halved);
        CHECK(st.high_mbps > dev * 1.2);
        /* a batch that crosses a cycle's end: the window ends there, the request past it is the next cycle's */
        struct bench_mark batch[] = { { 0, 0 }, { 4000, 2 << 20 }, { 10000, 5 << 20 }, { 12000, 6 << 20 } };
        const struct bench_settle_rule rule = { .min_usec = 1000, .min_half_bytes = 2 << 20, .cycle_bytes = 4 << 20,
                                                .tolerance = 0.1 };
        CHECK(!bench_window_ends(batch, 2, &rule, 5000, &st));        /* inside the first cycle */
        CHECK(bench_window_ends(batch, 3, &rule, 5000, &st));         /* past its budget, at a cycle's end */
        CHECK_U64(st.bytes, 4u << 20);
        CHECK_U64(st.usec, 10000);
        CHECK(!bench_window_ends(batch, 4, &rule, 5000, &st));        /* not a cycle's end */
        CHECK(!bench_settle(batch, 4, &rule, &st) && st.end == 2 && st.bytes == 4u << 20);
}

static void test_settle(void) {
        struct bench_settle st;
        uint64_t usec;
        /* steady: settles soon after the least window, on the device's rate */
        simulate(steady, 10000, 50000, &st, &usec);
        CHECK(st.settled && st.halved);
        CHECK(usec >= 10000 && usec < 30000);
        CHECK(st.mbps > 262 * 0.9 && st.mbps < 262 * 1.1);
        CHECK(st.high_mbps - st.low_mbps <= BENCH_SETTLE_TOLERANCE * st.high_mbps);

        /* bursty: the old rule (20 ms, 2 completions) read the cache */
        simulate(bursty, 20000, 20000, &st, &usec);
        CHECK(!st.settled);
        CHECK(st.mbps > 1400);          /* what a 20 ms window reported */
        /* a least window that the burst outlasts is fooled: its halves agree on the cache */
        simulate(bursty, 5000, 46666, &st, &usec);
        CHECK(st.settled && st.mbps > 1900 && usec < 15000);
        /* so a sequential test's least window is half its budget (~47 ms in the gate): unsettled, the
         * halves far apart, the lower one the device's own rate */
        simulate(bursty, 46666 / 2, 46666, &st, &usec);
        CHECK(!st.settled && st.halved);
        CHECK(usec > 46666 - 5243 && usec < 46666 + 5243);    /* the request nearest the budget */
        CHECK(st.mbps > 600);           /* the whole window is still mostly the burst ... */
        CHECK(st.low_mbps > 190 && st.low_mbps < 210);  /* ... its second half is the device */
        CHECK(st.high_mbps > 1000);
        /* a floor of 500 MB/s must not pass on the burst: the gate judges the lower bound */
        struct bench_result r = { .chosen = -1 };
        r.crypt_write = (struct bench_io) { .done = true, .block_size = 1 << 20, .depth = 4, .mbps = st.mbps,
                                            .settled = false, .mbps_low = st.low_mbps, .mbps_high = st.high_mbps };
        r.crypt_read = io(600);
        CHECK(bench_floor_mbps(&r.crypt_write) == st.low_mbps);
        struct spec_bench floor = { .present = true, .write_mbps = 500, .read_mbps = 500 };
        _cleanup_strbuf_ struct strbuf why = STRBUF_INIT;
        CHECK_INT(bench_gate(&floor, &r, &why), -ERANGE);
        char want[200];
        snprintf(want, sizeof want,
                 "encrypted sequential write: %.1f MB/s (not settled: the lower bound of its window's halves) is below "
                 "the floor of 500.0 MB/s", st.low_mbps);
        CHECK_STR(strbuf_str(&why), want);
        /* the same figure settled would pass: the verdict turns on settled */
        r.crypt_write.settled = true;
        strbuf_reset(&why);
        CHECK_INT(bench_gate(&floor, &r, &why), 0);
        /* the overhead ceiling: the encrypted lower bound against the raw upper bound */
        r.crypt_write.settled = false;
        r.raw_write = io(1000);
        r.raw_read = io(700);
        r.overhead_write = 1 - st.mbps / 1000;
        r.overhead_read = 1 - 600.0 / 700;
        struct spec_bench ovh = { .present = true, .max_overhead = 0.5 };
        strbuf_reset(&why);
        CHECK_INT(bench_gate(&ovh, &r, &why), -ERANGE);
        snprintf(want, sizeof want, "write overhead of dm-crypt: %.0f %% exceeds the limit of 50 %% (not settled: judged on the bounds)",
                 (1 - st.low_mbps / 1000) * 100);
        CHECK_STR(strbuf_str(&why), want);
        /* the log says so: one line per unsettled figure */
        r.crypt_device = (char *) "/dev/mapper/c";
        strbuf_reset(&why);
        CHECK_INT(bench_unsettled(&r, &why), 0);
        CHECK(strstr(strbuf_str(&why), "not settled within its budget: /dev/mapper/c seq write (window ") == strbuf_str(&why));
        CHECK(strchr(strbuf_str(&why), '\n') == strbuf_str(&why) + why.len - 1);    /* that one only */
        r.crypt_device = NULL;

        /* given time, the burst is diluted: it settles within the tolerance of the device's rate */
        simulate(bursty, 5000000, 10000000, &st, &usec);
        CHECK(st.settled);
        CHECK(usec >= 5000000 && usec < 5006000);
        CHECK(st.mbps < 200 * (1 + BENCH_SETTLE_TOLERANCE));

        /* edge cases: too few marks to halve; a last batch after a stall still makes a second half */
        struct bench_mark two[] = { { 0, 0 }, { 10000, 4 << 20 } };
        const struct bench_settle_rule rule = { .min_usec = 5000, .min_half_bytes = 2 << 20, .tolerance = 0.1 };
        CHECK(!bench_settle(two, 2, &rule, &st) && !st.halved);
        CHECK(st.low_mbps == st.mbps && st.high_mbps == st.mbps);
        CHECK(st.mbps > 419 && st.mbps < 420);  /* 4 MiB in 10 ms */
        struct bench_mark stall[] = { { 0, 0 }, { 1000, 2 << 20 }, { 2000, 4 << 20 }, { 3000, 6 << 20 }, { 40000, 8 << 20 } };
        CHECK(!bench_settle(stall, 5, &rule, &st) && st.halved);
        CHECK(st.low_mbps < 60);        /* 2 MiB over the 37 ms stall */
        CHECK(!bench_settle(stall, 1, &rule, &st) && st.mbps == 0);
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
        test_settle();
        test_cycles();
        return TEST_DONE();
}
