#include "commands.h"
#include "exitcode.h"
#include "inventory.h"
#include "log.h"
#include "probe.h"


static int help(void) {
        printf("usage: kiln inventory [--json] [--sysroot DIR|FILE]\n\n"
               "Show this machine's disks (with the signatures already on them), NICs, CPU\n"
               "and memory. Reads only. --sysroot reads a recorded tree (DIR/sys, DIR/dev,\n"
               "DIR/proc) or a file saved with --json instead of the live system.\n"
               "KILN_INVENTORY_INCLUDE_LOOP=1 also lists loop devices as disks; a list of\n"
               "them (\"/dev/loop3 /dev/loop7\") lists only those.\n");
        return KILN_EXIT_OK;
}

int cmd_inventory(int argc, char **argv) {
        static const struct option options[] = {
                { "json", no_argument, NULL, 'j' },
                { "sysroot", required_argument, NULL, 's' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        bool json = false;
        const char *sysroot = NULL;
        int c;
        CMD_FOREACH_OPTION(c, argc, argv, "+h", options)
                switch (c) {
                case 'j':
                        json = true;
                        break;
                case 's':
                        sysroot = optarg;
                        break;
                case 'h':
                        return help();
                default:
                        return KILN_EXIT_USAGE;
                }
        if (cmd_check_operands(argc, argv, 0) != KILN_EXIT_OK)
                return KILN_EXIT_USAGE;

        _cleanup_inventory_free_ struct inventory *inv = NULL;
        _cleanup_strbuf_ struct strbuf where = STRBUF_INIT;
        int r = sysroot ? inventory_load(sysroot, &inv, &where) : inventory_probe(NULL, &inv, &where);
        if (r < 0) {
                const char *subject = sysroot ?: "live system";
                if (where.len && (r == -EINVAL || r == -EBADMSG))   /* a JSON file: where says what is wrong */
                        log_error_errno(r, "failed to read inventory '%s': %s", subject, where.buf);
                else if (where.len)
                        log_error_errno(r, "failed to read inventory '%s': cannot read '%s': %m", subject, where.buf);
                else
                        log_error_errno(r, "failed to read inventory '%s': %m", subject);
                return KILN_EXIT_FAILURE;
        }
        _cleanup_strv_free_ char **warnings = NULL;
        r = inventory_warnings(inv, &warnings);
        if (r < 0)
                return log_error_errno(r, "failed to check the inventory: %m"), KILN_EXIT_FAILURE;
        for (size_t i = 0; warnings && warnings[i]; i++)
                log_warning("%s", warnings[i]);
        _cleanup_strbuf_ struct strbuf out = STRBUF_INIT;
        r = json ? inventory_to_json(inv, &out) : inventory_to_text(inv, &out);
        if (r < 0) {
                log_error_errno(r, "failed to format inventory: %m");
                return KILN_EXIT_FAILURE;
        }
        fputs(strbuf_str(&out), stdout);
        if (fflush(stdout) != 0) {
                log_error_errno(-errno, "failed to write inventory: %m");
                return KILN_EXIT_FAILURE;
        }
        return KILN_EXIT_OK;
}
