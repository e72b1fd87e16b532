/* libFuzzer target: the resume progress record (<target>/var/lib/kiln/progress.json)
 * is read from a disk that may hold anything from an earlier, different install.
 * resume_record_from_json() must accept only a well-formed record, and what it
 * accepts must survive resume_record_to_json() and back unchanged. */
#include "resume.h"

#include <errno.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same_str(const char *a, const char *b) {
        return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct resume_record rec = {}, again = {};
        struct strbuf sb = STRBUF_INIT;
        int r = resume_record_from_json((const char *) data, size, &rec);
        if (r < 0) {
                if (r != -EBADMSG && r != -ENOTEMPTY && r != -EFBIG && r != -ENOMEM)
                        __builtin_trap();
                if (rec.version || rec.run_id || rec.stages)
                        __builtin_trap();       /* ret set only on success */
                return 0;
        }
        if (strlen(rec.fingerprint) != 64 || !hex_valid(rec.fingerprint, 64) || (rec.stages >> _RESUME_STAGE_MAX))
                __builtin_trap();
        if (resume_record_to_json(&rec, &sb) < 0 || resume_record_from_json(sb.buf, sb.len, &again) < 0)
                __builtin_trap();
        /* a record without a version is written with this kiln's */
        if (strcmp(rec.fingerprint, again.fingerprint) != 0 || rec.stages != again.stages ||
            rec.complete != again.complete || !same_str(rec.run_id, again.run_id) ||
            (rec.version && !same_str(rec.version, again.version)))
                __builtin_trap();
        strbuf_release(&sb);
        resume_record_done(&rec);
        resume_record_done(&again);
        return 0;
}
