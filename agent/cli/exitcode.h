/* kiln's documented exit codes (docs/exit-codes.md). Stable: operators and
 * controllers script against them. main() is the only place that maps a
 * negative errno and the failing stage to one of these. */
#pragma once

enum kiln_exit {
        KILN_EXIT_OK = 0,
        KILN_EXIT_FAILURE = 1,      /* anything not listed below */
        KILN_EXIT_BAD_SPEC = 2,     /* the spec does not parse or validate */
        KILN_EXIT_REFUSED = 3,      /* safety refusal: disk selection, signatures, in use */
        KILN_EXIT_STORAGE = 4,      /* a storage step failed (partition, md, LUKS, LVM, mkfs, mount) */
        KILN_EXIT_IMAGE = 5,        /* image download, verification or extraction failed */
        KILN_EXIT_BENCH = 6,        /* the crypt benchmark gate failed */
        KILN_EXIT_REGISTER = 7,     /* registration with the controller failed */
        KILN_EXIT_FETCH = 8,        /* the spec (or key) could not be fetched or verified */
        KILN_EXIT_USAGE = 64,       /* bad command line (EX_USAGE) */
};
