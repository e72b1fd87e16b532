/* The extra CA of everything a host spec makes kiln fetch or send over
 * HTTPS: the LUKS keys, the image, the registration and its events. Two
 * sources, both trusted beside the system CAs: the CA the command was given
 * (kiln.ca= or --ca, a PEM file) and the spec's own `ca:` (PEM text, a file,
 * or an http(s)/file URL, fetched trusting the first). They end up in one
 * PEM file, so that every transfer takes the same `ca_file`. */
#pragma once
#include "strbuf.h"
#include "url.h"
#include "util.h"

#define CA_MAX_BYTES (1024u * 1024u)
#define CA_SPEC_FILE "spec-ca.pem"      /* in kiln_paths.run_dir; a CA certificate is public */

/* spec_ca NULL: *ret_file = NULL (the given file, if any, is all there is).
 * Otherwise spec_ca is loaded, must hold at least one PEM certificate, and is
 * written after given_file's certificates to RUN_DIR/spec-ca.pem, whose path
 * *ret_file gets. Errors: -EBADMSG no certificate, -EFBIG larger than
 * CA_MAX_BYTES, fetch and file errors; err (may be NULL) then says what
 * went wrong, without repeating spec_ca. */
int ca_for_spec(const char *spec_ca, const char *given_file, char **ret_file, struct strbuf *err);

/* How to name spec_ca in a message: the path, the URL as url_display()
 * shows it (rendered into buf, which is returned), or "PEM text". */
const char *ca_describe(const char *spec_ca, char buf[static URL_DISPLAY_MAX]);
