#include "bench.h"
#include "luks.h"
#include "paths.h"
#include "procfs.h"

#include <fcntl.h>
#include "json.h"
#include <libcryptsetup.h>
#include <libdevmapper.h>
#include <math.h>
#include <linux/aio_abi.h>
#include <linux/if_alg.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>

#ifndef AF_ALG
#define AF_ALG 38
#endif
#ifndef SOL_ALG
#define SOL_ALG 279
#endif

/* Time budget (microseconds from the start of bench_raw). Each sample has a
 * warm-up, a measured window and a drain (io_run); the slices below are the
 * windows' least length. Each dm-crypt candidate writes and reads (the first
 * always runs; with tuning the rest stop at CIPHER_PHASE_END, variants
 * first); the AF_ALG figure encrypts and decrypts for ALG_SLICE each after
 * one untimed buffer (once per cipher and key size); the six device tests get IO_SLICE each,
 * shortened to what is left of GATE_LIMIT (never below IO_SLICE_MIN). A
 * window then grows until it settles (each half holds at least
 * WINDOW_MIN_IOS completions and the halves' rates agree within
 * BENCH_SETTLE_TOLERANCE), so a slow path (a 1 MiB request through dm-crypt
 * takes 15-40 ms under QEMU) or a bursty device gets a longer one, and a
 * steady fast one (a disk, 4 KiB reads) no more than it needs; at most its
 * budget (a device test: bench_io_budget_usec; a dm-crypt/zero sample:
 * CIPHER_BUDGET), past which it stops unsettled. A sample stops issuing at
 * SAMPLE_CAP whatever its window holds. --slice sets every least length. */
#define CIPHER_SLICE_USEC (15u * 1000)
#define ALG_SLICE_USEC (20u * 1000)
#define CIPHER_PHASE_END_USEC (1500u * 1000)
#define IO_SLICE_USEC (10u * 1000)
#define IO_SLICE_MIN_USEC (5u * 1000)
#define WINDOW_MIN_IOS 2u
#define SAMPLE_CAP(usec) ((usec) * 10 > 250000u ? (usec) * 10 : 250000u)
#define GATE_LIMIT_USEC (5000u * 1000)
#define ALG_BUFFER (1024u * 1024)       /* as `cryptsetup benchmark`: 1 MiB ... */
#define ALG_REQUEST (64u * 1024)        /* ... in 64 KiB requests, one IV each */
#define ZERO_SECTORS (2ull * 1024 * 1024 * 2)  /* a 2 GiB zero target: costs nothing */
#define LAT_SAMPLES (256u * 1024)     /* latencies kept per test (4k random reads: ~30k/s at most here) */
#define MARKS_MAX (64u * 1024)        /* settle marks kept per test, one per batch of completions */
#define CIPHER_BUDGET(usec) ((usec) * 3)        /* a dm-crypt/zero sample's longest window */

/* ---------- result lifecycle ---------- */

static void engine_free(struct bench_io_engine **e);

void bench_result_done(struct bench_result *res) {
        for (size_t i = 0; i < res->n_ciphers; i++) {
                free(res->ciphers[i].cipher);
                free(res->ciphers[i].error);
        }
        free(res->ciphers);
        free(res->kernel_api_missing);
        free(res->device);
        free(res->crypt_device);
        engine_free(&res->engine);
        *res = (struct bench_result) { .chosen = -1 };
}

const struct bench_cipher *bench_chosen(const struct bench_result *res) {
        if (res->chosen < 0 || (size_t) res->chosen >= res->n_ciphers)
                return NULL;
        return &res->ciphers[res->chosen];
}

static double cipher_score(const struct bench_cipher *c);

/* Record one step [t0, now] of the gate (silently dropped past the maximum). */
_printf_(3, 4) static void phase(struct bench_result *res, uint64_t t0, const char *fmt, ...) {
        uint64_t t1 = now_usec();
        if (res->n_phases >= BENCH_PHASES_MAX)
                return;
        struct bench_phase *ph = &res->phases[res->n_phases++];
        va_list ap;
        va_start(ap, fmt);
        (void) vsnprintf(ph->name, sizeof ph->name, fmt, ap);
        va_end(ap);
        uint64_t base = res->process_start_usec ? res->process_start_usec : res->start_usec;
        ph->start = t0 >= base ? (double) (t0 - base) / 1e6 : 0;
        ph->seconds = (double) (t1 - t0) / 1e6;
}

int bench_choose_for_luks(const struct spec_bench *policy, const struct bench_luks_choice *own, struct bench_result *res,
                          struct bench_luks_choice *ret) {
        const char *cipher = own->cipher;
        unsigned key_size = own->key_size;
        uint32_t spec_flags = own->flags;
        bool spec_nowq = own->flags & (CRYPT_ACTIVATE_NO_READ_WORKQUEUE | CRYPT_ACTIVATE_NO_WRITE_WORKQUEUE);
        int best = -1;
        double best_score = -1;
        for (size_t i = 0; i < res->n_ciphers; i++) {
                const struct bench_cipher *c = &res->ciphers[i];
                double s = cipher_score(c);
                if (s < 0)
                        continue;
                if (!(policy && policy->tune)) {
                        if (streq(c->cipher, cipher) && c->key_size == key_size) {
                                best = (int) i;
                                break;
                        }
                        continue;
                }
                if (own->sector_size && c->sector_size != own->sector_size)
                        continue;
                if (spec_nowq && !c->no_workqueue)
                        continue;
                if (s > best_score) {
                        best_score = s;
                        best = (int) i;
                }
        }
        if (best >= 0)
                res->chosen = best;
        if (!(policy && policy->tune) || best < 0) {
                *ret = (struct bench_luks_choice) { .cipher = cipher, .key_size = key_size,
                                                    .sector_size = own->sector_size, .flags = spec_flags,
                                                    .candidate = -1 };
                return 0;
        }
        const struct bench_cipher *c = &res->ciphers[best];
        uint32_t flags = spec_flags;
        if (c->no_workqueue)
                flags |= CRYPT_ACTIVATE_NO_READ_WORKQUEUE | CRYPT_ACTIVATE_NO_WRITE_WORKQUEUE;
        *ret = (struct bench_luks_choice) { .cipher = c->cipher, .key_size = c->key_size, .sector_size = c->sector_size,
                                            .flags = flags, .candidate = best };
        return 1;
}

/* ---------- kernel checks ---------- */

/* /proc/misc lists "device-mapper" once dm-mod is loaded. (The node
 * /dev/mapper/control proves nothing: libdevmapper creates it on demand.) */
static bool have_device_mapper(void) {
        return procfs_misc_has(kiln_paths.procfs, "device-mapper") > 0;
}

#define AF_ALG_MISSING "no AF_ALG sockets (CONFIG_CRYPTO_USER_API_SKCIPHER) for the in-memory cipher figure (libcryptsetup's crypt_benchmark() method)"

static bool have_af_alg(void) {
        int fd = socket(AF_ALG, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return false;
        close(fd);
        return true;
}

int bench_check_kernel(struct strbuf *err) {
        if (have_device_mapper())
                return 0;
        bool alg = have_af_alg();
        return strbuf_errorf(err, -ENODEV, "the kernel has no device-mapper (no 'device-mapper' in %s/misc; dm-mod and "
                                           "dm-crypt are needed)%s",
                             kiln_paths.procfs, alg ? "" : " and " AF_ALG_MISSING);
}

/* ---------- cipher specs ---------- */

int bench_parse_cipher(const char *s, char **ret_cipher, unsigned *ret_key_size) {
        if (strempty(s) || strlen(s) > 128)
                return -EINVAL;
        const char *colon = strchr(s, ':');
        size_t n = colon ? (size_t) (colon - s) : strlen(s);
        if (n == 0 || !memchr(s, '-', n))
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if (!(s[i] == '-' || s[i] == ',' || s[i] == '_' || (s[i] >= '0' && s[i] <= '9') ||
                      (s[i] >= 'a' && s[i] <= 'z')))
                        return -EINVAL;
        unsigned ks = spec_cipher_key_size(s);
        if (colon) {
                int r = safe_atou(colon + 1, &ks);
                if (r < 0)
                        return r;
                if (ks == 0 || ks % 8 != 0 || ks > 1024)
                        return -EINVAL;
        }
        char *c = strndup(s, n);
        if (!c)
                return -ENOMEM;
        *ret_cipher = c;
        *ret_key_size = ks;
        return 0;
}

/* ---------- the I/O engine: Linux AIO on an O_DIRECT descriptor ----------
 *
 * One thread keeps `depth` requests in flight with io_submit/io_getevents,
 * resubmitting each slot as soon as it completes -- the model of fio's
 * reference run (--ioengine=libaio --iodepth=N --numjobs=1), so "queue depth
 * N" means the same load on both sides. (libaio's io_submit & co. are
 * one-line wrappers around these system calls; calling them directly keeps
 * the static initramfs build free of another library.) Sequential I/O is one
 * stream: each new request takes the next block after the last one issued. */

struct io_slot {
        struct iocb cb;
        void *buf;
        uint64_t t_submit;
};

static uint64_t xorshift(uint64_t *s) {
        uint64_t x = *s;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        return *s = x;
}

static int cmp_u32(const void *a, const void *b) {
        uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;
        return x < y ? -1 : x > y;
}

static int aio_submit_one(aio_context_t ctx, struct iocb *cb) {
        struct iocb *list[1] = { cb };
        for (;;) {
                long k = syscall(SYS_io_submit, ctx, 1L, list);
                if (k == 1)
                        return 0;
                if (k < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                return k < 0 ? -errno : -EIO;
        }
}

/* What the samples of bench_raw and then bench_crypt share, set up once:
 * the AIO context (io_destroy waits for an RCU grace period, ~30 ms under
 * QEMU, so one per sample cost that every time), the buffers (filled with
 * random data once, before the first write: 4 MiB of xorshift is another
 * ~30 ms under TCG) and the latency array. */
struct bench_io_engine {
        aio_context_t ctx;
        unsigned depth;
        bool filled;
        uint64_t seed;
        void *buf[BENCH_DEPTH_MAX];     /* BENCH_SEQ_BLOCK each */
        uint32_t *lat;
        struct bench_mark *marks;       /* MARKS_MAX */
};

static void engine_done(struct bench_io_engine *e) {
        if (e->ctx)
                (void) syscall(SYS_io_destroy, e->ctx);
        for (unsigned i = 0; i < BENCH_DEPTH_MAX; i++)
                free(e->buf[i]);
        free(e->lat);
        free(e->marks);
        *e = (struct bench_io_engine) {};
}

static int engine_init(struct bench_io_engine *e, unsigned depth);

static void engine_free(struct bench_io_engine **e) {
        if (*e) {
                engine_done(*e);
                free(*e);
                *e = NULL;
        }
}

/* res->engine, made on first use (or when the depth changed) */
static int engine_get(struct bench_result *res, struct bench_io_engine **ret) {
        if (res->engine && res->engine->depth == res->depth) {
                *ret = res->engine;
                return 0;
        }
        engine_free(&res->engine);
        struct bench_io_engine *e = calloc(1, sizeof *e);
        if (!e)
                return -ENOMEM;
        int r = engine_init(e, res->depth);
        if (r < 0) {
                free(e);
                return r;
        }
        *ret = res->engine = e;
        return 0;
}

static int engine_init(struct bench_io_engine *e, unsigned depth) {
        *e = (struct bench_io_engine) { .depth = depth };
        if (depth == 0 || depth > BENCH_DEPTH_MAX)
                return -EINVAL;
        if (getrandom(&e->seed, sizeof e->seed, 0) != sizeof e->seed)
                e->seed = now_usec();
        e->seed |= 1;
        if (!(e->lat = malloc(LAT_SAMPLES * sizeof *e->lat)) || !(e->marks = malloc(MARKS_MAX * sizeof *e->marks))) {
                engine_done(e);
                return -ENOMEM;
        }
        for (unsigned i = 0; i < depth; i++)
                if (posix_memalign(&e->buf[i], 4096, BENCH_SEQ_BLOCK) != 0) {
                        e->buf[i] = NULL;
                        engine_done(e);
                        return -ENOMEM;
                }
        if (syscall(SYS_io_setup, (long) depth, &e->ctx) < 0) {
                int r = -errno;
                e->ctx = 0;
                engine_done(e);
                return r;
        }
        return 0;
}

/* The write buffers, once per engine: incompressible data, so no device
 * gets an easy ride: one random block, and the other buffers that block
 * rotated by 8 bytes each (every 4 KiB block differs; a quarter of the cost
 * of 4 MiB of xorshift under TCG). */
static void engine_fill(struct bench_io_engine *e) {
        uint8_t *b0 = e->buf[0];
        for (size_t k = 0; k + 8 <= BENCH_SEQ_BLOCK; k += 8) {
                uint64_t v = xorshift(&e->seed);
                memcpy(b0 + k, &v, 8);
        }
        for (unsigned i = 1; i < e->depth; i++) {
                size_t sh = 8u * i;
                memcpy(e->buf[i], b0 + sh, BENCH_SEQ_BLOCK - sh);
                memcpy((uint8_t *) e->buf[i] + BENCH_SEQ_BLOCK - sh, b0, sh);
        }
        e->filled = true;
}

/* ---------- the settle rule ---------- */

/* The bytes mark m counts: its whole cycles (all of them when cycle is 0). */
static uint64_t whole(const struct bench_mark *m, uint64_t cycle) {
        return cycle ? m->bytes - m->bytes % cycle : m->bytes;
}

/* m[i] completes a cycle: its batch crossed into the next one (m[0], the start, always) */
static bool cycle_end(const struct bench_mark *m, size_t i, uint64_t cycle) {
        return i == 0 || whole(&m[i], cycle) > whole(&m[i - 1], cycle);
}

static double rate(const struct bench_mark *a, const struct bench_mark *b, uint64_t cycle) {
        return b->usec > a->usec ? (double) (whole(b, cycle) - whole(a, cycle)) / (double) (b->usec - a->usec) : 0; /* B/us = MB/s */
}

bool bench_settle(const struct bench_mark *m, size_t n, const struct bench_settle_rule *rule, struct bench_settle *ret) {
        *ret = (struct bench_settle) {};
        if (n < 2)
                return false;
        uint64_t cycle = rule->cycle_bytes;
        size_t end = n - 1;
        while (end > 0 && !cycle_end(m, end, cycle))
                end--;
        if (end == 0) {         /* not a cycle yet: the window as it is */
                end = n - 1;
                cycle = 0;
        }
        const struct bench_mark *first = &m[0], *last = &m[end];
        ret->end = end;
        ret->usec = last->usec - first->usec;
        ret->bytes = whole(last, cycle) - whole(first, cycle);
        ret->mbps = ret->low_mbps = ret->high_mbps = rate(first, last, cycle);
        if (end < 2)
                return false;
        /* the first mark at or past the middle (marks are in time order) ... */
        uint64_t mid = first->usec + (last->usec - first->usec) / 2;
        size_t lo = 1, hi = end;
        while (lo < hi) {
                size_t k = lo + (hi - lo) / 2;
                if (m[k].usec >= mid)
                        hi = k;
                else
                        lo = k + 1;
        }
        /* or the one before it, when that is nearer (a last batch after a
         * stall longer than half the window still makes a second half);
         * then the cycle's end nearest to it (none: not halved) */
        if (lo > 1 && mid - m[lo - 1].usec < m[lo].usec - mid)
                lo--;
        size_t before = lo, after = lo;
        while (before > 0 && !cycle_end(m, before, cycle))
                before--;
        while (after < end && !cycle_end(m, after, cycle))
                after++;
        if (before == 0)
                lo = after;
        else if (after == end)
                lo = before;
        else
                lo = mid - m[before].usec <= m[after].usec - mid ? before : after;
        const struct bench_mark *h = &m[lo];
        if (lo == 0 || h == last || whole(h, cycle) - whole(first, cycle) < rule->min_half_bytes ||
            whole(last, cycle) - whole(h, cycle) < rule->min_half_bytes)
                return false;
        double a = rate(first, h, cycle), b = rate(h, last, cycle);
        ret->halved = true;
        ret->low_mbps = fmin(a, b);
        ret->high_mbps = fmax(a, b);
        ret->settled = last->usec - first->usec >= rule->min_usec && ret->high_mbps > 0 &&
                       ret->high_mbps - ret->low_mbps <= rule->tolerance * ret->high_mbps;
        return ret->settled;
}

bool bench_window_ends(const struct bench_mark *m, size_t n, const struct bench_settle_rule *rule, uint64_t budget,
                       struct bench_settle *ret) {
        if (n < 2 || !cycle_end(m, n - 1, rule->cycle_bytes)) {
                *ret = (struct bench_settle) {};
                return false;
        }
        if (bench_settle(m, n, rule, ret))
                return true;
        uint64_t cycle = rule->cycle_bytes, w = ret->usec;
        if (ret->end != n - 1 || ret->bytes < rule->min_half_bytes || ret->bytes < cycle)
                return false;
        /* the next cycle would end one cycle's time (at this window's pace) later */
        uint64_t next = cycle ? w / (ret->bytes / cycle) : 0;
        return w >= budget || budget - w <= next / 2;
}

double bench_floor_mbps(const struct bench_io *io) {
        return io->settled ? io->mbps : io->mbps_low;
}

/* Run one pattern on an open O_DIRECT fd: a sample in three parts, as fio's
 * --ramp_time and --runtime:
 *  - warm-up, from the first submission to the first completion: the queue
 *    fills, first-touch costs (under QEMU the first 1 MiB request through
 *    dm-crypt takes 1.5-3 times as long as the ones after it). Not counted.
 *  - window, from the first completion to the completion at which the
 *    window has settled (bench_settle: at least usec long, halves of at
 *    least WINDOW_MIN_IOS completions each agreeing within
 *    BENCH_SETTLE_TOLERANCE), or, unsettled, is as near its budget as it
 *    can be and holds at least WINDOW_MIN_IOS later completions
 *    (bench_window_ends); it ends, and is halved, only where a whole cycle
 *    of the queue (depth requests) has completed since it began: every
 *    completed slot is resubmitted at once, so the queue stays full. The
 *    figure is what completed in it over its length. The
 *    requests completed together with the first one are not in it (devices
 *    complete in batches: a window from batch to batch counts whole batches).
 *  - drain: nothing more is submitted and what is in flight completes. Not
 *    counted (the queue is no longer full).
 * A sample that reaches SAMPLE_CAP(budget) stops issuing with what its window
 * holds; one whose window is empty then falls back to bytes over all its
 * time. Latencies are those of the window's requests. */
static int io_run(struct bench_io_engine *e, int fd, bool write, bool random, unsigned bs, uint64_t base, uint64_t span,
                  uint64_t usec, uint64_t budget, struct bench_io *ret) {
        unsigned depth = e->depth;
        if (budget < usec)
                budget = usec;
        if (span < bs || depth == 0 || bs > BENCH_SEQ_BLOCK)
                return -EINVAL;
        if (!e->ctx && syscall(SYS_io_setup, (long) depth, &e->ctx) < 0) {      /* after a failed sample */
                e->ctx = 0;
                return -errno;
        }
        span -= span % bs;
        uint64_t blocks = span / bs, cursor = 0;
        struct io_slot slot[BENCH_DEPTH_MAX] = {};
        uint64_t t_prep = now_usec();
        uint32_t *lat = e->lat;
        aio_context_t ctx = e->ctx;
        int r = 0;
        if (write && !e->filled)
                engine_fill(e);
        for (unsigned i = 0; i < depth; i++)
                slot[i].buf = e->buf[i];
        uint64_t ios = 0, n_lat = 0, t0 = now_usec(), cap = t0 + SAMPLE_CAP(budget);
        uint64_t t_first = 0, t_stop = 0, win_ios = 0;
        struct bench_mark *marks = e->marks;
        size_t n_marks = 0;
        const struct bench_settle_rule rule = { .min_usec = usec, .min_half_bytes = (uint64_t) WINDOW_MIN_IOS * bs,
                                                .cycle_bytes = (uint64_t) depth * bs,
                                                .tolerance = BENCH_SETTLE_TOLERANCE };
        struct bench_settle st = {};
        double prep = (double) (t0 - t_prep) / 1e6;
        unsigned inflight = 0;
        for (unsigned i = 0; i < depth && r >= 0; i++) {
                slot[i].cb = (struct iocb) {
                        .aio_data = i,
                        .aio_lio_opcode = write ? IOCB_CMD_PWRITE : IOCB_CMD_PREAD,
                        .aio_fildes = (uint32_t) fd,
                        .aio_buf = (uint64_t) (uintptr_t) slot[i].buf,
                        .aio_nbytes = bs,
                };
                uint64_t off = random ? (xorshift(&e->seed) % blocks) * bs : (cursor++ % blocks) * bs;
                slot[i].cb.aio_offset = (int64_t) (base + off);
                slot[i].t_submit = now_usec();
                if ((r = aio_submit_one(ctx, &slot[i].cb)) >= 0)
                        inflight++;
        }
        while (inflight > 0) {
                struct io_event ev[BENCH_DEPTH_MAX];
                long k = syscall(SYS_io_getevents, ctx, 1L, (long) inflight, ev, NULL);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0) {
                        r = k < 0 ? -errno : -EIO;
                        break;
                }
                uint64_t t = now_usec();
                bool counted = t_first && !t_stop;      /* inside the window */
                if (!t_first) {
                        t_first = t;
                        marks[n_marks++] = (struct bench_mark) {};
                }
                for (long x = 0; x < k; x++) {
                        struct io_slot *sl = &slot[ev[x].data];
                        inflight--;
                        if (ev[x].res != (int64_t) bs) {
                                if (r >= 0)
                                        r = ev[x].res < 0 ? (int) ev[x].res : -EIO;
                                continue;
                        }
                        ios++;
                        if (counted) {
                                win_ios++;
                                uint64_t d = t - sl->t_submit;
                                if (n_lat < LAT_SAMPLES)
                                        lat[n_lat++] = d > UINT32_MAX ? UINT32_MAX : (uint32_t) d;
                        }
                }
                bool ends = false;
                if (counted && n_marks < MARKS_MAX) {
                        marks[n_marks++] = (struct bench_mark) { .usec = t - t_first, .bytes = win_ios * bs };
                        ends = bench_window_ends(marks, n_marks, &rule, budget, &st);
                }
                if (!t_stop && (r < 0 || ends || n_marks >= MARKS_MAX || t >= cap))
                        t_stop = t;
                if (t_stop)
                        continue;
                for (long x = 0; x < k; x++) {
                        if (ev[x].res != (int64_t) bs)
                                continue;
                        struct io_slot *sl = &slot[ev[x].data];
                        uint64_t off = random ? (xorshift(&e->seed) % blocks) * bs : (cursor++ % blocks) * bs;
                        sl->cb.aio_offset = (int64_t) (base + off);
                        sl->t_submit = t;
                        int q = aio_submit_one(ctx, &sl->cb);
                        if (q < 0) {
                                r = q;
                                t_stop = t;
                                break;
                        }
                        inflight++;
                }
        }
        uint64_t t1 = now_usec();
        if (r < 0) {
                /* requests may still be in flight on the shared context and
                 * buffers: only destroying the context waits for them */
                (void) syscall(SYS_io_destroy, e->ctx);
                e->ctx = 0;
                return r;
        }
        struct bench_io io = { .done = true, .block_size = bs, .depth = depth, .ios = ios, .bytes = ios * bs,
                               .prep_seconds = prep, .seconds = (double) (t1 - t0) / 1e6,
                               .warmup_seconds = t_first ? (double) (t_first - t0) / 1e6 : 0,
                               .drain_seconds = t_stop ? (double) (t1 - t_stop) / 1e6 : 0 };
        io.budget_seconds = (double) budget / 1e6;
        (void) bench_settle(marks, n_marks, &rule, &st);        /* the window: its last whole cycle */
        if (st.usec > 0 && st.bytes > 0) {
                io.window_ios = st.bytes / bs;
                io.window_seconds = (double) st.usec / 1e6;
                io.mbps = st.mbps;
                io.iops = (double) io.window_ios / io.window_seconds;
                io.settled = st.settled;
                io.mbps_low = st.low_mbps;
                io.mbps_high = st.high_mbps;
        } else if (io.seconds > 0) {
                io.mbps = (double) io.bytes / 1e6 / io.seconds;
                io.iops = (double) io.ios / io.seconds;
                io.mbps_low = io.mbps_high = io.mbps;   /* unsettled: no window to halve */
        }
        if (n_lat > 0) {
                qsort(lat, n_lat, sizeof *lat, cmp_u32);
                io.lat_p50_us = lat[(n_lat - 1) / 2];
                io.lat_p99_us = lat[(size_t) ((double) (n_lat - 1) * 0.99)];
                io.lat_max_us = lat[n_lat - 1];
        }
        io.teardown_seconds = (double) (now_usec() - t1) / 1e6;
        *ret = io;
        return 0;
}

static int open_direct(const char *path, bool write, uint64_t *ret_size) {
        struct stat st;
        int fd = fd_stat(open(path, (write ? O_RDWR : O_RDONLY) | O_DIRECT | O_CLOEXEC | O_NOCTTY), &st);
        if (fd < 0)
                return fd;
        if (ret_size) {
                off_t end = lseek(fd, 0, SEEK_END);
                if (end < 0) {
                        int e = -errno;
                        close(fd);
                        return e;
                }
                *ret_size = (uint64_t) end;
        }
        return fd;
}

static uint64_t io_budget(const struct bench_result *res, unsigned n, uint64_t slice);

/* A sequential test's least window: half its budget (unless --slice set
 * it), so that a device's burst shorter than a quarter of the budget shows
 * as halves that disagree; a burst that outlasts the least window would
 * read as settled (tests/unit/test-bench.c). The floors judge the
 * sequential figures; the 4 KiB random reads keep the short least window. */
static uint64_t seq_least(const struct bench_result *res, uint64_t slice, uint64_t budget) {
        return res->slice_ms || budget / 2 < slice ? slice : budget / 2;
}

/* Sequential write (if allowed), sequential read, 4K random read of
 * [offset, offset+len); n_tests: the device tests to go, these included
 * (for each one's share of the time budget). */
static int device_tests(struct bench_io_engine *e, const char *tag, const char *dev, uint64_t offset, uint64_t len,
                        bool write, uint64_t slice, unsigned n_tests, struct bench_io *w, struct bench_io *rd,
                        struct bench_io *rnd, struct bench_result *res, struct strbuf *err) {
        uint64_t size = 0, t = now_usec();
        _cleanup_close_ int fd = open_direct(dev, write, &size);
        phase(res, t, "%s: open", tag);
        if (fd < 0)
                return strbuf_errorf(err, fd, "cannot open '%s' for direct I/O: %s", dev, strerror(-fd));
        if (offset % 4096 || offset >= size)
                return strbuf_errorf(err, -EINVAL,
                                     "benchmark region at %" PRIu64 " is outside '%s' (%" PRIu64 " bytes) or not 4 KiB aligned",
                                     offset, dev, size);
        if (len == 0 || len > size - offset)
                len = size - offset;
        len -= len % BENCH_SEQ_BLOCK;
        if (len < (uint64_t) BENCH_SEQ_BLOCK * e->depth)
                return strbuf_errorf(err, -EINVAL, "benchmark region of '%s' is too small (%" PRIu64 " bytes)", dev,
                                     len);
        int r;
        uint64_t b;
        t = now_usec();
        if (write && (b = io_budget(res, n_tests, slice), r = io_run(e, fd, true, false, BENCH_SEQ_BLOCK, offset, len,
                                                                      seq_least(res, slice, b), b, w)) < 0)
                return strbuf_errorf(err, r, "sequential write to '%s' failed: %s", dev, strerror(-r));
        if (write)
                phase(res, t, "%s: seq write", tag);
        t = now_usec();
        b = io_budget(res, n_tests - (write ? 1 : 0), slice);
        if ((r = io_run(e, fd, false, false, BENCH_SEQ_BLOCK, offset, len, seq_least(res, slice, b), b, rd)) < 0)
                return strbuf_errorf(err, r, "sequential read from '%s' failed: %s", dev, strerror(-r));
        phase(res, t, "%s: seq read", tag);
        t = now_usec();
        if ((r = io_run(e, fd, false, true, BENCH_RAND_BLOCK, offset, len, slice,
                        io_budget(res, n_tests - (write ? 2 : 1), slice), rnd)) < 0)
                return strbuf_errorf(err, r, "random read from '%s' failed: %s", dev, strerror(-r));
        phase(res, t, "%s: 4k random read", tag);
        t = now_usec();
        close(fd);
        fd = -1;
        phase(res, t, "%s: close", tag);
        return 0;
}

/* ---------- AF_ALG: the cipher in memory, as crypt_benchmark() measures it ---------- */

/* One request: the whole of buf through the cipher in place, IV all zero. */
static int alg_request(int op, bool encrypt, uint8_t *buf, size_t len, size_t iv_len) {
        union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(sizeof(uint32_t)) + CMSG_SPACE(sizeof(struct af_alg_iv) + 64)];
        } control = {};
        if (iv_len > 64)
                return -EINVAL;
        struct iovec iov = { .iov_base = buf, .iov_len = len };
        struct msghdr msg = {
                .msg_control = control.buf,
                .msg_controllen = CMSG_SPACE(sizeof(uint32_t)) + (iv_len ? CMSG_SPACE(sizeof(struct af_alg_iv) + iv_len) : 0),
                .msg_iov = &iov,
                .msg_iovlen = 1,
        };
        struct cmsghdr *h = CMSG_FIRSTHDR(&msg);
        h->cmsg_level = SOL_ALG;
        h->cmsg_type = ALG_SET_OP;
        h->cmsg_len = CMSG_LEN(sizeof(uint32_t));
        uint32_t type = encrypt ? ALG_OP_ENCRYPT : ALG_OP_DECRYPT;
        memcpy(CMSG_DATA(h), &type, sizeof type);
        if (iv_len) {
                h = CMSG_NXTHDR(&msg, h);
                h->cmsg_level = SOL_ALG;
                h->cmsg_type = ALG_SET_IV;
                h->cmsg_len = CMSG_LEN(sizeof(struct af_alg_iv) + iv_len);
                uint32_t n = (uint32_t) iv_len;
                memcpy(CMSG_DATA(h), &n, sizeof n);    /* af_alg_iv.ivlen; the IV bytes stay zero */
        }
        ssize_t k = sendmsg(op, &msg, 0);
        if (k != (ssize_t) len)
                return k < 0 ? -errno : -EIO;
        k = read(op, buf, len);
        if (k != (ssize_t) len)
                return k < 0 ? -errno : -EIO;
        return 0;
}

/* One 1 MiB buffer, timed the way libcryptsetup 2.6.1 (Debian 12, what the
 * guest's `cryptsetup benchmark` runs) times it: cipher_perf_one() in
 * lib/crypto_backend/cipher_check.c creates the AF_ALG transform (socket,
 * bind, setkey, accept) for every buffer and destroys it afterwards, all
 * inside the CLOCK_MONOTONIC_RAW interval of cipher_measure(). (Newer
 * versions set the cipher up once, outside the clock.) So kiln does the same:
 * the figures are comparable only if the set-up is inside both. Returns the
 * buffer's time in microseconds, or -errno. */
static int64_t alg_buffer(const struct sockaddr_alg *sa, const uint8_t *key, size_t key_len, bool encrypt, uint8_t *buf,
                          size_t iv_len) {
        struct timespec t0, t1;
        if (clock_gettime(CLOCK_MONOTONIC_RAW, &t0) < 0)
                return -errno;
        _cleanup_close_ int tfm = socket(AF_ALG, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (tfm < 0)
                return -errno;
        if (bind(tfm, (const struct sockaddr *) sa, sizeof *sa) < 0 ||
            setsockopt(tfm, SOL_ALG, ALG_SET_KEY, key, (socklen_t) key_len) < 0)
                return -errno;
        _cleanup_close_ int op = accept4(tfm, NULL, NULL, SOCK_CLOEXEC);
        if (op < 0)
                return -errno;
        for (size_t done = 0; done < ALG_BUFFER; done += ALG_REQUEST) {
                int r = alg_request(op, encrypt, buf + done, ALG_REQUEST, iv_len);
                if (r < 0)
                        return r;
        }
        close(op);              /* crypt_cipher_destroy_kernel(), inside the clock too */
        op = -1;
        close(tfm);
        tfm = -1;
        if (clock_gettime(CLOCK_MONOTONIC_RAW, &t1) < 0)
                return -errno;
        return (int64_t) (t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000;
}

/* Encrypt, then decrypt, a 1 MiB buffer in 64 KiB requests until usec of
 * measured time have passed in each direction, summing the buffers' times --
 * libcryptsetup's crypt_cipher_perf_kernel() (and so `cryptsetup
 * benchmark`), but bounded: it runs each direction for at least a second.
 * It also counts one buffer more than it timed (repeat_enc starts at 1: +1
 * MiB/s, about 3 % at 30 MiB/s); kiln counts what it timed. MB/s (10^6).
 * -ENOENT when the kernel has no such skcipher for AF_ALG. */
static int alg_perf(const char *cipher, const char *mode, size_t key_len, size_t iv_len, uint64_t usec, double *ret_enc,
                    double *ret_dec) {
        struct sockaddr_alg sa = { .salg_family = AF_ALG };
        memcpy(sa.salg_type, "skcipher", sizeof "skcipher");
        int n = snprintf((char *) sa.salg_name, sizeof sa.salg_name, "%s(%s)", mode, cipher);
        if (n < 0 || (size_t) n >= sizeof sa.salg_name)
                return -EINVAL;
        uint8_t key[128];
        if (key_len > sizeof key)
                return -EINVAL;
        if (getrandom(key, key_len, 0) != (ssize_t) key_len)
                return -EIO;
        _cleanup_free_ uint8_t *buf = NULL;
        if (posix_memalign((void **) &buf, 4096, ALG_BUFFER) != 0) {
                explicit_wipe(key, sizeof key);
                return -ENOMEM;
        }
        memset(buf, 0, ALG_BUFFER);
        double mbps[2];
        int r = 0;
        for (int dir = 0; r >= 0 && dir < 2; dir++) {
                uint64_t bytes = 0, timed = 0, nbuf = 0;
                /* one buffer untimed first, as every sample's warm-up: under
                 * QEMU the first buffer after other programs ran (the
                 * emulator translating the kernel's AF_ALG paths anew) read
                 * 20-30 % slow, which libcryptsetup's second of buffers
                 * amortizes and two timed buffers did not */
                int64_t w = alg_buffer(&sa, key, key_len, dir == 0, buf, iv_len);
                if (w < 0) {
                        r = (int) w;
                        break;
                }
                /* stop where the next buffer would overshoot the length by
                 * more than half a buffer, so that the figure's time is
                 * about usec, not up to a buffer more (17-40 ms here) */
                while (nbuf == 0 || timed + timed / nbuf / 2 < usec) {
                        int64_t t = alg_buffer(&sa, key, key_len, dir == 0, buf, iv_len);
                        if (t < 0) {
                                r = (int) t;
                                break;
                        }
                        timed += (uint64_t) t;
                        bytes += ALG_BUFFER;
                        nbuf++;
                }
                mbps[dir] = timed ? (double) bytes / (double) timed : 0;    /* bytes per microsecond = MB/s */
        }
        explicit_wipe(key, sizeof key);
        if (r < 0)
                return r;
        *ret_enc = mbps[0];
        *ret_dec = mbps[1];
        return 0;
}

/* ---------- device-mapper: the zero target and one crypt mapping over it ----------
 *
 * The candidates share one plain dm-crypt mapping over one zero target:
 * each candidate is a table reload (DM_DEVICE_RELOAD + DM_DEVICE_RESUME)
 * with a fresh random key, not a libcryptsetup crypt_format + activate +
 * deactivate, which cost about 0.4 s a candidate under QEMU
 * (docs/benchmarks.md). The table carries the key in hex: it is built in a
 * stack buffer that is wiped, and the tasks ask libdevmapper and the kernel
 * to wipe theirs (dm_task_secure_data); the library's log is silenced. */

/* deferred: a DM_DEVICE_REMOVE that the kernel finishes once the device is closed */
static int dm_run(int type, const char *name, const char *target, const char *params, bool deferred,
                  dev_t *ret_dev) {
        struct dm_task *t = dm_task_create(type);
        if (!t)
                return -ENOMEM;
        int r = 0;
        if (!dm_task_set_name(t, name) ||
            (target && (!dm_task_secure_data(t) || !dm_task_add_target(t, 0, ZERO_SECTORS, target, params))))
                r = -EINVAL;
        else {
                if (type == DM_DEVICE_REMOVE && deferred)
                        (void) dm_task_deferred_remove(t);
                else if (type == DM_DEVICE_REMOVE)
                        (void) dm_task_retry_remove(t);
                errno = 0;
                struct dm_info info;
                if (!dm_task_run(t))
                        r = errno > 0 ? -errno : -EIO;
                else if (ret_dev) {
                        if (dm_task_get_info(t, &info) && info.exists)
                                *ret_dev = makedev((unsigned) info.major, (unsigned) info.minor);
                        else
                                r = -ENODEV;
                }
                /* no udev here: libdevmapper makes and removes /dev/mapper/NAME itself */
                dm_task_update_nodes();
        }
        dm_task_destroy(t);
        return r;
}

static void dm_quiet_log(int level, const char *file, int line, int dm_errno, const char *fmt, ...) {
}

static int zero_create(const char *name, dev_t *ret_dev) {
        dm_log_with_errno_init(dm_quiet_log);
        dm_udev_set_sync_support(0);
        return dm_run(DM_DEVICE_CREATE, name, "zero", "", false, ret_dev);
}

static void dm_remove(const char *name) {
        (void) dm_run(DM_DEVICE_REMOVE, name, NULL, NULL, false, NULL);
}

/* Remove the crypt mapping (at cpath) and the zero target under it without
 * waiting for the kernel: while the mapping is held open, a deferred
 * DM_DEVICE_REMOVE only marks it, and the zero target (held by the mapping)
 * too; closing the last descriptor hands the mapping's removal to the
 * kernel's dm workqueue, and destroying it closes the zero target, whose
 * removal follows the same way. Removed synchronously, the two cost
 * 0.1-0.15 s under QEMU (RCU grace periods in del_gendisk, the crypt
 * workqueues' destruction), all on the gate's critical path; in the
 * background they overlap what comes next (AF_ALG, the raw device), which
 * they barely load: the time is spent waiting, not computing. Synchronous
 * removal when the mapping cannot be opened. */
static void dm_remove_both(const char *cpath, const char *cname, const char *zname, bool live) {
        int fd = live ? open(cpath, O_RDONLY | O_CLOEXEC | O_NOCTTY) : -1;
        if (fd < 0) {
                if (live)
                        dm_remove(cname);
                dm_remove(zname);
                return;
        }
        bool ok = dm_run(DM_DEVICE_REMOVE, cname, NULL, NULL, true, NULL) >= 0 &&
                  dm_run(DM_DEVICE_REMOVE, zname, NULL, NULL, true, NULL) >= 0;
        close(fd);
        if (!ok) {      /* whatever is left, now */
                dm_remove(cname);
                dm_remove(zname);
        }
}

/* Point the crypt mapping `name` over the zero device at candidate bc, with a
 * random key: create it the first time (*live false), reload it after. A
 * failed reload leaves the previous table active (still usable by the next). */
static int crypt_table_load(const char *name, dev_t zero, const struct bench_cipher *bc, bool *live) {
        size_t klen = bc->key_size / 8;
        uint8_t key[128];
        char hex[2 * sizeof key + 1], params[512];
        if (klen == 0 || klen > sizeof key || strlen(bc->cipher) > 128)
                return -EINVAL;
        if (getrandom(key, klen, 0) != (ssize_t) klen)
                return -EIO;
        hex_encode(key, klen, hex);
        explicit_wipe(key, sizeof key);
        /* as LUKS2 maps it: with 4096-byte sectors the IV counts those (iv_large_sectors) */
        bool big = bc->sector_size > 512;
        unsigned nopt = (bc->no_workqueue ? 2 : 0) + (big ? 2 : 0);
        int n = snprintf(params, sizeof params, "%s %s 0 %u:%u 0", bc->cipher, hex, major(zero), minor(zero));
        explicit_wipe(hex, sizeof hex);
        if (n > 0 && (size_t) n < sizeof params && nopt)
                n += snprintf(params + n, sizeof params - (size_t) n, " %u%s", nopt,
                              bc->no_workqueue ? " no_read_workqueue no_write_workqueue" : "");
        if (n > 0 && (size_t) n < sizeof params && big)
                n += snprintf(params + n, sizeof params - (size_t) n, " sector_size:%u iv_large_sectors", bc->sector_size);
        int r;
        if (n <= 0 || (size_t) n >= sizeof params)
                r = -EINVAL;
        else if (!*live) {
                r = dm_run(DM_DEVICE_CREATE, name, "crypt", params, false, NULL);
                if (r >= 0)
                        *live = true;
        } else {
                r = dm_run(DM_DEVICE_RELOAD, name, "crypt", params, false, NULL);
                if (r >= 0)
                        r = dm_run(DM_DEVICE_RESUME, name, NULL, NULL, false, NULL);
        }
        explicit_wipe(params, sizeof params);
        return r;
}

/* One candidate's write and read samples on the crypt mapping at path. */
static int cipher_sample(struct bench_io_engine *e, const char *path, struct bench_cipher *bc, uint64_t slice,
                         struct bench_result *res) {
        uint64_t t = now_usec();
        _cleanup_close_ int fd = open_direct(path, true, NULL);
        if (fd < 0)
                return fd;
        phase(res, t, "dm-crypt: open");
        uint64_t span = 512ull * 1024 * 1024;
        t = now_usec();
        int r = io_run(e, fd, true, false, BENCH_CIPHER_BLOCK, 0, span, slice, CIPHER_BUDGET(slice), &bc->write);
        phase(res, t, "dm-crypt: write %s:%u/%u", bc->cipher, bc->key_size, bc->sector_size);
        if (r < 0)
                return r;
        t = now_usec();
        r = io_run(e, fd, false, false, BENCH_CIPHER_BLOCK, 0, span, slice, CIPHER_BUDGET(slice), &bc->read);
        phase(res, t, "dm-crypt: read %s:%u/%u", bc->cipher, bc->key_size, bc->sector_size);
        t = now_usec();
        close(fd);
        fd = -1;
        phase(res, t, "dm-crypt: close");
        return r;
}

static double cipher_score(const struct bench_cipher *c) {
        if (c->error || !c->write.done || !c->read.done)
                return -1;
        return (c->write.mbps + c->read.mbps) / 2;
}

static int add_candidate(struct bench_result *res, const char *cipher, unsigned key_size, unsigned sector_size,
                         bool nowq) {
        struct bench_cipher *n = realloc(res->ciphers, (res->n_ciphers + 1) * sizeof *n);
        if (!n)
                return -ENOMEM;
        res->ciphers = n;
        struct bench_cipher *c = &res->ciphers[res->n_ciphers];
        *c = (struct bench_cipher) { .key_size = key_size, .sector_size = sector_size, .no_workqueue = nowq };
        if (!(c->cipher = strdup(cipher)))
                return -ENOMEM;
        res->n_ciphers++;
        return 0;
}

/* The candidates, in the order they are measured. */
static int add_candidates(struct bench_result *res, char *const *list, bool tune, struct strbuf *err) {
        int r;
        /* With tuning, every cipher's plain configuration (4096-byte sectors,
         * workqueues on) comes first, so that the variants are what the time
         * budget cuts, never a whole cipher. */
        for (int pass = 0; pass < (tune ? 2 : 1); pass++)
                for (size_t i = 0; list[i]; i++) {
                        _cleanup_free_ char *c = NULL;
                        unsigned ks;
                        if ((r = bench_parse_cipher(list[i], &c, &ks)) < 0)
                                return strbuf_errorf(err, r, "bad cipher '%s' (expected e.g. aes-xts-plain64:512)",
                                                     list[i]);
                        if (pass == 0) {
                                if ((r = add_candidate(res, c, ks, 4096, false)) < 0)
                                        return r;
                                continue;
                        }
                        if ((r = add_candidate(res, c, ks, 4096, true)) < 0 ||
                            (r = add_candidate(res, c, ks, 512, false)) < 0 ||
                            (r = add_candidate(res, c, ks, 512, true)) < 0)
                                return r;
                }
        return 0;
}

/* Each candidate's cipher in memory through AF_ALG, once per cipher and key
 * size (-ENOMEM only: a kernel without the API is noted in the result). */
static int alg_phase(struct bench_result *res) {
        int r;
        uint64_t t_alg = now_usec();
        if (!have_af_alg() && !(res->kernel_api_missing = strdup("the kernel has " AF_ALG_MISSING)))
                return -ENOMEM;
        for (size_t i = 0; !res->kernel_api_missing && i < res->n_ciphers; i++) {
                struct bench_cipher *c = &res->ciphers[i];
                bool seen = false;
                for (size_t k = 0; k < i; k++)
                        if (streq(res->ciphers[k].cipher, c->cipher) && res->ciphers[k].key_size == c->key_size) {
                                c->kernel_enc_mbps = res->ciphers[k].kernel_enc_mbps;
                                c->kernel_dec_mbps = res->ciphers[k].kernel_dec_mbps;
                                seen = true;
                        }
                if (seen)
                        continue;
                if (i > 0 && now_usec() - res->start_usec > CIPHER_PHASE_END_USEC)
                        continue;       /* out of time: no AF_ALG figure for this one */
                char cipher[64], mode[64];
                if (luks_cipher_split(c->cipher, cipher, sizeof cipher, mode, sizeof mode) < 0)
                        continue;
                /* as `cryptsetup benchmark` asks: the mode without its IV generator
                 * ("xts", not "xts-plain64"), and the IV size that mode takes */
                char *dash = strchr(mode, '-');
                if (dash)
                        *dash = 0;
                size_t iv = streq(mode, "ecb") ? 0 : streq(mode, "adiantum") ? 32 : 16;
                double enc = 0, dec = 0;
                uint64_t t = now_usec();
                r = alg_perf(cipher, mode, c->key_size / 8, iv,
                             res->slice_ms ? (uint64_t) res->slice_ms * 1000 : ALG_SLICE_USEC, &enc, &dec);
                phase(res, t, "af_alg: %s(%s) %u-bit encrypt+decrypt", mode, cipher, c->key_size);
                if (r == -ENOENT || r == -EAFNOSUPPORT) {
                        if (asprintf(&res->kernel_api_missing,
                                     "the kernel's AF_ALG has no skcipher '%s(%s)' (algif_skcipher and the cipher's "
                                     "module are needed)",
                                     mode, cipher) < 0)
                                return -ENOMEM;
                        break;
                }
                if (r == -ENOMEM)
                        return r;
                if (r >= 0) {
                        c->kernel_enc_mbps = enc;
                        c->kernel_dec_mbps = dec;
                }
        }
        res->alg_seconds = (double) (now_usec() - t_alg) / 1e6;
        return 0;
}

static int cipher_phase(struct bench_io_engine *e, const struct spec_bench *policy, bool af_alg,
                        struct bench_result *res, struct strbuf *err) {
        /* the candidates are the caller's: the spec parser's per-LUKS list (spec.c:set_bench_ciphers),
         * or kiln bench's --cipher options */
        char *const *list = policy ? policy->ciphers : NULL;
        bool tune = policy && policy->tune;
        int r;
        if (!list || !list[0])
                return strbuf_errorf(err, -EINVAL, "no cipher to measure");
        if ((r = add_candidates(res, list, tune, err)) < 0)
                return r;

        /* the dm-crypt path: one zero target, one crypt mapping reloaded per candidate */
        uint64_t t_setup = now_usec();
        char zname[64], cname[64];
        snprintf(zname, sizeof zname, "kiln-bench-zero-%d", (int) getpid());
        snprintf(cname, sizeof cname, "kiln-bench-crypt-%d", (int) getpid());
        dev_t zdev = 0;
        r = zero_create(zname, &zdev);
        phase(res, t_setup, "dm: create zero target");
        if (r < 0) {
                dm_remove(zname);
                return strbuf_errorf(err, r, "cannot create the device-mapper zero target '%s': %s", zname,
                                     strerror(-r));
        }
        _cleanup_free_ char *cpath = NULL;
        if (paths_mapper(cname, &cpath) < 0) {
                dm_remove(zname);
                return -ENOMEM;
        }
        res->setup_seconds += (double) (now_usec() - t_setup) / 1e6;
        uint64_t slice = res->slice_ms ? (uint64_t) res->slice_ms * 1000 : CIPHER_SLICE_USEC;
        double best = -1;
        bool live = false;
        for (size_t i = 0; i < res->n_ciphers; i++) {
                struct bench_cipher *c = &res->ciphers[i];
                if (i > 0 && now_usec() - res->start_usec > CIPHER_PHASE_END_USEC) {
                        c->error = strdup("skipped: the benchmark's time budget is spent");
                        continue;
                }
                t_setup = now_usec();
                bool was_live = live;
                r = crypt_table_load(cname, zdev, c, &live);
                phase(res, t_setup, "dm: %s crypt %s:%u/%u", was_live ? "reload+resume" : "create", c->cipher,
                      c->key_size, c->sector_size);
                res->setup_seconds += (double) (now_usec() - t_setup) / 1e6;
                if (r >= 0) {
                        uint64_t t_sample = now_usec();
                        r = cipher_sample(e, cpath, c, slice, res);
                        res->dm_sample_seconds += (double) (now_usec() - t_sample) / 1e6;
                }
                if (r == -ENOMEM)
                        break;
                if (r < 0) {
                        if (asprintf(&c->error, "dm-crypt could not run '%s' with a %u-bit key: %s", c->cipher,
                                     c->key_size, strerror(-r)) < 0)
                                c->error = NULL;
                        continue;
                }
                double s = cipher_score(c);
                if (s > best) {
                        best = s;
                        res->chosen = (int) i;
                }
        }
        t_setup = now_usec();
        dm_remove_both(cpath, cname, zname, live);
        phase(res, t_setup, "dm: remove (deferred)");
        res->setup_seconds += (double) (now_usec() - t_setup) / 1e6;
        if (r == -ENOMEM)
                return r;

        if (af_alg && (r = alg_phase(res)) < 0)
                return r;
        res->cipher_seconds = (double) (now_usec() - res->start_usec) / 1e6;

        if (res->chosen < 0)
                return strbuf_errorf(err, -ENOTSUP,
                                     "no candidate cipher could be measured through dm-crypt (first: %s)",
                                     res->ciphers[0].error ? res->ciphers[0].error : "unknown");
        return 0;
}

uint64_t bench_io_slice_usec(uint64_t spent_usec, unsigned n_tests, unsigned slice_ms) {
        if (slice_ms)
                return (uint64_t) slice_ms * 1000;
        uint64_t left = spent_usec < GATE_LIMIT_USEC ? GATE_LIMIT_USEC - spent_usec : 0;
        uint64_t slice = n_tests ? left / n_tests : 0;
        if (slice > IO_SLICE_USEC)
                slice = IO_SLICE_USEC;
        if (slice < IO_SLICE_MIN_USEC)
                slice = IO_SLICE_MIN_USEC;
        return slice;
}

uint64_t bench_io_budget_usec(uint64_t spent_usec, unsigned n_tests, uint64_t min_usec) {
        uint64_t left = spent_usec < BENCH_GATE_TARGET_USEC ? BENCH_GATE_TARGET_USEC - spent_usec : 0;
        uint64_t budget = n_tests ? left / n_tests * 2 / 3 : 0;
        return budget > min_usec ? budget : min_usec;
}

/* One device test's share of what is left of the gate's time, with n tests to go. */
static uint64_t io_slice(const struct bench_result *res, unsigned n) {
        return bench_io_slice_usec(now_usec() - res->start_usec, n, res->slice_ms);
}

/* One device test's longest window, from the gate's own time so far
 * (bench_raw's and, in bench_crypt, this call's: kiln apply runs luksFormat
 * between them, which is not the gate's). */
static uint64_t io_budget(const struct bench_result *res, unsigned n, uint64_t slice) {
        return bench_io_budget_usec(res->leg_spent_usec + (now_usec() - res->leg_start_usec), n, slice);
}

/* kiln apply's: the region is about to be overwritten anyway; no AF_ALG figure */
static const struct bench_options apply_options = { .write = true };

int bench_raw(const struct spec_bench *policy, const char *device, uint64_t offset, uint64_t len,
              const struct bench_options *o, struct bench_result *res, struct strbuf *err) {
        if (!o)
                o = &apply_options;
        bench_result_done(res);
        res->start_usec = res->leg_start_usec = now_usec();
        uint64_t age;
        res->startup_seconds = -1;
        if (procfs_self_age_usec(kiln_paths.procfs, &age) >= 0 && age <= res->start_usec) {
                res->startup_seconds = (double) age / 1e6;
                res->process_start_usec = res->start_usec - age;
        }
        res->depth = o->depth ? o->depth : BENCH_DEPTH;
        res->slice_ms = o->slice_ms;
        bool write = o->write;
        if (res->depth > BENCH_DEPTH_MAX)
                return -EINVAL;
        uint64_t t = now_usec();
        int r = o->device_only ? 0 : bench_check_kernel(err);
        if (!o->device_only)
                phase(res, t, "kernel check");
        if (r < 0)
                return r;
        if (o->device_only && !(device && len > 0))
                return strbuf_errorf(err, -EINVAL, "no device to measure");
        struct bench_io_engine *eng;
        t = now_usec();
        r = engine_get(res, &eng);
        phase(res, t, "io: set-up");
        if (r < 0)
                return strbuf_errorf(err, r, "cannot set up Linux AIO for the benchmark: %s", strerror(-r));
        if (!o->device_only)
                r = cipher_phase(eng, policy, o->af_alg, res, err);
        if (r >= 0 && device && len > 0) {
                if (!(res->device = strdup(device)))
                        r = -ENOMEM;
                else {
                        res->offset = offset;
                        res->len = len;
                        r = device_tests(eng, "raw", device, offset, len, write, io_slice(res, 6), write ? 6 : 4,
                                         &res->raw_write, &res->raw_read, &res->raw_rand, res, err);
                }
        }
        /* the engine stays for bench_crypt: io_destroy waits for an RCU grace period */
        res->seconds = (double) (now_usec() - res->start_usec) / 1e6;
        return r;
}

static double overhead(const struct bench_io *raw, const struct bench_io *enc) {
        if (!raw->done || !enc->done || raw->mbps <= 0)
                return 0;
        return 1.0 - enc->mbps / raw->mbps;
}

int bench_crypt(const struct spec_bench *policy, const char *crypt_device, uint64_t offset, uint64_t len,
                const struct bench_options *o, struct bench_result *res, struct strbuf *err) {
        if (!o)
                o = &apply_options;
        uint64_t t0 = now_usec();
        bool write = o->write;
        if (!res->depth)
                res->depth = o->depth ? o->depth : BENCH_DEPTH;
        if (!res->start_usec)
                res->start_usec = t0;
        res->leg_start_usec = t0;
        res->leg_spent_usec = (uint64_t) (res->seconds * 1e6);
        free(res->crypt_device);
        if (!(res->crypt_device = strdup(crypt_device)))
                return -ENOMEM;
        uint64_t slice = io_slice(res, 3);
        struct bench_io_engine *eng;
        uint64_t t = now_usec();
        int r = engine_get(res, &eng);
        phase(res, t, "io: set-up");
        if (r < 0)
                return strbuf_errorf(err, r, "cannot set up Linux AIO for the benchmark: %s", strerror(-r));
        r = device_tests(eng, "crypt", crypt_device, offset, len ? len : res->len, write, slice, write ? 3 : 2,
                         &res->crypt_write, &res->crypt_read, &res->crypt_rand, res, err);
        if (r >= 0) {
                res->overhead_write = overhead(&res->raw_write, &res->crypt_write);
                res->overhead_read = overhead(&res->raw_read, &res->crypt_read);
                res->overhead_rand = overhead(&res->raw_rand, &res->crypt_rand);
        }
        t = now_usec();
        engine_free(&res->engine);      /* the last user */
        phase(res, t, "io: teardown");
        res->seconds += (double) (now_usec() - t0) / 1e6;
        return r;
}

/* ---------- the gate ---------- */

/* " (not settled: ...)" after a figure judged on its lower bound */
static const char *unsettled_note(const struct bench_io *io) {
        return io && io->done && !io->settled ? " (not settled: the lower bound of its window's halves)" : "";
}

/* The overhead a ceiling judges: the encrypted figure's lower bound against
 * the raw one's upper bound, when either has not settled. */
static double gate_overhead(const struct bench_io *raw, const struct bench_io *enc, double measured) {
        if (raw->settled && enc->settled)
                return measured;
        double hi = raw->settled ? raw->mbps : fmax(raw->mbps, raw->mbps_high);
        return hi > 0 ? 1.0 - bench_floor_mbps(enc) / hi : measured;
}

int bench_gate(const struct spec_bench *policy, const struct bench_result *res, struct strbuf *why) {
        if (!policy)
                return 0;
        unsigned fails = 0;
        const struct bench_cipher *c = bench_chosen(res);
        if (policy->cipher_mbps > 0) {
                const struct bench_io *slow = NULL;
                if (c)
                        slow = bench_floor_mbps(&c->write) <= bench_floor_mbps(&c->read) ? &c->write : &c->read;
                double v = slow ? bench_floor_mbps(slow) : 0;
                if (!c || v < policy->cipher_mbps) {
                        fails++;
                        strbuf_addf(why, "cipher %s through dm-crypt: %.1f MB/s%s is below the floor of %.1f MB/s\n",
                                    c ? c->cipher : "(none measured)", v, unsettled_note(slow), policy->cipher_mbps);
                }
        }
        const struct bench_io *w = res->crypt_write.done ? &res->crypt_write : NULL;
        const struct bench_io *rd = res->crypt_read.done ? &res->crypt_read : NULL;
        if (policy->write_mbps > 0 && (!w || bench_floor_mbps(w) < policy->write_mbps)) {
                fails++;
                strbuf_addf(why, "encrypted sequential write: %.1f MB/s%s is below the floor of %.1f MB/s\n",
                            w ? bench_floor_mbps(w) : 0, unsettled_note(w), policy->write_mbps);
        }
        if (policy->read_mbps > 0 && (!rd || bench_floor_mbps(rd) < policy->read_mbps)) {
                fails++;
                strbuf_addf(why, "encrypted sequential read: %.1f MB/s%s is below the floor of %.1f MB/s\n",
                            rd ? bench_floor_mbps(rd) : 0, unsettled_note(rd), policy->read_mbps);
        }
        if (policy->max_overhead > 0) {
                if (!w || !rd || !res->raw_write.done || !res->raw_read.done) {
                        fails++;
                        strbuf_addf(why, "overhead: no raw and encrypted figures to compare\n");
                } else {
                        double ow = gate_overhead(&res->raw_write, w, res->overhead_write);
                        double orr = gate_overhead(&res->raw_read, rd, res->overhead_read);
                        if (ow > policy->max_overhead) {
                                fails++;
                                strbuf_addf(why, "write overhead of dm-crypt: %.0f %% exceeds the limit of %.0f %%%s\n",
                                            ow * 100, policy->max_overhead * 100,
                                            ow != res->overhead_write ? " (not settled: judged on the bounds)" : "");
                        }
                        if (orr > policy->max_overhead) {
                                fails++;
                                strbuf_addf(why, "read overhead of dm-crypt: %.0f %% exceeds the limit of %.0f %%%s\n",
                                            orr * 100, policy->max_overhead * 100,
                                            orr != res->overhead_read ? " (not settled: judged on the bounds)" : "");
                        }
                }
        }
        if (why->len && why->buf[why->len - 1] == '\n')
                why->buf[--why->len] = 0;
        return fails ? -ERANGE : 0;
}

/* ---------- output ---------- */

static struct json_object *jdouble(double v) {
        /* two decimals keep the report readable and stable */
        char buf[64];
        snprintf(buf, sizeof buf, "%.2f", v);
        return json_object_new_double_s(round(v * 100) / 100, buf);
}

/* seconds to the millisecond */
static struct json_object *jsec(double v) {
        char buf[64];
        snprintf(buf, sizeof buf, "%.3f", v);
        return json_object_new_double_s(round(v * 1000) / 1000, buf);
}

static struct json_object *jio(const struct bench_io *io) {
        if (!io->done)
                return json_object_new_null();
        struct json_object *o = json_object_new_object();
        if (!o)
                return NULL;
        if (json_add(o, "block_size", json_object_new_int64(io->block_size)) < 0 ||
            json_add(o, "depth", json_object_new_int64(io->depth)) < 0 || json_add(o, "mbps", jdouble(bench_floor_mbps(io))) < 0 ||
            json_add(o, "mbps_window", jdouble(io->mbps)) < 0 ||
            json_add(o, "iops", jdouble(io->iops)) < 0 || json_add(o, "lat_p50_us", jdouble(io->lat_p50_us)) < 0 ||
            json_add(o, "lat_p99_us", jdouble(io->lat_p99_us)) < 0 || json_add(o, "lat_max_us", jdouble(io->lat_max_us)) < 0 ||
            json_add(o, "bytes", json_object_new_uint64(io->bytes)) < 0 || json_add(o, "seconds", jdouble(io->seconds)) < 0 ||
            json_add(o, "warmup_seconds", jsec(io->warmup_seconds)) < 0 ||
            json_add(o, "window_seconds", jsec(io->window_seconds)) < 0 ||
            json_add(o, "window_ios", json_object_new_uint64(io->window_ios)) < 0 ||
            json_add(o, "settled", json_object_new_boolean(io->settled)) < 0 ||
            json_add(o, "mbps_low", jdouble(io->mbps_low)) < 0 || json_add(o, "mbps_high", jdouble(io->mbps_high)) < 0 ||
            json_add(o, "budget_seconds", jsec(io->budget_seconds)) < 0 ||
            json_add(o, "prep_seconds", jsec(io->prep_seconds)) < 0 || json_add(o, "drain_seconds", jsec(io->drain_seconds)) < 0 ||
            json_add(o, "teardown_seconds", jsec(io->teardown_seconds)) < 0) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

int bench_to_json(const struct bench_result *res, struct strbuf *out) {
        struct json_object *root = json_object_new_object(), *arr = json_object_new_array();
        int r = root && arr ? 0 : -ENOMEM;
        for (size_t i = 0; r >= 0 && i < res->n_ciphers; i++) {
                const struct bench_cipher *c = &res->ciphers[i];
                struct json_object *o = json_object_new_object();
                if (!o) {
                        r = -ENOMEM;
                        break;
                }
                if ((r = json_add(o, "cipher", json_object_new_string(c->cipher))) < 0 ||
                    (r = json_add(o, "key_size", json_object_new_int64(c->key_size))) < 0 ||
                    (r = json_add(o, "sector_size", json_object_new_int64(c->sector_size))) < 0 ||
                    (r = json_add(o, "no_workqueue", json_object_new_boolean(c->no_workqueue))) < 0 ||
                    (r = json_add(o, "chosen", json_object_new_boolean(res->chosen == (int) i))) < 0 ||
                    (r = json_add(o, "write", jio(&c->write))) < 0 || (r = json_add(o, "read", jio(&c->read))) < 0 ||
                    (r = json_add(o, "kernel_enc_mbps", c->kernel_enc_mbps > 0 ? jdouble(c->kernel_enc_mbps)
                                                                            : json_object_new_null())) < 0 ||
                    (r = json_add(o, "kernel_dec_mbps", c->kernel_dec_mbps > 0 ? jdouble(c->kernel_dec_mbps)
                                                                            : json_object_new_null())) < 0 ||
                    (r = json_add(o, "error", json_str(c->error))) < 0 || json_object_array_add(arr, o) < 0) {
                        json_object_put(o);
                        r = r < 0 ? r : -ENOMEM;
                }
        }
        if (r >= 0 && (r = json_add(root, "ciphers", arr)) >= 0)
                arr = NULL;
        struct json_object *raw = json_object_new_object(), *enc = json_object_new_object(),
                           *ovh = json_object_new_object();
        if (r >= 0 && (!raw || !enc || !ovh))
                r = -ENOMEM;
        /* each jadd takes its value; after the first failure the rest are skipped */
#define JADD(o, k, v) do { if (r >= 0) r = json_add((o), (k), (v)); } while (0)
        bool have_ovh = res->crypt_read.done && res->raw_read.done;
        JADD(root, "kernel_api_missing", json_str(res->kernel_api_missing));
        JADD(raw, "device", json_str(res->device));
        JADD(raw, "offset", json_object_new_uint64(res->offset));
        JADD(raw, "len", json_object_new_uint64(res->len));
        JADD(raw, "seq_write", jio(&res->raw_write));
        JADD(raw, "seq_read", jio(&res->raw_read));
        JADD(raw, "rand_read", jio(&res->raw_rand));
        JADD(enc, "device", json_str(res->crypt_device));
        JADD(enc, "seq_write", jio(&res->crypt_write));
        JADD(enc, "seq_read", jio(&res->crypt_read));
        JADD(enc, "rand_read", jio(&res->crypt_rand));
        JADD(ovh, "write", have_ovh ? jdouble(res->overhead_write) : json_object_new_null());
        JADD(ovh, "read", have_ovh ? jdouble(res->overhead_read) : json_object_new_null());
        JADD(ovh, "rand_read", have_ovh ? jdouble(res->overhead_rand) : json_object_new_null());
        JADD(root, "raw", json_object_get(raw));
        JADD(root, "crypt", json_object_get(enc));
        JADD(root, "overhead", json_object_get(ovh));
        JADD(root, "seconds", jdouble(res->seconds));
        JADD(root, "settle_tolerance", jdouble(BENCH_SETTLE_TOLERANCE));
        JADD(root, "target_seconds", jsec((double) BENCH_GATE_TARGET_USEC / 1e6));
        JADD(root, "cipher_seconds", jdouble(res->cipher_seconds));
        /* where cipher_seconds went: device-mapper set-up and removal, dm-crypt samples, AF_ALG */
        JADD(root, "setup_seconds", jdouble(res->setup_seconds));
        JADD(root, "dm_sample_seconds", jdouble(res->dm_sample_seconds));
        JADD(root, "alg_seconds", jdouble(res->alg_seconds));
        /* from the process's start: start-up, then each step of the gate */
        JADD(root, "startup_seconds", res->startup_seconds >= 0 ? jsec(res->startup_seconds) : json_object_new_null());
        struct json_object *phases = r >= 0 ? json_object_new_array() : NULL;
        if (r >= 0 && !phases)
                r = -ENOMEM;
        for (size_t i = 0; r >= 0 && i < res->n_phases; i++) {
                struct json_object *o = json_object_new_object();
                if (!o) {
                        r = -ENOMEM;
                        break;
                }
                if ((r = json_add(o, "name", json_object_new_string(res->phases[i].name))) < 0 ||
                    (r = json_add(o, "start", jsec(res->phases[i].start))) < 0 ||
                    (r = json_add(o, "seconds", jsec(res->phases[i].seconds))) < 0 || json_object_array_add(phases, o) < 0) {
                        json_object_put(o);
                        r = r < 0 ? r : -ENOMEM;
                }
        }
        if (r >= 0) {
                r = json_add(root, "phases", phases);
                phases = NULL;
        }
        json_object_put(phases);
#undef JADD
        if (r >= 0)
                r = json_print(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED, true, out);
        json_object_put(arr);
        json_object_put(raw);
        json_object_put(enc);
        json_object_put(ovh);
        json_object_put(root);
        return r < 0 ? r : 0;
}

static int text_io(struct strbuf *out, const char *dev, const char *what, const struct bench_io *io) {
        if (!io->done)
                return 0;
        return strbuf_addf(out, "%-28s %-10s %10.1f %10.0f %9.0f %9.0f\n", dev, what, bench_floor_mbps(io), io->iops, io->lat_p50_us,
                           io->lat_p99_us);
}

/* fn on each of the six device figures in report order (what: the test's
 * name, brief for the text table's column or in full) */
static int each_device_io(const struct bench_result *res, struct strbuf *out, bool brief,
                          int (*fn)(struct strbuf *out, const char *dev, const char *what, const struct bench_io *io)) {
        const char *rd = res->device ?: "-", *cd = res->crypt_device ?: "-";
        const struct {
                const char *dev, *what;
                const struct bench_io *io;
        } rows[] = {
                { rd, "seq write", &res->raw_write },   { rd, "seq read", &res->raw_read },
                { rd, NULL, &res->raw_rand },           { cd, "seq write", &res->crypt_write },
                { cd, "seq read", &res->crypt_read },   { cd, NULL, &res->crypt_rand },
        };
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                int r = fn(out, rows[i].dev, rows[i].what ?: brief ? "4k rand rd" : "4k random read", rows[i].io);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int unsettled_line(struct strbuf *out, const char *dev, const char *what, const struct bench_io *io) {
        if (!io->done || io->settled)
                return 0;
        return strbuf_addf(out, "not settled within its budget: %s %s (window %.3f s of %.3f s, its halves %.1f..%.1f "
                                "MB/s); a floor judges %.1f MB/s\n",
                           dev, what, io->window_seconds, io->budget_seconds, io->mbps_low, io->mbps_high,
                           bench_floor_mbps(io));
}

int bench_unsettled(const struct bench_result *res, struct strbuf *out) {
        int r = 0;
        for (size_t i = 0; r >= 0 && i < res->n_ciphers; i++) {
                const struct bench_cipher *c = &res->ciphers[i];
                _cleanup_free_ char *name = strdupf("dm-crypt %s:%u/%u", c->cipher, c->key_size, c->sector_size);
                if (!name)
                        return -ENOMEM;
                if (!c->error && ((r = unsettled_line(out, name, "write", &c->write)) < 0 ||
                                  (r = unsettled_line(out, name, "read", &c->read)) < 0))
                        return r;
        }
        return each_device_io(res, out, false, unsettled_line);
}

int bench_to_text(const struct bench_result *res, struct strbuf *out) {
        int r;
        if ((r = strbuf_addf(out, "crypt benchmark (%.1f s)\n%-32s %4s %6s %-6s %10s %10s %17s\n", res->seconds, "CIPHER",
                             "KEY", "SECTOR", "NO-WQ", "WRITE MB/s", "READ MB/s", "AF_ALG ENC/DEC")) < 0)
                return r;
        for (size_t i = 0; i < res->n_ciphers; i++) {
                const struct bench_cipher *c = &res->ciphers[i];
                char k[40] = "-";
                if (c->kernel_enc_mbps > 0)
                        snprintf(k, sizeof k, "%.0f/%.0f", c->kernel_enc_mbps, c->kernel_dec_mbps);
                if (c->error)
                        r = strbuf_addf(out, "%-32s %4u %6u %-6s %s\n", c->cipher, c->key_size, c->sector_size,
                                        c->no_workqueue ? "yes" : "no", c->error);
                else
                        r = strbuf_addf(out, "%-32s %4u %6u %-6s %10.1f %10.1f %17s%s\n", c->cipher, c->key_size,
                                        c->sector_size, c->no_workqueue ? "yes" : "no", c->write.mbps, c->read.mbps, k,
                                        res->chosen == (int) i ? "  <- chosen" : "");
                if (r < 0)
                        return r;
        }
        if (res->kernel_api_missing && (r = strbuf_addf(out, "no AF_ALG figures: %s\n", res->kernel_api_missing)) < 0)
                return r;
        if (res->raw_read.done || res->crypt_read.done) {
                if ((r = strbuf_addf(out, "\n%-28s %-10s %10s %10s %9s %9s\n", "DEVICE", "TEST", "MB/s", "IOPS", "p50 us",
                                     "p99 us")) < 0)
                        return r;
                if ((r = each_device_io(res, out, true, text_io)) < 0)
                        return r;
                if (res->raw_read.done && res->crypt_read.done &&
                    (r = strbuf_addf(out, "overhead of dm-crypt: write %.0f %%, read %.0f %%, 4k random read %.0f %%\n",
                                     res->overhead_write * 100, res->overhead_read * 100, res->overhead_rand * 100)) < 0)
                        return r;
        }
        return bench_unsettled(res, out);
}

int bench_run(const struct spec_bench *policy, const char *device, const char *crypt_device, uint64_t offset,
              uint64_t len, const struct bench_options *o, struct bench_result *res, struct strbuf *err) {
        int r = bench_raw(policy, device, offset, device ? len : 0, o, res, err);
        if (r >= 0 && crypt_device)
                r = bench_crypt(policy, crypt_device, offset, len, o, res, err);
        return r;
}

int bench_default_ciphers(char ***ciphers) {
        if (*ciphers)
                return 0;
        char *dflt = strdupf("%s:%u", SPEC_LUKS_CIPHER, SPEC_LUKS_KEY_SIZE);
        if (!dflt || strv_push(ciphers, dflt) < 0) {
                free(dflt);
                return -ENOMEM;
        }
        return 0;
}
