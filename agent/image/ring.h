/* A bounded byte ring between two threads: one producer, one consumer.
 *
 * The producer copies bytes in with ring_put() (blocks while the ring is
 * full) and ends the stream with ring_finish(), giving 0 or an error. The
 * consumer borrows contiguous bytes in place with ring_peek() and hands them
 * back with ring_consume(), so a reader such as libarchive gets a pointer into
 * the ring instead of a copy. Either side can give up with ring_cancel():
 * a blocked or later ring_put() then returns -ECANCELED, a ring_peek()
 * returns the error given. Memory is the capacity, allocated once. */
#pragma once
#include "util.h"

#include <pthread.h>

struct ring {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        uint8_t *buf;
        size_t cap, head, len;
        size_t borrowed;        /* bytes the consumer holds (from head) */
        uint64_t total_in;      /* bytes ever put */
        bool finished;
        int finish_err;
        bool cancelled;
        int cancel_err;
        bool producer_waits, consumer_waits;
};

int ring_init(struct ring *r, size_t cap);
void ring_done(struct ring *r);

/* Producer: copies all of data in; 0, or -ECANCELED when the consumer gave up. */
int ring_put(struct ring *r, const void *data, size_t n);
/* Producer: no more bytes; err < 0 is what the consumer gets after the
 * bytes already put. */
void ring_finish(struct ring *r, int err);

/* Consumer: waits for bytes and points *ret at up to max of them (at least
 * one), contiguous in the ring, valid until ring_consume(). Returns their
 * count, 0 at the end of a complete stream, or the producer's error (or the
 * cancel error). */
ssize_t ring_peek(struct ring *r, const void **ret, size_t max);
/* Consumer: gives back the n bytes of the last ring_peek() (all of them). */
void ring_consume(struct ring *r, size_t n);
/* Consumer: gives back whatever the last ring_peek() lent, if anything (for
 * a reader like libarchive that only says "next block, please"). */
void ring_release(struct ring *r);
/* Consumer: reads and drops the rest of the stream (what was lent is given
 * back first): 0 at the end of a complete stream, or the error. */
int ring_drain(struct ring *r);

/* Either side (or a third thread): stop the stream. The producer's next (or
 * blocked) ring_put() returns -ECANCELED; the consumer's next (or blocked)
 * ring_peek() returns err (< 0) at once. */
void ring_cancel(struct ring *r, int err);

/* Bytes put so far (any thread). */
uint64_t ring_total_in(struct ring *r);
