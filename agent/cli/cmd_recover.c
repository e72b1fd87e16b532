/* kiln recover DEVICE --key KEY.pem --cert CERT.pem [--print | --open NAME]
 *
 * Opens the recovery of a volume whose generated key kiln escrowed to the
 * operator's certificate (luks[].key.escrow, docs/recovery.md): the
 * kiln-escrow token of DEVICE's LUKS2 header, decrypted in process with the
 * operator's private key (OpenSSL's CMS, escrow.h), must open the keyslot
 * the token names. Without --print or --open that is all (a check, no
 * device-mapper needed); --print writes the key to standard output, which
 * must not be a terminal (a pipe into `cryptsetup open --key-file=-`, or a
 * file the operator chose); --open activates /dev/mapper/NAME. DEVICE is
 * only read. */
#include "commands.h"
#include "escrow.h"
#include "exitcode.h"
#include "log.h"

#include <unistd.h>

static void recover_usage(FILE *f) {
        fprintf(f, "usage: kiln recover DEVICE --key KEY.pem --cert CERT.pem [--print | --open NAME]\n"
                   "  recover the escrowed key of a LUKS2 volume (its kiln-escrow token) with the operator's\n"
                   "  private key and certificate (PEM), and check that it opens the volume's keyslot;\n"
                   "  DEVICE (a disk, a partition or an image file) is only read\n"
                   "  --print       then write the key to standard output (a pipe or a file, never a terminal)\n"
                   "  --open NAME   then open the volume as /dev/mapper/NAME\n");
}

int cmd_recover(int argc, char **argv) {
        static const struct option options[] = {
                { "key", required_argument, NULL, 'k' }, { "cert", required_argument, NULL, 'c' },
                { "print", no_argument, NULL, 'p' },     { "open", required_argument, NULL, 'o' },
                { "help", no_argument, NULL, 'h' },      {},
        };
        const char *key_path = NULL, *cert_path = NULL, *name = NULL;
        bool print = false;
        int c;
        CMD_FOREACH_OPTION(c, argc, argv, "k:c:po:h", options)
                switch (c) {
                case 'k': key_path = optarg; break;
                case 'c': cert_path = optarg; break;
                case 'p': print = true; break;
                case 'o': name = optarg; break;
                case 'h': recover_usage(stdout); return KILN_EXIT_OK;
                default: recover_usage(stderr); return KILN_EXIT_USAGE;
                }
        if (cmd_check_operands(argc, argv, 1) != KILN_EXIT_OK)
                return KILN_EXIT_USAGE;
        const char *dev = optind < argc ? argv[optind] : NULL;
        if (!dev || !key_path || !cert_path) {
                log_error("kiln recover needs DEVICE, --key and --cert (see 'kiln recover --help')");
                return KILN_EXIT_USAGE;
        }
        if (print && name) {
                log_error("--print and --open exclude each other (see 'kiln recover --help')");
                return KILN_EXIT_USAGE;
        }
        if (print && isatty(STDOUT_FILENO)) {
                log_error("refusing to print the recovered key of %s to a terminal: pipe it (kiln recover ... --print | "
                          "cryptsetup open --key-file=- ...) or redirect it to a file; nothing was read", dev);
                return KILN_EXIT_REFUSED;
        }
        luks_setup_logging();
        _cleanup_luks_key_free_ struct luks_key *key = NULL;
        _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
        int r = escrow_recover(dev, key_path, cert_path, name, &key, &err);
        if (r < 0) {
                log_error("failed to recover the key of %s: %s; nothing was written", dev, strbuf_why(&err, r));
                return KILN_EXIT_STORAGE;
        }
        (void) log_register_secret(key->data);
        if (print) {
                for (size_t done = 0; done < key->len;) {
                        ssize_t n = write(STDOUT_FILENO, key->data + done, key->len - done);
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n <= 0)
                                return log_error_errno(n < 0 ? -errno : -EIO, "failed to write the key of %s: %m", dev),
                                       KILN_EXIT_FAILURE;
                        done += (size_t) n;
                }
                log_info("the escrowed key of %s opens its keyslot; written to standard output", dev);
        } else if (name)
                log_info("the escrowed key of %s opened it as /dev/mapper/%s", dev, name);
        else
                log_info("the escrowed key of %s opens its keyslot (checked; nothing opened)", dev);
        return KILN_EXIT_OK;
}
