#include "commands.h"
#include "exitcode.h"
#include "log.h"
#include "paths.h"
#include "util.h"

#include <signal.h>

#ifndef KILN_VERSION
#define KILN_VERSION "0.1.0"
#endif
#ifdef KILN_HAVE_VERSION_H
#include "kiln-version.h"       /* KILN_COMMIT, written at build time (cmake/version.cmake) */
#endif
#ifndef KILN_COMMIT
#define KILN_COMMIT "unknown"
#endif

static int cmd_help(int argc, char **argv);

/* version and help have no --help of their own: an argument they do not
 * take points to the list */
static int refuse_argument(const char *arg) {
        log_error("unexpected argument '%s' (see 'kiln help')", arg);
        return KILN_EXIT_USAGE;
}

static int cmd_version(int argc, char **argv) {
        if (argc > 1)
                return refuse_argument(argv[1]);
        printf("kiln %s (commit %s)\n", KILN_VERSION, KILN_COMMIT);
        return KILN_EXIT_OK;
}

/* Entries are kept one blank line apart so that branches adding commands
 * side by side merge without conflicts. */
static const struct command {
        const char *name;
        int (*run)(int argc, char **argv);
        const char *summary;
} commands[] = {
        { "validate", cmd_validate, "check host specs; every error as file:line:col" },

        { "inventory", cmd_inventory, "show this machine's disks, NICs, CPU and memory" },

        { "plan", cmd_plan, "show the steps apply would run, and what each destroys" },

        { "fetch", cmd_fetch, "fetch one URL (retries, resume, TLS with kiln.ca), to stdout or -o FILE" },

        { "image", cmd_image, "stream an image (tar or raw) onto a directory or block device, verified" },

        { "bench", cmd_bench, "the crypt benchmark: ciphers through dm-crypt, raw and encrypted device I/O" },

        { "apply", cmd_apply, "run the plan: wipe, partition, md, LUKS, LVM, mkfs, mount (--dry-run, --yes)" },

        { "boot", cmd_boot, "what the initramfs runs: fetch the spec named on the kernel command line, apply it" },

        { "kexec", cmd_kexec, "boot the installed system kiln boot loaded (run by /init; not a spec finish)" },

        { "bootcount", cmd_bootcount, "the installed system's boot counter: attempt, good [--network], failed, show" },

        { "network", cmd_network, "the installed system's network: heal (restart systemd-networkd where it gave up)" },

        { "register", cmd_register, "register a node with CloudStack / the webhook from a saved run report" },

        { "recover", cmd_recover, "recover a volume's escrowed key with the operator's private key (--print, --open)" },

        { "version", cmd_version, "print the version" },

        { "help", cmd_help, "this list" },
};

/* The exit codes from exitcode.h's table, wrapped at 79 columns. 1 is left
 * out: it is the class of everything the others do not name. */
static void help_exit_codes(void) {
        static const char head[] = "exit codes: ", tail[] = "(see man kiln, EXIT CODES)";
        size_t col = printf("\n%s", head) - 1;
        for (size_t i = 0; i < ELEMENTSOF(kiln_exit_codes); i++) {
                const struct kiln_exit_code *e = &kiln_exit_codes[i];
                if (e->code == KILN_EXIT_FAILURE)
                        continue;
                char item[64];
                bool last = i + 1 == ELEMENTSOF(kiln_exit_codes);
                int n = snprintf(item, sizeof item, "%d %s%s", e->code, e->name, last ? "" : ",");
                if (col > strlen(head) && col + 1 + n > 79)
                        col = printf("\n%*s", (int) strlen(head), "") - 1;
                else if (col > strlen(head))
                        col += printf(" ");
                col += printf("%s", item);
        }
        if (col + 1 + strlen(tail) > 79)
                printf("\n%*s%s\n", (int) strlen(head), "", tail);
        else
                printf(" %s\n", tail);
}

static int cmd_help(int argc, char **argv) {
        /* kiln help COMMAND: that command's own --help */
        if (argc > 2)
                return refuse_argument(argv[2]);
        if (argc >= 2) {
                for (size_t i = 0; i < ELEMENTSOF(commands); i++)
                        if (streq(commands[i].name, argv[1]) && commands[i].run != cmd_help &&
                            commands[i].run != cmd_version) {
                                char *sub[] = { argv[1], (char *) "--help", NULL };
                                return commands[i].run(2, sub);
                        }
                if (!streq(argv[1], "help") && !streq(argv[1], "version"))
                        return log_error("unknown command '%s' (see 'kiln help')", argv[1]), KILN_EXIT_USAGE;
        }
        printf("usage: kiln [-v|-q] [-t] COMMAND [ARGS...]\n"
               "       kiln help COMMAND     that command's options\n"
               "  -v, --verbose     also log debug lines (each step's commands, libcurl's, libparted's and\n"
               "                    libcryptsetup's own messages); secrets stay redacted\n"
               "  -q, --quiet       log warnings and errors only\n"
               "  -t, --timestamps  prefix log lines with the seconds since kiln started\n"
               "  log lines go to stderr; what a command prints as its result (a plan, JSON) to stdout\n\ncommands:\n");
        for (size_t i = 0; i < ELEMENTSOF(commands); i++)
                printf("  %-10s %s\n", commands[i].name, commands[i].summary);
        help_exit_codes();
        return KILN_EXIT_OK;
}

int main(int argc, char **argv) {
        /* a helper that exits before reading its stdin (exec.c) must give EPIPE, not kill kiln */
        signal(SIGPIPE, SIG_IGN);
        paths_init();
        int i = 1;
        for (; i < argc && argv[i][0] == '-'; i++) {
                if (streq(argv[i], "-v") || streq(argv[i], "--verbose"))
                        log_set_max_level(LOG_LEVEL_DEBUG);
                else if (streq(argv[i], "-q") || streq(argv[i], "--quiet"))
                        log_set_max_level(LOG_LEVEL_WARN);
                else if (streq(argv[i], "-t") || streq(argv[i], "--timestamps"))
                        log_set_timestamps(true);
                else if (streq(argv[i], "--help") || streq(argv[i], "-h"))
                        return i + 1 < argc ? refuse_argument(argv[i + 1]) : cmd_help(0, NULL);
                else if (streq(argv[i], "--version"))
                        return i + 1 < argc ? refuse_argument(argv[i + 1]) : cmd_version(0, NULL);
                else {
                        log_error("unknown option '%s' (see 'kiln help')", argv[i]);
                        return KILN_EXIT_USAGE;
                }
        }
        if (i >= argc) {
                cmd_help(0, NULL);
                return KILN_EXIT_USAGE;
        }
        for (size_t c = 0; c < ELEMENTSOF(commands); c++)
                if (streq(commands[c].name, argv[i])) {
                        int r = commands[c].run(argc - i, argv + i);
                        log_forget_secrets();
                        return r;
                }
        log_error("unknown command '%s' (see 'kiln help')", argv[i]);
        return KILN_EXIT_USAGE;
}
