/* The crypt benchmark gate (issue 5): does this node encrypt fast enough?
 *
 *   bench_raw()    before luksFormat: the candidate ciphers through the real
 *                  dm-crypt path (a temporary plain dm-crypt mapping with a
 *                  random key over a device-mapper `zero` target, O_DIRECT,
 *                  several requests in flight), the in-memory figure
 *                  through AF_ALG beside it when asked (kiln bench; not
 *                  the gate's: no floor judges it) and the kernel has it
 *                  (libcryptsetup's crypt_benchmark() method, time-bounded),
 *                  and the raw device: sequential write and read (1 MiB) and
 *                  4 KiB random read, in [offset, offset+len) — a region the
 *                  caller is about to overwrite anyway;
 *   bench_crypt()  after luksOpen: the same I/O through the dm-crypt device,
 *                  and the overhead against the raw figures;
 *   bench_gate()   the spec's floors decide.
 *
 * Bounded: each sample measures a window after its warm-up that grows
 * until it settles (bench_settle: its halves agree) or its share of the
 * gate's time target (BENCH_GATE_TARGET_USEC) ends it, unsettled, and a
 * floor then judges its lower bound; never more than about 5 s
 * (docs/benchmarks.md). The module is silent; failures come back as -errno
 * with err (strbuf.h; may be NULL) saying why. */
#pragma once
#include "spec.h"
#include "strbuf.h"

#define BENCH_SEQ_BLOCK (1024u * 1024)
#define BENCH_RAND_BLOCK 4096u
/* the cipher samples over the zero target: a quarter of the sequential
 * block, so the warm-up and drain (one request's encryption each, 15-35 ms
 * at 1 MiB under QEMU) cost a quarter as much; 4 in flight keep as many
 * CPUs busy as at 1 MiB (dm-crypt encrypts one request on one CPU) */
#define BENCH_CIPHER_BLOCK (256u * 1024)
#define BENCH_DEPTH 4u                  /* requests in flight (Linux AIO, one thread), by default */
#define BENCH_DEPTH_MAX 16u

/* How kiln bench runs it (kiln apply: the defaults, {} is fine). */
struct bench_options {
        bool write;                     /* also write (destroys the region) */
        unsigned depth;                 /* requests in flight; 0 = BENCH_DEPTH */
        unsigned slice_ms;              /* each dm-crypt and device test runs this long; 0 = the budget's */
        bool device_only;               /* no ciphers: the device tests alone (needs no device-mapper) */
        bool af_alg;                    /* also the AF_ALG figure (kiln bench's; no floor judges it, so
                                         * kiln apply's gate leaves it out) */
};

struct bench_io {
        bool done;
        unsigned block_size, depth;
        uint64_t bytes, ios;
        double seconds;
        double mbps;                    /* MB/s, 10^6 bytes per second, over the whole window
                                         * (--json and the text report give what a floor
                                         * judges as mbps, bench_floor_mbps, and this as
                                         * mbps_window: a figure never reads above what its
                                         * unsettled window's slower half held) */
        double iops;
        double lat_p50_us, lat_p99_us, lat_max_us;
        /* the sample's parts (seconds; `seconds` is all of them): the
         * warm-up to the first completion and the drain after the last
         * resubmission are outside the figure, which is window_ios requests
         * over window_seconds (0 when the window stayed empty: then bytes
         * over all the time); preparation (buffers) before and sorting the
         * latencies after the sample */
        double warmup_seconds, window_seconds, drain_seconds;
        uint64_t window_ios;
        double prep_seconds, teardown_seconds;
        /* the settle rule (bench_settle): settled when the window's two
         * halves agreed; mbps_low/mbps_high are the halves' rates (both
         * mbps when the window was too short to halve); a floor judges an
         * unsettled figure on mbps_low (bench_floor_mbps); budget_seconds is
         * the longest the window could grow */
        bool settled;
        double mbps_low, mbps_high, budget_seconds;
};

/* ---------- the settle rule, a pure function (tests/unit/test-bench.c) ----------
 * A sample's window is a series of marks: the time from the window's start
 * and the bytes completed by then (the first mark is 0, 0). The window
 * grows; it has settled once it is at least min_usec long, each half (split
 * at the mark nearest the middle) holds at least min_half_bytes,
 * and the halves' rates agree within tolerance (a fraction of the larger).
 * A device that bursts (a cache) and then slows reads fast in the first
 * half and slow in the second, so its window grows until the burst is a
 * small part of the whole, or the budget ends it unsettled.
 *
 * Whole cycles of the queue (cycle_bytes: requests in flight x request
 * size; 0 = any mark): the window ends, and is halved, only at a mark that
 * completes a cycle, and counts whole cycles, so that every request slot
 * completed as often in it as every other. A window from one completion to
 * another counts the completions after its start, but the work of the
 * requests that complete first was partly done before it: with 4 requests
 * of 10 ms in flight on two CPUs (dm-crypt under QEMU) completions come in
 * pairs, and a window of 3 of them, from the first of a pair to the second
 * of the next, counts 3 requests in the time of 2 (1.5x). Over whole cycles
 * the counts are exact for a device that completes in order; the
 * completions of the mark's batch past the cycle belong to the next one. */
struct bench_mark {
        uint64_t usec, bytes;
};
struct bench_settle_rule {
        uint64_t min_usec, min_half_bytes;
        uint64_t cycle_bytes;
        double tolerance;
};
#define BENCH_SETTLE_TOLERANCE 0.10
struct bench_settle {
        bool settled, halved;           /* halved: both halves hold enough to have a rate */
        double mbps;                    /* the whole window: bytes over its time (MB/s, 10^6) */
        double low_mbps, high_mbps;     /* the halves' rates (mbps for both when not halved) */
        size_t end;                     /* the mark the window ends at */
        uint64_t usec, bytes;           /* the window: its length, the bytes it counts */
};
/* Fills *ret from marks m[0..n), the window ending at the last mark that
 * completes a cycle (the last mark when none does); returns ret->settled.
 * ret->end is that mark's index, ret->usec and ret->bytes the window it
 * counts. */
bool bench_settle(const struct bench_mark *m, size_t n, const struct bench_settle_rule *rule, struct bench_settle *ret);
/* Whether a sample's window ends at its latest mark m[n-1]: the mark
 * completes a cycle, the window holds min_half_bytes, and it has settled, or
 * it is as near its budget (usec) as the next cycle would be (a slow device
 * ends a cycle before its budget rather than up to a cycle past it). *ret as
 * bench_settle's. */
bool bench_window_ends(const struct bench_mark *m, size_t n, const struct bench_settle_rule *rule, uint64_t budget,
                       struct bench_settle *ret);
/* What a floor judges: mbps when settled, else the lower bound. */
double bench_floor_mbps(const struct bench_io *io);

/* One step of the gate and when it ran, for --json: where the time went. */
#define BENCH_PHASES_MAX 96
struct bench_phase {
        char name[56];
        double start;                   /* seconds after the process started */
        double seconds;
};

struct bench_cipher {
        char *cipher;                   /* "aes-xts-plain64", "xchacha12,aes-adiantum-plain64" */
        unsigned key_size;              /* bits */
        unsigned sector_size;           /* dm-crypt sector size, 512 or 4096 */
        bool no_workqueue;              /* no_read_workqueue + no_write_workqueue */
        struct bench_io write, read;    /* through dm-crypt over the zero target */
        double kernel_enc_mbps, kernel_dec_mbps;   /* AF_ALG, as crypt_benchmark() measures; 0 = not measured */
        char *error;                    /* this candidate could not be measured */
};

struct bench_io_engine;                 /* bench.c's Linux AIO context and buffers */

struct bench_result {
        struct bench_cipher *ciphers; size_t n_ciphers;
        int chosen;                     /* index into ciphers of the fastest allowed; -1 = none */
        char *kernel_api_missing;       /* why there are no AF_ALG figures; NULL = there are */
        char *device;                   /* the raw device */
        uint64_t offset, len;
        struct bench_io raw_write, raw_read, raw_rand;
        char *crypt_device;
        struct bench_io crypt_write, crypt_read, crypt_rand;
        double overhead_write, overhead_read, overhead_rand;  /* 1 - crypt/raw, when both ran */
        uint64_t start_usec;            /* when bench_raw began (bounds the whole gate) */
        uint64_t leg_start_usec, leg_spent_usec;   /* when this bench_raw or bench_crypt began; the gate's time before it */
        unsigned depth;                 /* requests in flight, for bench_crypt as for bench_raw */
        unsigned slice_ms;              /* 0 = from the time budget */
        double cipher_seconds;          /* of which the ciphers (dm-crypt and AF_ALG) */
        double setup_seconds;           /* of those: device-mapper set-up (zero target, crypt table loads) and removal */
        double dm_sample_seconds;       /* of those: the dm-crypt samples */
        double alg_seconds;             /* of those: the AF_ALG figures */
        double seconds;                 /* time spent so far in bench_raw + bench_crypt */
        double startup_seconds;         /* process start (exec) to bench_raw; < 0 = unknown */
        uint64_t process_start_usec;    /* now_usec() clock: when the process started (phases count from it) */
        struct bench_phase phases[BENCH_PHASES_MAX];
        size_t n_phases;
        struct bench_io_engine *engine; /* bench_raw's, reused by bench_crypt, which frees it (else bench_result_done) */
};

void bench_result_done(struct bench_result *res);

/* 0 if this kernel has device-mapper with dm-crypt's prerequisites; else
 * -ENODEV and err (may be NULL) names what is missing, including AF_ALG. */
int bench_check_kernel(struct strbuf *err);

/* policy may be NULL (defaults: aes-xts-plain64:512, no tuning, no floors).
 * device may be NULL: ciphers only. len 0: ciphers only, no raw device I/O.
 * o may be NULL: kiln apply's (writes, BENCH_DEPTH); kiln bench on its own
 * reads only unless o->write. */
int bench_raw(const struct spec_bench *policy, const char *device, uint64_t offset, uint64_t len,
              const struct bench_options *o, struct bench_result *res, struct strbuf *err);
/* The dm-crypt device opened over res->device; the same region size from offset. */
int bench_crypt(const struct spec_bench *policy, const char *crypt_device, uint64_t offset, uint64_t len,
                const struct bench_options *o, struct bench_result *res, struct strbuf *err);
/* `kiln bench` on its own: bench_raw() (device NULL: the ciphers only, len
 * then ignored), then over crypt_device (may be NULL) bench_crypt(). */
int bench_run(const struct spec_bench *policy, const char *device, const char *crypt_device, uint64_t offset,
              uint64_t len, const struct bench_options *o, struct bench_result *res, struct strbuf *err);
/* No cipher named: *ciphers gets the one a LUKS object gets when its spec
 * names none ("aes-xts-plain64:512"). Nothing if *ciphers is set; 0 or -ENOMEM. */
int bench_default_ciphers(char ***ciphers);
/* 0 if every floor in the policy is met; -ERANGE and *why (appended, one
 * reason per line) otherwise. policy->on_fail is the caller's to apply. */
int bench_gate(const struct spec_bench *policy, const struct bench_result *res, struct strbuf *why);

/* The candidate chosen by bench_raw (what luksFormat should use with tune), or NULL. */
const struct bench_cipher *bench_chosen(const struct bench_result *res);

/* What luksFormat and the open use for one LUKS object. */
struct bench_luks_choice {
        const char *cipher;             /* borrowed from res or from the spec */
        unsigned key_size;              /* bits */
        unsigned sector_size;           /* 0 = libcryptsetup's default */
        uint32_t flags;                 /* CRYPT_ACTIVATE_*: persistent flags and the open's */
        int candidate;                  /* index into res->ciphers this came from; -1 = the spec's values */
};

/* The LUKS parameters after bench_raw for a volume whose own values (the
 * spec's, as the plan hands them over) are `own` (candidate -1). Without
 * policy->tune: own, and res->chosen becomes the candidate measured with its
 * cipher and key size (so the gate judges what will be used). With tune: the
 * fastest measured candidate that own allows -- its cipher and key size are
 * from the candidate list (the allowed list), its sector size is own's when
 * own sets one, and the workqueue flags own sets stay on (tuning may add
 * them, never drop them); it becomes res->chosen. Returns 1 when *ret is a
 * tuned choice, 0 when it is own (no tuning, or no measured candidate own
 * allows). */
int bench_choose_for_luks(const struct spec_bench *policy, const struct bench_luks_choice *own, struct bench_result *res,
                          struct bench_luks_choice *ret);

int bench_to_json(const struct bench_result *res, struct strbuf *out);
int bench_to_text(const struct bench_result *res, struct strbuf *out);
/* One line per figure that has not settled within its budget (what a floor
 * judges it on); nothing when all have. bench_to_text ends with these. */
int bench_unsettled(const struct bench_result *res, struct strbuf *out);

/* One device test's least window (microseconds): slice_ms when set, else
 * an equal share of what is left of the gate's 5 s after spent_usec among
 * n_tests, at most 10 ms and at least 5 ms (the settle rule lengthens it). */
uint64_t bench_io_slice_usec(uint64_t spent_usec, unsigned n_tests, unsigned slice_ms);
/* One device test's longest window (microseconds), for the settle rule:
 * two thirds (the rest is its warm-up and drain) of an equal share among
 * n_tests of what is left of the gate's time target after spent_usec (the
 * gate's own time so far), never below min_usec (the least window). The
 * target: 0.25x of `cryptsetup benchmark` for one cipher (at least 2 x 1 s
 * of buffers, ~2.1 s in the rig) less the process's start and exit. */
#define BENCH_GATE_TARGET_USEC (420u * 1000)
uint64_t bench_io_budget_usec(uint64_t spent_usec, unsigned n_tests, uint64_t min_usec);

/* "aes-xts-plain64:512" → cipher "aes-xts-plain64", 512 (default key size 512,
 * 256 for adiantum). -EINVAL on garbage. */
int bench_parse_cipher(const char *s, char **ret_cipher, unsigned *ret_key_size);
