/* Backoff delays: within [d/2, d], doubling from base, never above the cap. */
#include "backoff.h"
#include "tap.h"

int main(void) {
        for (int round = 0; round < 50; round++) {
                struct backoff b;
                backoff_init(&b, 1000, 30000);
                uint64_t expect[] = { 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000 };
                for (size_t i = 0; i < ELEMENTSOF(expect); i++) {
                        uint64_t d = backoff_next(&b);
                        CHECK(d >= expect[i] / 2 && d <= expect[i]);
                }
        }
        /* Jitter: 100 first delays are not all the same. */
        uint64_t first = 0;
        bool differ = false;
        for (int i = 0; i < 100; i++) {
                struct backoff b;
                backoff_init(&b, 1000000, 1000000);
                uint64_t d = backoff_next(&b);
                if (i == 0)
                        first = d;
                else if (d != first)
                        differ = true;
        }
        CHECK(differ);
        return TEST_DONE();
}
