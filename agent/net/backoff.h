/* Capped, jittered exponential backoff for retrying network operations
 * (fetch, registration). Delay for attempt n (0-based) is drawn uniformly
 * from [d/2, d] with d = min(max_ms, initial_ms * 2^n): "equal jitter", so
 * several nodes retrying against one server spread out but never retry at once.
 * fetch.c uses backoff_spread_ms(): a window at least BACKOFF_MIN_WINDOW_MS
 * wide and a server's Retry-After. */
#pragma once
#include "util.h"

struct backoff {
        unsigned initial_ms;    /* first delay; 0 = 500 */
        unsigned max_ms;        /* cap per delay; 0 = 30000 */
        unsigned max_attempts;  /* retries allowed after the first try; 0 = none */
        unsigned attempt;       /* retries made so far */
};

#define BACKOFF_INIT(init, max, attempts) { (init), (max), (attempts), 0 }

/* The delay before retry number n (0-based), jittered. */
unsigned backoff_delay_ms(const struct backoff *b, unsigned n);

/* A rack retrying together (docs/benchmarks.md "A rack at once"): when one
 * server pushes back on a hundred nodes at the same instant, [d/2, d] with
 * d = 500 ms puts all their first retries into one quarter second. Every
 * delay of backoff_spread_ms() is drawn from a window at least this wide
 * (but never wider than max_ms), so a node's retry lands in a given second
 * with probability at most 1 s / BACKOFF_MIN_WINDOW_MS. */
#define BACKOFF_MIN_WINDOW_MS 4000u
/* The most a server's Retry-After may make kiln wait before one retry. */
#define BACKOFF_RETRY_AFTER_MAX_MS 120000u

/* The delay before retry n: uniform in [lo, lo + w] with d as above,
 * lo = max(d/2, not_before_ms), not_before_ms capped at
 * BACKOFF_RETRY_AFTER_MAX_MS (a server's Retry-After; 0 = none), and
 * w = max(d/2, min(BACKOFF_MIN_WINDOW_MS, max_ms)). Waiting longer than
 * Retry-After is what RFC 9110 10.2.3 allows; waiting exactly that long
 * would move the herd, not spread it. */
unsigned backoff_spread_ms(const struct backoff *b, unsigned n, unsigned not_before_ms);

/* Sleeps ms milliseconds (EINTR resumed). */
void backoff_sleep_ms(unsigned ms);

/* Next retry: -ETIMEDOUT when max_attempts are used up (nothing slept),
 * otherwise sleeps the delay, counts the attempt and returns 0. */
int backoff_next(struct backoff *b);
