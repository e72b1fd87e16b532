#include "bench.h"
#include "commands.h"
#include "exitcode.h"
#include "log.h"

#include <math.h>

static int help(void) {
        printf("usage: kiln bench [--json] [--cipher SPEC]... [--tune] [--offset SIZE] [--size SIZE] [--write]\n"
               "                  [--crypt DEV] [--depth N] [--slice MS] [--min-cipher MB/s] [--min-write MB/s]\n"
               "                  [--min-read MB/s] [--max-overhead FRACTION] [DEVICE]\n\n"
               "The crypt benchmark on its own: each cipher (default aes-xts-plain64:512) through a\n"
               "temporary dm-crypt mapping over a device-mapper zero target, with the in-memory AF_ALG\n"
               "figure beside it (measured as libcryptsetup's crypt_benchmark() does) where the kernel\n"
               "has AF_ALG; then, with DEVICE, sequential and 4 KiB random direct I/O on DEVICE and\n"
               "(--crypt) on a dm-crypt device over it. --depth: requests in flight (default %u);\n"
               "--slice: each dm-crypt and device test measures at least this many milliseconds after\n"
               "its warm-up (and at least 2 completions); AF_ALG runs this long (default: the gate's\n"
               "time budget). Reads only, unless --write: that overwrites SIZE bytes of DEVICE\n"
               "(and of --crypt DEV) from OFFSET. With floors given, exits 6 when one is missed.\n",
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

int cmd_bench(int argc, char **argv) {
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
                { "help", no_argument, NULL, 'h' },
                {},
        };
        bool json = false;
        struct bench_options bo = {};
        uint64_t offset = 0, size = 256ull * 1024 * 1024;
        const char *crypt_dev = NULL;
        _cleanup_strv_free_ char **ciphers = NULL;
        struct spec_bench policy = { .present = true, .on_fail = SPEC_ON_FAIL_ABORT };
        int c, r;
        CMD_FOREACH_OPTION(c, argc, argv, "+h", options) {
                double *d = NULL;
                switch (c) {
                case 'j': json = true; break;
                case 't': policy.tune = true; break;
                case 'w': bo.write = true; break;
                case 5:
                case 6: {
                        unsigned v;
                        if (safe_atou(optarg, &v) < 0 || v == 0 || (c == 5 && v > BENCH_DEPTH_MAX) || (c == 6 && v > 60000)) {
                                log_error("bad --%s '%s' (expected %s)", c == 5 ? "depth" : "slice", optarg,
                                          c == 5 ? "1 to 16" : "1 to 60000 milliseconds");
                                return KILN_EXIT_USAGE;
                        }
                        if (c == 5)
                                bo.depth = v;
                        else
                                bo.slice_ms = v;
                        break;
                }
                case 'C': crypt_dev = optarg; break;
                case 'c': {
                        _cleanup_free_ char *name = NULL;
                        unsigned ks;
                        if (bench_parse_cipher(optarg, &name, &ks) < 0) {
                                log_error("bad --cipher '%s' (expected e.g. aes-xts-plain64:512)", optarg);
                                return KILN_EXIT_USAGE;
                        }
                        char *dup = strdup(optarg);
                        if (!dup || strv_push(&ciphers, dup) < 0) {
                                free(dup);
                                log_error("out of memory");
                                return KILN_EXIT_FAILURE;
                        }
                        break;
                }
                case 'o':
                case 's':
                        if (parse_size(optarg, c == 'o' ? &offset : &size, NULL) < 0) {
                                log_error("bad --%s '%s' (expected a size like 256M)", c == 'o' ? "offset" : "size", optarg);
                                return KILN_EXIT_USAGE;
                        }
                        break;
                case 1: d = &policy.cipher_mbps; break;
                case 2: d = &policy.write_mbps; break;
                case 3: d = &policy.read_mbps; break;
                case 4: d = &policy.max_overhead; break;
                case 'h': return help();
                default: return KILN_EXIT_USAGE;
                }
                if (d && parse_double(optarg, d) < 0) {
                        static const char *const floors[] = { "min-cipher", "min-write", "min-read", "max-overhead" };
                        log_error("bad number '%s' for --%s", optarg, floors[c - 1]);
                        return KILN_EXIT_USAGE;
                }
        }
        if (argc - optind > 1) {
                log_error("unexpected argument '%s' (see 'kiln bench --help')", argv[optind + 1]);
                return KILN_EXIT_USAGE;
        }
        const char *device = optind < argc ? argv[optind] : NULL;
        if (crypt_dev && !device) {
                log_error("--crypt needs the raw DEVICE under it to compare with");
                return KILN_EXIT_USAGE;
        }
        /* no --cipher: the cipher a LUKS object gets when its spec names none */
        char *dflt = ciphers ? NULL : strdupf("%s:%u", SPEC_LUKS_CIPHER, SPEC_LUKS_KEY_SIZE);
        if (!ciphers && (!dflt || strv_push(&ciphers, dflt) < 0)) {
                free(dflt);
                log_error("out of memory");
                return KILN_EXIT_FAILURE;
        }
        policy.ciphers = ciphers;

        struct bench_result res = { .chosen = -1 };
        _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
        r = bench_raw(&policy, device, offset, device ? size : 0, &bo, &res, &err);
        if (r >= 0 && crypt_dev)
                r = bench_crypt(&policy, crypt_dev, offset, size, &bo, &res, &err);
        if (r < 0) {
                if (r == -ENODEV)
                        log_error("crypt benchmark cannot run: %s", strbuf_why(&err, r));
                else
                        log_error_errno(r, "crypt benchmark failed: %s", strbuf_why(&err, r));
                bench_result_done(&res);
                return KILN_EXIT_FAILURE;
        }
        _cleanup_strbuf_ struct strbuf out = STRBUF_INIT, why = STRBUF_INIT;
        r = json ? bench_to_json(&res, &out) : bench_to_text(&res, &out);
        int g = bench_gate(&policy, &res, &why);
        bench_result_done(&res);
        if (r < 0) {
                log_error_errno(r, "failed to format the benchmark result: %m");
                return KILN_EXIT_FAILURE;
        }
        fputs(strbuf_str(&out), stdout);
        fflush(stdout);
        if (g < 0) {
                log_error("crypt benchmark gate failed:\n%s", strbuf_str(&why));
                return KILN_EXIT_BENCH;
        }
        return KILN_EXIT_OK;
}
