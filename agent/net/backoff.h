/* Capped, jittered exponential backoff for retrying network operations
 * (fetch, registration). Delay for attempt n (0-based) is drawn uniformly
 * from [d/2, d] with d = min(max_ms, initial_ms * 2^n): "equal jitter", so
 * several nodes retrying against one server spread out but never retry at once. */
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

/* Next retry: -ETIMEDOUT when max_attempts are used up (nothing slept),
 * otherwise sleeps the delay, counts the attempt and returns 0. */
int backoff_next(struct backoff *b);
