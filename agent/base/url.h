/* URLs for display. A URL may carry credentials: userinfo
 * (https://user:pass@host/...) or a token in its query string (?token=,
 * ?sig=, ?X-Amz-Signature=...) or fragment. Wherever kiln shows a URL (a log
 * line, an error message, the run report and its events, plan output, a file
 * it leaves on disk) it shows url_display()'s rendering; the real URL is
 * only handed to the request. */
#pragma once
#include "strbuf.h"

#define URL_DISPLAY_MAX 256

/* Renders url as scheme://host[:port]/path: the userinfo dropped, a query
 * string shown as "?...", a fragment as "#...", control characters as '_',
 * cut to URL_DISPLAY_MAX - 1 bytes ending in "..." when longer. Text that
 * is not a URL (no "scheme://") loses all up to its last '@' before any
 * '?' or '#', and '?' and '#' are elided the same way. Cannot fail: fills buf and
 * returns it; NULL renders as "". (A formatter into the caller's buffer, like
 * strerror_r, so a log call can take it as an argument.) */
const char *url_display(const char *url, char buf[static URL_DISPLAY_MAX]);

/* The same into a new string: NULL when url is NULL or out of memory. */
char *url_display_dup(const char *url);

/* Appends text (len bytes, e.g. a line of curl's debug output or an error
 * message) to out with every URL in it ("scheme://" up to a blank, quote or
 * '>') rendered by url_display(). Silent. 0 or -errno from strbuf. */
int url_scrub(const char *text, size_t len, struct strbuf *out);

/* Appends one line of curl's debug output (len bytes, no line end) to out
 * as it may be logged: the value of an Authorization, Proxy-Authorization,
 * Cookie or Set-Cookie header as "[redacted]"; a Location header's value
 * (relative or not) by url_display(); for a line kiln sent (out true), the
 * request target's query string of "GET /path?query HTTP/1.1" as "?...";
 * the query string of an HTTP/2 ":path:" pseudo-header curl describes as
 * "?..."; every other URL by url_scrub(). Silent. 0 or -errno from strbuf. */
int url_scrub_debug_line(const char *line, size_t len, bool out, struct strbuf *ret);
