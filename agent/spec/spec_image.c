/* image: the base OS image (docs/spec.md "image"), tar or raw, and the check
 * of what it is written to. */
#include "spec_internal.h"

static const char *const image_formats[] = { [SPEC_IMAGE_TAR] = "tar", [SPEC_IMAGE_RAW] = "raw", NULL };

void spec_parse_image(struct ctx *c, const struct ynode *m, struct spec_image *im) {
        static const char *const keys[] = { "url", "sha256", "format", "target", "max_size", NULL };
        struct loc l = { "image", "" };
        im->present = true;
        im->mark = (struct spec_mark) { m->line, m->col };
        spec_check_keys(c, m, &l, keys);
        const struct ynode *v;
        if (!(v = spec_map_get(m, "url")))
                spec_missing(c, m, "image", "url");
        (void) spec_get_url(c, &l, "url", v, true, &im->url);
        if (!(v = spec_map_get(m, "sha256")))
                spec_missing(c, m, "image", "sha256");
        (void) spec_get_sha256(c, &l, "sha256", v, &im->sha256);
        int e;
        bool fmt_ok = true;
        if (spec_get_enum(c, &l, "format", spec_map_get(m, "format"), image_formats, &e) > 0)
                im->format = e;
        else if (spec_map_get(m, "format"))
                fmt_ok = false;
        v = spec_map_get(m, "target");
        (void) spec_get_str(c, &l, "target", v, &im->target);
        if (fmt_ok && im->format == SPEC_IMAGE_RAW && !v)
                emitn(c, m, "image of format 'raw' has no 'target'");
        if (fmt_ok && im->format == SPEC_IMAGE_TAR && v)
                emitn(c, spec_map_key(m, "target"), "'target' of image is only for format 'raw' (a tar image is unpacked onto the mounted filesystems)");
        (void) spec_get_bytes(c, &l, "max_size", spec_map_get(m, "max_size"), &im->max_size);
}

/* root: a filesystem is mounted at '/' */
void spec_check_image(struct ctx *c, bool root) {
        struct spec *s = c->s;
        if (s->image.present && s->image.format == SPEC_IMAGE_RAW && s->image.target) {
                struct obj *o = spec_resolve(c, "target", "image", s->image.target, s->image.mark, BLOCK_KINDS);
                s->image.target_ref = o ? (struct spec_ref) { o->kind, o->ptr } : (struct spec_ref) {};
                spec_single_device(c, o, "target", "image", s->image.mark);
                spec_consume(c, o, &s->image, SPEC_OBJ_NONE, "image", false, s->image.mark);
        }
        if (s->image.present && s->image.format == SPEC_IMAGE_TAR && !root)
                spec_emit(c, s->image.mark.line, s->image.mark.col,
                          "image of format 'tar' needs a filesystem mounted at '/'");
}

void spec_free_image(struct spec *s) {
        free(s->image.url); free(s->image.sha256); free(s->image.target);
}
