/* The progress record's file (agent/apply/record.h): an atomic save into a
 * directory that does not exist yet, loaded back; a file with data after
 * its JSON document refused; emptying a root keeps lost+found and what
 * leads to other filesystems (here: nothing but the one filesystem). */
#include "record.h"
#include "tap.h"

#include <fcntl.h>
#include <sys/stat.h>

static void test_save_load(void) {
        struct resume_record rec = { .stages = 1u << RESUME_STAGE_STORAGE | 1u << RESUME_STAGE_IMAGE, .complete = true };
        memset(rec.fingerprint, 'a', 64);
        rec.run_id = strdup("run-1");
        char dir[] = "/tmp/kiln-test-record.XXXXXX";
        CHECK(mkdtemp(dir));
        _cleanup_free_ char *path = NULL;
        CHECK(asprintf(&path, "%s/target/var/lib/kiln/progress.json", dir) > 0);
        CHECK_INT(resume_record_save(&rec, path), 0);
        struct resume_record back = {};
        CHECK_INT(resume_record_load(path, &back), 0);
        CHECK(back.complete);
        CHECK_STR(back.fingerprint, rec.fingerprint);
        CHECK_INT(back.stages, rec.stages);
        CHECK_STR(back.run_id, "run-1");
        resume_record_done(&back);

        /* no record: -ENOENT, nothing set */
        _cleanup_free_ char *none = NULL;
        CHECK(asprintf(&none, "%s/nothing.json", dir) > 0);
        CHECK_INT(resume_record_load(none, &back), -ENOENT);
        CHECK(!back.run_id && !back.version);

        /* a second document after the record */
        _cleanup_strbuf_ struct strbuf sb = STRBUF_INIT;
        CHECK_INT(resume_record_to_json(&rec, &sb), 0);
        _cleanup_free_ char *junk = NULL;
        CHECK(asprintf(&junk, "%s/junk.json", dir) > 0);
        int fd = open(junk, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        CHECK(fd >= 0);
        CHECK_INT(write(fd, sb.buf, sb.len), (long) sb.len);
        CHECK_INT(write(fd, "\n{}\n", 4), 4);
        close(fd);
        struct resume_record x = {};
        CHECK_INT(resume_record_load(junk, &x), -ENOTEMPTY);
        CHECK(!x.run_id && !x.version);

        /* emptying the root: everything but lost+found goes */
        _cleanup_free_ char *root = NULL, *lf = NULL;
        CHECK(asprintf(&root, "%s/target", dir) > 0);
        CHECK(asprintf(&lf, "%s/lost+found", root) > 0);
        CHECK_INT(mkdir(lf, 0700), 0);
        unsigned removed = 0;
        CHECK_INT(resume_clean_root(root, &removed), 0);
        CHECK(removed >= 4);    /* var, var/lib, var/lib/kiln, progress.json */
        struct stat st;
        CHECK_INT(stat(lf, &st), 0);
        CHECK(stat(path, &st) < 0 && errno == ENOENT);

        _cleanup_free_ char *cmd = NULL;
        CHECK(asprintf(&cmd, "rm -rf '%s'", dir) > 0);
        CHECK_INT(system(cmd), 0);
        resume_record_done(&rec);
}

int main(void) {
        test_save_load();
        return TEST_DONE();
}
