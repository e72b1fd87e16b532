#include "backoff.h"

#include <sys/random.h>

void backoff_init(struct backoff *b, uint64_t base_usec, uint64_t cap_usec) {
        *b = (struct backoff) {
                .base_usec = base_usec ? base_usec : 1,
                .cap_usec = cap_usec < base_usec ? base_usec : cap_usec,
        };
        if (getrandom(&b->rng, sizeof b->rng, GRND_NONBLOCK) != (ssize_t) sizeof b->rng)
                b->rng = now_usec();
        if (!b->rng)
                b->rng = 0x9e3779b97f4a7c15ull;
}

static uint64_t xorshift64(uint64_t *s) {
        uint64_t x = *s;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        return *s = x;
}

uint64_t backoff_next(struct backoff *b) {
        uint64_t d = b->base_usec;
        for (unsigned i = 0; i < b->attempt && d < b->cap_usec; i++)
                d = d > UINT64_MAX / 2 ? UINT64_MAX : d * 2;
        if (d > b->cap_usec)
                d = b->cap_usec;
        b->attempt++;
        uint64_t half = d / 2;
        return half + xorshift64(&b->rng) % (d - half + 1);
}
