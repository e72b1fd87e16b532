/* kiln network heal [--window S] [--restarts N] BRIDGE...
 *
 * Run by the installed system's kiln-network-heal.service at every boot
 * (apply/netheal.h says why): restarts systemd-networkd while a link reads
 * "failed", at most N times; done when every BRIDGE reads "configured", or
 * S seconds after networkd's last (re)start without that. Exit 0 when the
 * bridges are configured; 1 when they are not (networkd gave up again after
 * N restarts, or the window went by). */
#include "commands.h"
#include "exitcode.h"
#include "log.h"
#include "netheal.h"
#include "paths.h"
#include "exec.h"

#include <net/if.h>
#include <time.h>

static void network_usage(FILE *f) {
        fprintf(f, "usage: kiln network heal [--window S] [--restarts N] BRIDGE...\n"
                   "  restart systemd-networkd when it gave up on a link (its state in %s reads\n"
                   "  'failed'), until every BRIDGE reads 'configured' (kiln-network-heal.service)\n"
                   "  --window S       wait at most S seconds after each (re)start (default %u)\n"
                   "  --restarts N     restart systemd-networkd at most N times (default %u)\n",
                kiln_paths.netif_links, NETHEAL_WINDOW_S, NETHEAL_RESTARTS_MAX);
}

static int restart_networkd(void) {
        _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
        const char *argv[] = { kiln_paths.systemctl, "restart", NETHEAL_NETWORKD_UNIT, NULL };
        struct exec_options o = { .err = &err, .timeout_usec = 120ull * 1000000ull };
        int r = exec_argv(argv, &o, NULL);
        if (r < 0)
                log_error_errno(r, "failed to restart %s: %s", NETHEAL_NETWORKD_UNIT,
                                err.len ? exec_last_line(&err) : "%m");
        return r;
}

static int heal(char *const *bridges, size_t n, unsigned window_s, unsigned restarts_max) {
        struct timespec since;          /* networkd's last restart by us (the file times' clock), once restarts > 0 */
        unsigned restarts = 0;
        uint64_t start = now_usec();
        for (;;) {
                _cleanup_(netheal_look_done) struct netheal_look l = {};
                int r = netheal_look(bridges, n, restarts ? &since : NULL, &l);
                if (r < 0)
                        return log_error_errno(r, "cannot read systemd-networkd's state in '%s': %m",
                                               kiln_paths.netif_links), KILN_EXIT_FAILURE;
                if (l.failed.len) {
                        if (restarts == restarts_max) {
                                log_error("systemd-networkd gave up on %s again, after %u restart(s): not restarting it "
                                          "once more (journalctl -b -u %s says why)", strbuf_str(&l.failed), restarts,
                                          NETHEAL_NETWORKD_UNIT);
                                return KILN_EXIT_FAILURE;
                        }
                        restarts++;
                        log_warning("systemd-networkd gave up on %s (its state reads 'failed'): restarting it "
                                    "(%u of %u)", strbuf_str(&l.failed), restarts, restarts_max);
                        clock_gettime(CLOCK_REALTIME_COARSE, &since);
                        if (restart_networkd() < 0)
                                return KILN_EXIT_FAILURE;
                        start = now_usec();
                        continue;
                }
                if (!l.waiting.len) {
                        log_info("network up: %s configured by systemd-networkd%s", n == 1 ? bridges[0] : "every bridge",
                                 restarts ? ", after it was restarted" : "");
                        return KILN_EXIT_OK;
                }
                if (now_usec() - start >= (uint64_t) window_s * 1000000u) {
                        log_error("network not up %u s after systemd-networkd %s: %s; left to systemd-networkd", window_s,
                                  restarts ? "was restarted" : "started", strbuf_str(&l.waiting));
                        return KILN_EXIT_FAILURE;
                }
                (void) nanosleep(&(struct timespec) { .tv_nsec = 250 * 1000 * 1000 }, NULL);
        }
}

int cmd_network(int argc, char **argv) {
        static const struct option options[] = {
                { "window", required_argument, NULL, 'w' },
                { "restarts", required_argument, NULL, 'r' },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        unsigned window_s = NETHEAL_WINDOW_S, restarts_max = NETHEAL_RESTARTS_MAX;
        int c;
        CMD_FOREACH_OPTION(c, argc, argv, "h", options)
                switch (c) {
                case 'w':
                        if (safe_atou(optarg, &window_s) < 0 || window_s == 0) {
                                log_error("--window wants a number of seconds above 0, not '%s'", optarg);
                                return KILN_EXIT_USAGE;
                        }
                        break;
                case 'r':
                        if (safe_atou(optarg, &restarts_max) < 0) {
                                log_error("--restarts wants a count, not '%s'", optarg);
                                return KILN_EXIT_USAGE;
                        }
                        break;
                case 'h': network_usage(stdout); return KILN_EXIT_OK;
                default: network_usage(stderr); return KILN_EXIT_USAGE;
                }
        if (optind >= argc || !streq(argv[optind], "heal")) {
                if (optind < argc)
                        log_error("unknown network action '%s': expected heal", argv[optind]);
                else
                        log_error("kiln network needs an action: heal (see 'kiln network --help')");
                return KILN_EXIT_USAGE;
        }
        if (optind + 1 >= argc) {
                log_error("kiln network heal needs the bridges to wait for (see 'kiln network --help')");
                return KILN_EXIT_USAGE;
        }
        for (int i = optind + 1; i < argc; i++)
                if (!argv[i][0] || strlen(argv[i]) >= IF_NAMESIZE || strchr(argv[i], '/') || argv[i][0] == '.') {
                        log_error("'%s' is no network interface name", argv[i]);
                        return KILN_EXIT_USAGE;
                }
        return heal(argv + optind + 1, (size_t) (argc - optind - 1), window_s, restarts_max);
}
