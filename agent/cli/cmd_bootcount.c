/* kiln bootcount attempt|good [--network]|failed|show [--root DIR]
 *
 * The installed system's boot counter (docs/reinstall.md "A boot that
 * failed"; the file: plan/bootcount.h, the units that run this:
 * apply/bootcounter.h). attempt: one boot more (early at every boot); good:
 * this boot got far enough, the count back to 0 (after multi-user.target;
 * --network: only when an interface other than lo is up with an address);
 * failed: one boot more without a boot (an operator's or a test's way to
 * say a boot failed); show: what the counter says. --root DIR: the installed
 * system is mounted at DIR (its counter is DIR/boot/kiln/bootcount); the
 * filesystem is then synced but not frozen (apply/bootcounter.h: the freeze
 * is for the running system's own /boot). */
#include "bootcounter.h"
#include "commands.h"
#include "exitcode.h"
#include "log.h"
#include "paths.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <time.h>

static void bootcount_usage(FILE *f) {
        fprintf(f, "usage: kiln bootcount attempt|good [--network]|failed|show [--root DIR]\n"
                   "  the installed system's boot counter (%s): boots begun since the last good one\n"
                   "  attempt          one boot more (kiln-bootcount-attempt.service, early at every boot)\n"
                   "  good             this boot got far enough: the count back to 0 (kiln-bootcount-good.service,\n"
                   "                   after multi-user.target)\n"
                   "  failed           one boot more, as a boot that failed\n"
                   "  show             print the counter\n"
                   "  --network        with good: only when an interface other than lo is up with an address\n"
                   "  --root DIR       the installed system is mounted at DIR (its filesystem is synced, not frozen)\n",
                kiln_paths.t_bootcount);
}

/* An interface other than lo, up and running, with an IPv4 address or an
 * IPv6 one that is not link-local: what "the network is up" means here. */
static int network_up(char ret_ifname[static IF_NAMESIZE + 1]) {
        struct ifaddrs *ifa = NULL;
        if (getifaddrs(&ifa) < 0)
                return -errno;
        int found = 0;
        for (struct ifaddrs *i = ifa; i && !found; i = i->ifa_next) {
                if (!i->ifa_addr || (i->ifa_flags & IFF_LOOPBACK) || !(i->ifa_flags & IFF_UP) || !(i->ifa_flags & IFF_RUNNING))
                        continue;
                if (i->ifa_addr->sa_family == AF_INET6) {
                        const struct in6_addr *a = &((const struct sockaddr_in6 *) i->ifa_addr)->sin6_addr;
                        if (IN6_IS_ADDR_LINKLOCAL(a))
                                continue;
                } else if (i->ifa_addr->sa_family != AF_INET)
                        continue;
                snprintf(ret_ifname, IF_NAMESIZE + 1, "%s", i->ifa_name);
                found = 1;
        }
        freeifaddrs(ifa);
        return found;
}

static void show(const char *path, const struct bootcount *bc) {
        printf("counter %s\nattempts %u\nlast_attempt %s\nlast_good %s\n", path, bc->attempts,
               bc->last_attempt[0] ? bc->last_attempt : "never", bc->last_good[0] ? bc->last_good : "never");
}

/* bc to path; frozen and thawed unless root (a warning when that fails). An exit code. */
static int store(const char *path, const struct bootcount *bc, const char *root) {
        int freeze_err = 0;
        int r = bootcount_store(path, bc, !root, &freeze_err);
        if (r < 0)
                return log_error_errno(r, "failed to write the boot counter '%s': %m", path), KILN_EXIT_FAILURE;
        if (r > 0)
                log_warning_errno(freeze_err, "cannot freeze the filesystem of '%s' (%m): the count is synced, "
                                  "but a look that does not replay the journal may read an older one", path);
        return KILN_EXIT_OK;
}

int cmd_bootcount(int argc, char **argv) {
        static const struct option options[] = {
                { "network", no_argument, NULL, 'N' },
                { "root", required_argument, NULL, 'R' },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        const char *root = NULL;
        bool network = false;
        int c, r;
        CMD_FOREACH_OPTION(c, argc, argv, "h", options)
                switch (c) {
                case 'N': network = true; break;
                case 'R': root = optarg; break;
                case 'h': bootcount_usage(stdout); return KILN_EXIT_OK;
                default: bootcount_usage(stderr); return KILN_EXIT_USAGE;
                }
        if (optind >= argc) {
                log_error("kiln bootcount needs one of attempt, good, failed, show (see 'kiln bootcount --help')");
                return KILN_EXIT_USAGE;
        }
        const char *verb = argv[optind];
        if (!streq(verb, "attempt") && !streq(verb, "good") && !streq(verb, "failed") && !streq(verb, "show")) {
                log_error("unknown bootcount action '%s': expected attempt, good, failed or show", verb);
                return KILN_EXIT_USAGE;
        }
        if (optind + 1 < argc) {
                log_error("unexpected argument '%s' (see 'kiln bootcount --help')", argv[optind + 1]);
                return KILN_EXIT_USAGE;
        }
        if (network && !streq(verb, "good")) {
                log_error("--network goes with 'good' only");
                return KILN_EXIT_USAGE;
        }
        _cleanup_free_ char *path = strdupf("%s%s", root ? root : "", kiln_paths.t_bootcount);
        if (!path)
                return log_error_errno(-ENOMEM, "out of memory"), KILN_EXIT_FAILURE;

        struct bootcount bc = {};
        _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
        r = bootcount_load(path, &bc, &err);
        if (r == -EBADMSG) {
                if (streq(verb, "show"))
                        return log_error("boot counter '%s' is unreadable: %s", path, strbuf_str(&err)), KILN_EXIT_FAILURE;
                log_warning("boot counter '%s' is unreadable (%s): taken as 1 boot that did not end well", path,
                            strbuf_str(&err));
                bootcount_unreadable(&bc);
        } else if (r == -ENOENT) {
                if (streq(verb, "show")) {
                        printf("counter %s\nnone\n", path);
                        return KILN_EXIT_OK;
                }
                bc = (struct bootcount) {};
        } else if (r < 0)
                return log_error_errno(r, "failed to read the boot counter '%s': %m", path), KILN_EXIT_FAILURE;

        if (streq(verb, "show")) {
                show(path, &bc);
                return KILN_EXIT_OK;
        }
        if (streq(verb, "good")) {
                char ifname[IF_NAMESIZE + 1] = "";
                if (network && (r = network_up(ifname)) <= 0) {
                        if (r < 0)
                                return log_error_errno(r, "not marking this boot good: cannot list the network "
                                                       "interfaces: %m"), KILN_EXIT_FAILURE;
                        return log_error("not marking this boot good: the network is not up (no interface but lo "
                                         "is up with an address); the count stays %u", bc.attempts), KILN_EXIT_FAILURE;
                }
                unsigned before = bc.attempts;
                bootcount_good(&bc, time(NULL));
                if ((r = store(path, &bc, root)) != KILN_EXIT_OK)
                        return r;
                log_info("boot counter '%s': this boot is good%s%s%s (%u boot(s) began since the last good one); "
                         "the count is 0", path, network ? " (network up on " : "", ifname, network ? ")" : "", before);
        } else {
                bootcount_attempt(&bc, time(NULL));
                if ((r = store(path, &bc, root)) != KILN_EXIT_OK)
                        return r;
                log_info("boot counter '%s': %u boot(s) began since the last good one (the last good one: %s)%s", path, bc.attempts,
                         bc.last_good[0] ? bc.last_good : "never", streq(verb, "failed") ? "; counted as failed" : "");
        }
        return KILN_EXIT_OK;
}
