/* Capped exponential backoff with jitter, for anything that retries over the
 * network. The delay before retry n (n = 1 for the first retry) is drawn
 * uniformly from [d/2, d] with d = min(cap, base * 2^(n-1)) ("equal jitter"):
 * never zero, never above the cap, and spread so that many nodes booting at
 * once do not hit the controller in lock step. */
#pragma once
#include "util.h"

struct backoff {
        uint64_t base_usec;     /* first delay before jitter */
        uint64_t cap_usec;      /* no delay is longer than this */
        unsigned attempt;       /* retries handed out so far */
        uint64_t rng;           /* xorshift state; seeded by backoff_init */
};

void backoff_init(struct backoff *b, uint64_t base_usec, uint64_t cap_usec);
/* The delay before the next retry; advances the attempt counter. */
uint64_t backoff_next(struct backoff *b);
