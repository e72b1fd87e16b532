#include "backoff.h"

#include <sys/random.h>
#include <time.h>

static uint32_t jitter_random(void) {
        uint32_t v;
        if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == sizeof(v))
                return v;
        /* No entropy yet (early boot): the clock still spreads nodes apart. */
        return (uint32_t) (now_usec() * 2654435761u);
}

static uint64_t min_u64(uint64_t a, uint64_t b) {
        return a < b ? a : b;
}

static uint64_t max_u64(uint64_t a, uint64_t b) {
        return a > b ? a : b;
}

bool backoff_status_is_pushback(long status) {
        return status == 503 || status == 429;
}

unsigned backoff_spread_ms(const struct backoff *b, unsigned n, bool pushback, unsigned retry_after_ms) {
        uint64_t max = b->max_ms ? b->max_ms : 30000;
        uint64_t ra = min_u64(retry_after_ms, BACKOFF_RETRY_AFTER_MAX_MS);
        uint64_t lo, w;

        if (pushback) {
                lo = max_u64(min_u64(BACKOFF_PUSHBACK_FLOOR_MS, max), ra);
                w = ra ? max_u64(ra, BACKOFF_MIN_WINDOW_MS) : BACKOFF_PUSHBACK_WINDOW_MS;
                w = min_u64(min_u64(w, BACKOFF_PUSHBACK_WINDOW_MS), max);
        } else {
                /* initial doubled n times, capped at max */
                uint64_t d = b->initial_ms ? b->initial_ms : 500;
                for (unsigned i = 0; i < n && d < max; i++)
                        d *= 2;
                d = min_u64(d, max);
                lo = max_u64(d / 2, ra);
                w = max_u64(d / 2, min_u64(BACKOFF_MIN_WINDOW_MS, max));
        }
        return (unsigned) (lo + jitter_random() % (w + 1));
}

void backoff_sleep_ms(unsigned ms) {
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long) (ms % 1000) * 1000000L };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}
