/* kiln fetch URL [--sha256 HEX] [--ca FILE] [--max SIZE] [--retries N] [-o FILE]
 * Fetches one URL with kiln's own fetcher (retries, resume, TLS with the
 * extra CA) and writes it to stdout or a file; for operators and tests.
 * -o FILE: written to a temporary file beside it and renamed over FILE only
 * when the fetch (and the sha256) succeeded; on failure FILE is untouched. */
#include "commands.h"
#include "exitcode.h"
#include "fetch.h"
#include "fetch_file.h"
#include "log.h"
#include "url.h"

#include <inttypes.h>

#define FETCH_USAGE "usage: kiln fetch URL [--sha256 HEX] [--ca FILE] [--max SIZE] [--retries N] [-o FILE]"

static void fetch_usage(void) {
        printf(FETCH_USAGE "\n"
               "fetches one URL (http, https, file) the way kiln boot fetches a spec: 5xx and timeouts\n"
               "retried with capped backoff, an interrupted download resumed with Range\n"
               "  --sha256 HEX   the content must hash to this (64 hex digits), else exit 8\n"
               "  --ca FILE      trust this CA bundle beside the system CAs\n"
               "  --max SIZE     refuse more than SIZE bytes (512M, 2G; docs/spec.md \"Sizes\")\n"
               "  --retries N    retries after the first attempt (0: none)\n"
               "  -o, --output FILE  write to FILE (written whole, then renamed) instead of stdout\n"
               "the URL is shown without userinfo and query string\n"
               "exit 0 fetched, 8 fetch failed or sha256 mismatch, 1 the output file could not be written, 64 usage\n");
}

int cmd_fetch(int argc, char **argv) {
        static const struct option options[] = {
                { "sha256", required_argument, NULL, 's' },
                { "ca", required_argument, NULL, 'c' },
                { "max", required_argument, NULL, 'm' },
                { "retries", required_argument, NULL, 'r' },
                { "output", required_argument, NULL, 'o' },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        struct fetch_options o = {};
        const char *sha = NULL, *out = NULL;
        int c, r;

        CMD_FOREACH_OPTION(c, argc, argv, "o:h", options) {
                switch (c) {
                case 's':
                        if (!sha256_hex_valid(optarg)) {
                                log_error("invalid --sha256 '%s': expected 64 hex digits", optarg);
                                return KILN_EXIT_USAGE;
                        }
                        sha = optarg;
                        break;
                case 'c':
                        o.ca_file = optarg;
                        break;
                case 'm':
                        if (parse_size(optarg, &o.max_size, NULL) < 0) {
                                log_error("invalid --max '%s'", optarg);
                                return KILN_EXIT_USAGE;
                        }
                        break;
                case 'r':
                        if (safe_atou(optarg, &o.max_retries) < 0) {
                                log_error("invalid --retries '%s'", optarg);
                                return KILN_EXIT_USAGE;
                        }
                        o.no_retry = o.max_retries == 0;
                        break;
                case 'o':
                        out = optarg;
                        break;
                case 'h':
                        fetch_usage();
                        return KILN_EXIT_OK;
                default:
                        return KILN_EXIT_USAGE;
                }
        }
        if (cmd_check_operands(argc, argv, 1) != KILN_EXIT_OK)
                return KILN_EXIT_USAGE;
        if (optind + 1 != argc) {
                log_error("%s", FETCH_USAGE);
                return KILN_EXIT_USAGE;
        }
        const char *url = argv[optind];
        char shown[URL_DISPLAY_MAX];
        url_display(url, shown);        /* what is logged: no userinfo, no query string */

        _cleanup_(fetch_file_done) struct fetch_file f = { .fd = -1 };
        r = fetch_file_open(out, &f);
        if (r < 0)
                return log_error_errno(r, "failed to create a temporary file beside '%s': %m", out), KILN_EXIT_FAILURE;
        struct fetch_result res = {};
        _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
        r = fetch_url(url, &o, &f.sink, &res, &err);
        if (r < 0) {
                log_error_errno(r, "failed to fetch '%s': %s", shown, strbuf_why(&err, r));
                return KILN_EXIT_FETCH;
        }
        log_info("fetched '%s': %" PRIu64 " bytes, %u attempt(s), %u restart(s), sha256 %s",
                 shown, res.bytes, res.attempts, res.restarts, res.sha256);
        if (sha && !sha256_hex_equal(sha, res.sha256)) {
                log_error("sha256 mismatch for '%s': expected %s, got %s", shown, sha, res.sha256);
                return KILN_EXIT_FETCH;
        }
        bool renaming;
        r = fetch_file_commit(&f, &renaming);
        if (r < 0 && renaming)
                return log_error_errno(r, "failed to rename '%s' to '%s': %m", f.tmp, out), KILN_EXIT_FAILURE;
        if (r < 0)
                return log_error_errno(r, "failed to write '%s': %m", f.tmp), KILN_EXIT_FAILURE;
        return KILN_EXIT_OK;
}
