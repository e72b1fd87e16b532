#include "ring.h"

#include <assert.h>

static size_t min3(size_t a, size_t b, size_t c) {
        size_t m = a < b ? a : b;
        return m < c ? m : c;
}

int ring_init(struct ring *r, size_t cap) {
        *r = (struct ring) {};
        r->buf = malloc(cap);
        if (!r->buf)
                return -ENOMEM;
        r->cap = cap;
        pthread_mutex_init(&r->lock, NULL);
        pthread_cond_init(&r->cond, NULL);
        return 0;
}

void ring_done(struct ring *r) {
        if (!r->buf)
                return;
        pthread_cond_destroy(&r->cond);
        pthread_mutex_destroy(&r->lock);
        free(r->buf);
        r->buf = NULL;
}

/* Wakes the other side only when it waits: no futex call per chunk. */
static void wake(struct ring *r, bool *waits) {
        if (*waits)
                pthread_cond_broadcast(&r->cond);
}

int ring_put(struct ring *r, const void *data, size_t n) {
        const uint8_t *p = data;

        pthread_mutex_lock(&r->lock);
        while (n > 0) {
                while (r->len == r->cap && !r->cancelled) {
                        r->producer_waits = true;
                        pthread_cond_wait(&r->cond, &r->lock);
                        r->producer_waits = false;
                }
                if (r->cancelled) {
                        pthread_mutex_unlock(&r->lock);
                        return -ECANCELED;
                }
                size_t tail = (r->head + r->len) % r->cap;
                size_t chunk = min3(r->cap - r->len, r->cap - tail, n);
                /* The consumer only reads [head, head+len): copy without the lock. */
                pthread_mutex_unlock(&r->lock);
                memcpy(r->buf + tail, p, chunk);
                pthread_mutex_lock(&r->lock);
                r->len += chunk;
                r->total_in += chunk;
                p += chunk;
                n -= chunk;
                wake(r, &r->consumer_waits);
        }
        pthread_mutex_unlock(&r->lock);
        return 0;
}

void ring_finish(struct ring *r, int err) {
        pthread_mutex_lock(&r->lock);
        r->finished = true;
        r->finish_err = err < 0 ? err : 0;
        pthread_cond_broadcast(&r->cond);
        pthread_mutex_unlock(&r->lock);
}

ssize_t ring_peek(struct ring *r, const void **ret, size_t max) {
        ssize_t n;

        pthread_mutex_lock(&r->lock);
        assert(r->borrowed == 0);
        for (;;) {
                if (r->cancelled) {
                        n = r->cancel_err;
                        break;
                }
                if (r->len > 0) {
                        size_t chunk = min3(r->len, r->cap - r->head, max);
                        *ret = r->buf + r->head;
                        r->borrowed = chunk;
                        n = (ssize_t) chunk;
                        break;
                }
                if (r->finished) {
                        n = r->finish_err;
                        break;
                }
                r->consumer_waits = true;
                pthread_cond_wait(&r->cond, &r->lock);
                r->consumer_waits = false;
        }
        pthread_mutex_unlock(&r->lock);
        return n;
}

static void consume_locked(struct ring *r, size_t n) {
        assert(n <= r->borrowed);
        r->head = (r->head + n) % r->cap;
        r->len -= n;
        r->borrowed = 0;
        wake(r, &r->producer_waits);
}

void ring_consume(struct ring *r, size_t n) {
        pthread_mutex_lock(&r->lock);
        consume_locked(r, n);
        pthread_mutex_unlock(&r->lock);
}

void ring_release(struct ring *r) {
        pthread_mutex_lock(&r->lock);
        if (r->borrowed > 0)
                consume_locked(r, r->borrowed);
        pthread_mutex_unlock(&r->lock);
}

void ring_cancel(struct ring *r, int err) {
        pthread_mutex_lock(&r->lock);
        if (!r->cancelled) {
                r->cancelled = true;
                r->cancel_err = err < 0 ? err : -ECANCELED;
        }
        pthread_cond_broadcast(&r->cond);
        pthread_mutex_unlock(&r->lock);
}

uint64_t ring_total_in(struct ring *r) {
        pthread_mutex_lock(&r->lock);
        uint64_t n = r->total_in;
        pthread_mutex_unlock(&r->lock);
        return n;
}

int ring_drain(struct ring *r) {
        ring_release(r);
        for (;;) {
                const void *p;
                ssize_t n = ring_peek(r, &p, SIZE_MAX);
                if (n <= 0)
                        return (int) n;
                ring_consume(r, (size_t) n);
        }
}
