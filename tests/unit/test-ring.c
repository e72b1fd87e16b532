/* The bounded ring between the image threads: bytes arrive in order and
 * complete through wrap-around, the producer's error reaches the consumer
 * after the bytes, and a cancel ends a producer blocked on a full ring. */
#include "ring.h"
#include "tap.h"

#define TOTAL (3u << 20)

struct producer {
        struct ring *r;
        int put_err;
        int finish_with;
};

static void *produce(void *userdata) {
        struct producer *p = userdata;
        uint8_t chunk[7919];
        uint32_t k = 0;
        p->put_err = 0;
        for (size_t done = 0; done < TOTAL && p->put_err == 0;) {
                size_t n = sizeof(chunk) < TOTAL - done ? sizeof(chunk) : TOTAL - done;
                for (size_t i = 0; i < n; i++)
                        chunk[i] = (uint8_t) (k++ * 2654435761u >> 24);
                p->put_err = ring_put(p->r, chunk, n);
                done += n;
        }
        ring_finish(p->r, p->finish_with);
        return NULL;
}

static void test_order_and_error(int finish_with) {
        struct ring r;
        struct producer p = { .r = &r, .finish_with = finish_with };
        pthread_t t;
        uint32_t k = 0;
        size_t got = 0;
        bool same = true;
        ssize_t n;

        CHECK_INT(ring_init(&r, 64 << 10), 0);      /* much smaller than TOTAL: wraps often */
        CHECK_INT(pthread_create(&t, NULL, produce, &p), 0);
        for (;;) {
                const void *q;
                n = ring_peek(&r, &q, 5000);
                if (n <= 0)
                        break;
                CHECK(n <= 5000);
                for (ssize_t i = 0; i < n; i++)
                        same &= ((const uint8_t *) q)[i] == (uint8_t) (k++ * 2654435761u >> 24);
                ring_consume(&r, (size_t) n);
                got += (size_t) n;
        }
        pthread_join(t, NULL);
        CHECK(same);
        CHECK_U64(got, TOTAL);
        CHECK_INT(n, finish_with);
        CHECK_U64(ring_total_in(&r), TOTAL);
        CHECK_INT(p.put_err, 0);
        ring_done(&r);
}

static void test_cancel(void) {
        struct ring r;
        struct producer p = { .r = &r };
        pthread_t t;
        const void *q;

        CHECK_INT(ring_init(&r, 4096), 0);
        CHECK_INT(pthread_create(&t, NULL, produce, &p), 0);
        CHECK_INT(ring_peek(&r, &q, 100), 100);       /* the producer is running */
        ring_consume(&r, 100);
        ring_cancel(&r, -EPERM);                      /* it blocks on the full ring, then gives up */
        pthread_join(t, NULL);
        CHECK_INT(p.put_err, -ECANCELED);
        CHECK_INT(ring_peek(&r, &q, 100), -EPERM);
        ring_done(&r);
}

/* ring_release gives back exactly what the last peek lent, and nothing twice. */
static void test_release(void) {
        struct ring r;
        const void *q;
        CHECK_INT(ring_init(&r, 64), 0);
        ring_release(&r);                               /* nothing lent: a no-op */
        CHECK_INT(ring_put(&r, "abcdef", 6), 0);
        ring_finish(&r, 0);
        CHECK_INT(ring_peek(&r, &q, 4), 4);
        CHECK(memcmp(q, "abcd", 4) == 0);
        ring_release(&r);
        ring_release(&r);                               /* already given back */
        CHECK_INT(ring_peek(&r, &q, 4), 2);
        CHECK(memcmp(q, "ef", 2) == 0);
        ring_release(&r);
        CHECK_INT(ring_peek(&r, &q, 4), 0);             /* the end */
        ring_done(&r);
}

int main(void) {
        test_order_and_error(0);
        test_order_and_error(-ECONNRESET);
        test_cancel();
        test_release();
        return TEST_DONE();
}
