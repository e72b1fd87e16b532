/* Minimal assertion helpers for unit tests: each check prints what differed
 * and the test exits 1 at the end if any failed. */
#pragma once
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int tap_failures;
static int tap_checks;

#define CHECK(cond) do { tap_checks++; if (!(cond)) { tap_failures++; \
        fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)
#define CHECK_INT(a, b) do { long long _a = (long long) (a), _b = (long long) (b); tap_checks++; \
        if (_a != _b) { tap_failures++; fprintf(stderr, "%s:%d: %s == %lld, expected %lld\n", \
        __FILE__, __LINE__, #a, _a, _b); } } while (0)
#define CHECK_U64(a, b) do { uint64_t _a = (a), _b = (b); tap_checks++; \
        if (_a != _b) { tap_failures++; fprintf(stderr, "%s:%d: %s == %" PRIu64 ", expected %" PRIu64 "\n", \
        __FILE__, __LINE__, #a, _a, _b); } } while (0)
#define CHECK_STR(a, b) do { const char *_a = (a), *_b = (b); tap_checks++; \
        if (!_a || !_b || strcmp(_a, _b) != 0) { tap_failures++; fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n", \
        __FILE__, __LINE__, #a, _a ? _a : "(null)", _b ? _b : "(null)"); } } while (0)
#define TEST_DONE() (fprintf(stderr, "%d checks, %d failed\n", tap_checks, tap_failures), tap_failures ? 1 : 0)
