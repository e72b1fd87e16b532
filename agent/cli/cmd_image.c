/* kiln image URL --sha256 HEX --target DIR|DEVICE [--format tar|raw] [--ca FILE]
 *            [--max SIZE] [--retries N] [--no-sync]
 * Installs one image the way `kiln apply` does, for tests and operators. */
#include "commands.h"
#include "exitcode.h"
#include "image.h"
#include "log.h"
#include "url.h"

#include <inttypes.h>

#define IMAGE_USAGE "usage: kiln image URL --sha256 HEX --target DIR|DEVICE [--format tar|raw] [--ca FILE] " \
                    "[--max SIZE] [--retries N] [--no-sync]"

static void image_usage(void) {
        printf("%s\n"
               "streams an image the way kiln apply does: HTTP(S) or file:// -> sha256 -> libarchive -> target\n"
               "  --sha256 HEX       the file as downloaded must hash to this (required)\n"
               "  --target DIR|DEV   a directory to unpack a tar into, or a block device for a raw image\n"
               "  --format tar|raw   default: raw for a block device, else tar (zstd/xz/gzip detected)\n"
               "  --ca FILE          trust this CA bundle beside the system CAs\n"
               "  --max SIZE         refuse downloads larger than SIZE (docs/spec.md \"Sizes\")\n"
               "  --retries N        retries after the first attempt (0: none)\n"
               "  --no-sync          do not sync the target at the end\n"
               "until verified the target carries .kiln-incomplete (raw: RUN_DIR/image-incomplete), which\n"
               "names the image (raw: the device) and, after a failure, why: \"failed: ...\"\n"
               "exit 0 installed and verified, 5 failed (the target is left marked incomplete), 64 usage\n",
               IMAGE_USAGE);
}

int cmd_image(int argc, char **argv) {
        static const struct option options[] = {
                { "sha256", required_argument, NULL, 's' },
                { "target", required_argument, NULL, 't' },
                { "format", required_argument, NULL, 'f' },
                { "ca", required_argument, NULL, 'c' },
                { "max", required_argument, NULL, 'm' },
                { "retries", required_argument, NULL, 'r' },
                { "no-sync", no_argument, NULL, 'n' },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        struct spec_image img = { .present = true };
        struct image_options o = {};
        struct image_progress_printer pp = {};
        const char *target = NULL, *format = NULL;
        int c, r;

        CMD_FOREACH_OPTION(c, argc, argv, "h", options) {
                switch (c) {
                case 's':
                        if (!sha256_hex_valid(optarg)) {
                                log_error("invalid --sha256 '%s': expected 64 hex digits", optarg);
                                return KILN_EXIT_USAGE;
                        }
                        img.sha256 = optarg;
                        break;
                case 't':
                        target = optarg;
                        break;
                case 'f':
                        if (!streq(optarg, "tar") && !streq(optarg, "raw")) {
                                log_error("invalid --format '%s': expected tar or raw", optarg);
                                return KILN_EXIT_USAGE;
                        }
                        format = optarg;
                        break;
                case 'c':
                        o.fetch.ca_file = optarg;
                        break;
                case 'm':
                        if (parse_size(optarg, &img.max_size, NULL) < 0 || img.max_size == 0) {
                                log_error("invalid --max '%s'", optarg);
                                return KILN_EXIT_USAGE;
                        }
                        break;
                case 'r':
                        if (safe_atou(optarg, &o.fetch.max_retries) < 0) {
                                log_error("invalid --retries '%s'", optarg);
                                return KILN_EXIT_USAGE;
                        }
                        o.fetch.no_retry = o.fetch.max_retries == 0;
                        break;
                case 'n':
                        o.no_sync = true;
                        break;
                case 'h':
                        image_usage();
                        return KILN_EXIT_OK;
                default:
                        return KILN_EXIT_USAGE;
                }
        }
        if (cmd_check_operands(argc, argv, 1) != KILN_EXIT_OK)
                return KILN_EXIT_USAGE;
        if (optind + 1 != argc || !img.sha256 || !target) {
                log_error("%s", IMAGE_USAGE);
                return KILN_EXIT_USAGE;
        }
        img.url = argv[optind];
        char shown[URL_DISPLAY_MAX];
        url_display(img.url, shown);    /* what is logged: no userinfo, no query string */
        img.format = !format ? image_format_for_target(target) : streq(format, "raw") ? SPEC_IMAGE_RAW : SPEC_IMAGE_TAR;

        o.progress = image_progress_print;
        o.progress_userdata = &pp;
        _cleanup_(image_result_done) struct image_result res = {};
        _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
        r = image_install(&img, target, &o, &res, &err);
        if (r == -EBADMSG && strstr(strbuf_str(&err), "sha256 mismatch")) {
                log_error("image '%s' failed verification: %s; '%s' is left marked incomplete", shown, err.buf, target);
                return KILN_EXIT_IMAGE;
        }
        if (r < 0) {
                log_error_errno(r, "failed to install image '%s' onto '%s': %s", shown, target, strbuf_why(&err, r));
                return KILN_EXIT_IMAGE;
        }
        if (res.warning)
                log_warning("image '%s': %u libarchive warning(s), the first: %s", shown, res.warnings, res.warning);
        char sz[32];
        log_info("installed image '%s' onto '%s': %" PRIu64 " entries, %s written, %u request(s), %u restart(s), "
                 "%u warning(s), sha256 %s verified",
                 shown, target, res.entries, format_size(res.written, sz, sizeof(sz)), res.attempts,
                 res.restarts, res.warnings, res.sha256);
        return KILN_EXIT_OK;
}
