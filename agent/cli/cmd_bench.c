#include "bench.h"
#include "commands.h"
#include "exitcode.h"
#include "log.h"

#include <math.h>

static int help(void) {
        printf("usage: kiln bench [--json] [--cipher SPEC]... [--tune] [--offset SIZE] [--size SIZE] [--write]\n"
               "                  [--crypt DEV] [--depth N] [--slice MS] [--min-cipher MB/s] [--min-write MB/s]\n"
               "                  [--min-read MB/s] [--max-overhead FRACTION] [--device-only] [--gate] [DEVICE]\n\n"
               "The crypt benchmark on its own: each cipher (default aes-xts-plain64:512) through a\n"
               "temporary dm-crypt mapping over a device-mapper zero target, with the in-memory AF_ALG\n"
               "figure beside it (measured as libcryptsetup's crypt_benchmark() does) where the kernel\n"
               "has AF_ALG, unless --gate (what kiln apply's gate measures: no floor judges AF_ALG);\n"
               "then, with DEVICE, sequential and 4 KiB random direct I/O on DEVICE and\n"
               "(--crypt) on a dm-crypt device over it. --depth: requests in flight (default %u);\n"
               "--slice: each dm-crypt and device test measures at least this many milliseconds after\n"
               "its warm-up (and at least 2 completions, in whole cycles of the requests in flight);\n"
               "AF_ALG runs this long (default: the gate's time budget). Reads only, unless --write:\n"
               "that overwrites SIZE bytes of DEVICE\n"
               "(and of --crypt DEV) from OFFSET. --device-only: DEVICE's tests alone, no cipher (needs\n"
               "no device-mapper). A figure whose window did not settle (its halves within 10 %%)\n"
               "within the time budget is listed, and a floor judges it on its lower bound. With\n"
               "floors given, exits 6 when one is missed.\n",
               BENCH_DEPTH);
        return KILN_EXIT_OK;
}

static int parse_double(const char *s, double *ret) {
        char *end = NULL;
        errno = 0;
        double v = strtod(s, &end);
        if (errno || !end || end == s || *end || !isfinite(v) || v < 0)
                return -EINVAL;
        *ret = v;
        return 0;
}

/* What kiln bench's options say. */
struct bench_args {
        bool json;
        struct bench_options bo;
        uint64_t offset, size;
        const char *device, *crypt_dev;
        char **ciphers;
        struct spec_bench policy;
};

/* The options into a; -1 to go on, else the exit code (--help, a bad option). */
static int bench_parse_args(int argc, char **argv, struct bench_args *a) {
        static const struct option options[] = {
                { "json", no_argument, NULL, 'j' },
                { "cipher", required_argument, NULL, 'c' },
                { "tune", no_argument, NULL, 't' },
                { "offset", required_argument, NULL, 'o' },
                { "size", required_argument, NULL, 's' },
                { "write", no_argument, NULL, 'w' },
                { "crypt", required_argument, NULL, 'C' },
                { "min-cipher", required_argument, NULL, 1 },
                { "min-write", required_argument, NULL, 2 },
                { "min-read", required_argument, NULL, 3 },
                { "max-overhead", required_argument, NULL, 4 },
                { "depth", required_argument, NULL, 5 },
                { "slice", required_argument, NULL, 6 },
                { "device-only", no_argument, NULL, 7 },
                { "gate", no_argument, NULL, 8 },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        int c;
        CMD_FOREACH_OPTION(c, argc, argv, "+h", options) {
                double *d = NULL;
                switch (c) {
                case 'j': a->json = true; break;
                case 't': a->policy.tune = true; break;
                case 'w': a->bo.write = true; break;
                case 7: a->bo.device_only = true; break;
                case 8: a->bo.af_alg = false; break;
                case 5:
                case 6: {
                        unsigned v;
                        if (safe_atou(optarg, &v) < 0 || v == 0 || (c == 5 && v > BENCH_DEPTH_MAX) || (c == 6 && v > 60000)) {
                                log_error("bad --%s '%s' (expected %s)", c == 5 ? "depth" : "slice", optarg,
                                          c == 5 ? "1 to 16" : "1 to 60000 milliseconds");
                                return KILN_EXIT_USAGE;
                        }
                        if (c == 5)
                                a->bo.depth = v;
                        else
                                a->bo.slice_ms = v;
                        break;
                }
                case 'C': a->crypt_dev = optarg; break;
                case 'c': {
                        _cleanup_free_ char *name = NULL;
                        unsigned ks;
                        if (bench_parse_cipher(optarg, &name, &ks) < 0) {
                                log_error("bad --cipher '%s' (expected e.g. aes-xts-plain64:512)", optarg);
                                return KILN_EXIT_USAGE;
                        }
                        if (strv_pushdup(&a->ciphers, optarg) < 0) {
                                log_error("out of memory");
                                return KILN_EXIT_FAILURE;
                        }
                        break;
                }
                case 'o':
                case 's':
                        if (parse_size(optarg, c == 'o' ? &a->offset : &a->size, NULL) < 0) {
                                log_error("bad --%s '%s' (expected a size like 256M)", c == 'o' ? "offset" : "size", optarg);
                                return KILN_EXIT_USAGE;
                        }
                        break;
                case 1: d = &a->policy.cipher_mbps; break;
                case 2: d = &a->policy.write_mbps; break;
                case 3: d = &a->policy.read_mbps; break;
                case 4: d = &a->policy.max_overhead; break;
                case 'h': return help();
                default: return KILN_EXIT_USAGE;
                }
                if (d && parse_double(optarg, d) < 0) {
                        static const char *const floors[] = { "min-cipher", "min-write", "min-read", "max-overhead" };
                        log_error("bad number '%s' for --%s", optarg, floors[c - 1]);
                        return KILN_EXIT_USAGE;
                }
        }
        if (cmd_check_operands(argc, argv, 1) != KILN_EXIT_OK)
                return KILN_EXIT_USAGE;
        a->device = optind < argc ? argv[optind] : NULL;
        if (a->bo.device_only && (!a->device || a->ciphers || a->policy.tune || a->policy.cipher_mbps > 0)) {
                log_error("--device-only needs DEVICE and measures no cipher (no --cipher, --tune, --min-cipher)");
                return KILN_EXIT_USAGE;
        }
        if (a->crypt_dev && !a->device) {
                log_error("--crypt needs the raw DEVICE under it to compare with");
                return KILN_EXIT_USAGE;
        }
        return -1;
}

int cmd_bench(int argc, char **argv) {
        struct bench_args a = {
                .size = 256ull * 1024 * 1024,
                .bo = { .af_alg = true },
                .policy = { .present = true, .on_fail = SPEC_ON_FAIL_ABORT },
        };
        int r = bench_parse_args(argc, argv, &a);
        _cleanup_strv_free_ char **ciphers = a.ciphers;        /* also those of a bad command line */
        if (r >= 0)
                return r;
        if (bench_default_ciphers(&ciphers) < 0) {
                log_error("out of memory");
                return KILN_EXIT_FAILURE;
        }
        a.policy.ciphers = ciphers;

        struct bench_result res = { .chosen = -1 };
        _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
        r = bench_run(&a.policy, a.device, a.crypt_dev, a.offset, a.size, &a.bo, &res, &err);
        if (r < 0) {
                if (r == -ENODEV)
                        log_error("crypt benchmark cannot run: %s", strbuf_why(&err, r));
                else
                        log_error_errno(r, "crypt benchmark failed: %s", strbuf_why(&err, r));
                bench_result_done(&res);
                return KILN_EXIT_FAILURE;
        }
        _cleanup_strbuf_ struct strbuf out = STRBUF_INIT, why = STRBUF_INIT;
        r = a.json ? bench_to_json(&res, &out) : bench_to_text(&res, &out);
        int g = bench_gate(&a.policy, &res, &why);
        _cleanup_strbuf_ struct strbuf unsettled = STRBUF_INIT;
        if (r >= 0 && a.json)
                r = bench_unsettled(&res, &unsettled);
        bench_result_done(&res);
        if (r < 0) {
                log_error_errno(r, "failed to format the benchmark result: %m");
                return KILN_EXIT_FAILURE;
        }
        fputs(strbuf_str(&out), stdout);
        fflush(stdout);
        if (a.json && unsettled.len)       /* the text output ends with these lines itself */
                for (char *line = unsettled.buf, *nl; line && *line; line = nl ? nl + 1 : NULL) {
                        if ((nl = strchr(line, '\n')))
                                *nl = 0;
                        log_warning("%s", line);
                }
        if (g < 0) {
                log_error("crypt benchmark gate failed:\n%s", strbuf_str(&why));
                return KILN_EXIT_BENCH;
        }
        return KILN_EXIT_OK;
}
