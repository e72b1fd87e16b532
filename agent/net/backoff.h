/* The one retry rule of every network request kiln makes: the spec, keys
 * and image (fetch.c), the controller and webhook (delivery.c) and the
 * CloudStack registration's looks (cloudstack.c). Each delay is drawn
 * uniformly from a window, [lo, lo + w], and what the last answer was
 * decides the window:
 *
 *   a fault (no answer, a reset, a 5xx that is not push-back): exponential,
 *     d = min(max_ms, initial_ms * 2^n) for retry n (0-based), lo = d/2,
 *     w = max(d/2, min(BACKOFF_MIN_WINDOW_MS, max_ms));
 *   push-back (backoff_status_is_pushback(): 503, 429, and what a caller
 *     knows to mean "later", e.g. CloudStack's API_LIMIT_EXCEED): a steady
 *     pace, not a growing one (docs/benchmarks.md "A rack at once"):
 *     lo = max(min(BACKOFF_PUSHBACK_FLOOR_MS, max_ms), Retry-After),
 *     Retry-After capped at BACKOFF_RETRY_AFTER_MAX_MS; w = BACKOFF_PUSHBACK_WINDOW_MS, or
 *     max(Retry-After, BACKOFF_MIN_WINDOW_MS) when the server sent one
 *     (the server sets the pace it can take); w never above
 *     BACKOFF_PUSHBACK_WINDOW_MS nor max_ms.
 *
 * A busy server is alive and rationing: a window that keeps growing only
 * leaves its slots idle while the nodes that lost most often wait longest
 * (the tail the fleet showed: 15-30 s waits beside free slots). What keeps
 * a rack from retrying at once is the window's width, drawn afresh each
 * time. */
#pragma once
#include "util.h"

struct backoff {
        unsigned initial_ms;    /* first delay; 0 = 500 */
        unsigned max_ms;        /* cap per delay; 0 = 30000 */
        unsigned max_attempts;  /* retries allowed after the first try; 0 = none */
        unsigned attempt;       /* retries made so far */
};

#define BACKOFF_INIT(init, max, attempts) { (init), (max), (attempts), 0 }

/* The narrowest window of a fault's retry (but never wider than max_ms),
 * and of a push-back's when the server sent Retry-After. */
#define BACKOFF_MIN_WINDOW_MS 4000u
/* The most a server's Retry-After may make kiln wait before one retry. */
#define BACKOFF_RETRY_AFTER_MAX_MS 120000u
/* Push-back without Retry-After: every retry lands uniformly in a window
 * this wide, so a node's retry falls in a given second with probability
 * 1 s / 16 s: a hundred nodes told "503" at once retry about 6 a second.
 * Wide enough to keep a 100-node rack under 20 nodes retrying in any one
 * second, narrow enough that a free slot waits for a retry only briefly
 * (tests/fleet: wall time within 1.2x of the ideal). */
#define BACKOFF_PUSHBACK_WINDOW_MS 16000u
/* ... after at least this long. */
#define BACKOFF_PUSHBACK_FLOOR_MS 1000u

/* True for the HTTP answers that mean "come back later": 503 Service
 * Unavailable (RFC 9110 15.6.4) and 429 Too Many Requests (RFC 6585 4). */
bool backoff_status_is_pushback(long status);

/* The delay before retry n (0-based) as the rule above says; pushback says
 * which window, retry_after_ms is the server's Retry-After (0 = none). */
unsigned backoff_spread_ms(const struct backoff *b, unsigned n, bool pushback, unsigned retry_after_ms);

/* Sleeps ms milliseconds (EINTR resumed). */
void backoff_sleep_ms(unsigned ms);
