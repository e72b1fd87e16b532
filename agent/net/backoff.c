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

static uint64_t backoff_max_ms(const struct backoff *b) {
        return b->max_ms ? b->max_ms : 30000;
}

/* The n-th retry's window (ms): initial doubled n times, capped at max. */
static uint64_t backoff_window_ms(const struct backoff *b, unsigned n) {
        uint64_t max = backoff_max_ms(b);
        uint64_t d = b->initial_ms ? b->initial_ms : 500;
        for (unsigned i = 0; i < n && d < max; i++)
                d *= 2;
        return d > max ? max : d;
}

unsigned backoff_delay_ms(const struct backoff *b, unsigned n) {
        uint64_t d = backoff_window_ms(b, n);
        uint64_t half = d / 2;
        return (unsigned) (half + (d - half ? jitter_random() % (d - half + 1) : 0));
}

unsigned backoff_spread_ms(const struct backoff *b, unsigned n, unsigned not_before_ms) {
        uint64_t max = backoff_max_ms(b);
        uint64_t d = backoff_window_ms(b, n);
        uint64_t nb = not_before_ms < BACKOFF_RETRY_AFTER_MAX_MS ? not_before_ms : BACKOFF_RETRY_AFTER_MAX_MS;
        uint64_t lo = d / 2 > nb ? d / 2 : nb;
        uint64_t w = max < BACKOFF_MIN_WINDOW_MS ? max : BACKOFF_MIN_WINDOW_MS;
        if (d / 2 > w)
                w = d / 2;
        return (unsigned) (lo + jitter_random() % (w + 1));
}

void backoff_sleep_ms(unsigned ms) {
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long) (ms % 1000) * 1000000L };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

int backoff_next(struct backoff *b) {
        if (b->attempt >= b->max_attempts)
                return -ETIMEDOUT;
        unsigned ms = backoff_delay_ms(b, b->attempt);
        b->attempt++;
        backoff_sleep_ms(ms);
        return 0;
}
