#include "spec_yaml.h"

#include <yaml.h>

struct ynode *ynode_free(struct ynode *n) {
        if (!n)
                return NULL;
        for (size_t i = 0; i < n->n; i++)
                ynode_free(n->items[i]);
        free(n->items);
        if (n->value) {
                /* scalars may hold secrets (passphrases, API secrets) */
                explicit_wipe(n->value, n->len);
                free(n->value);
        }
        free(n);
        return NULL;
}

static void yaml_parser_deletep(yaml_parser_t *p) { yaml_parser_delete(p); }
static void yaml_event_deletep(yaml_event_t *e) { yaml_event_delete(e); }

static int ynode_append(struct ynode *parent, struct ynode *child) {
        if (parent->n % 16 == 0) {
                struct ynode **ni = realloc(parent->items, (parent->n + 16) * sizeof *ni);
                if (!ni)
                        return -ENOMEM;
                parent->items = ni;
        }
        parent->items[parent->n++] = child;
        return 0;
}

static struct ynode *ynode_new(enum ynode_kind kind, const yaml_mark_t *m) {
        struct ynode *n = calloc(1, sizeof *n);
        if (!n)
                return NULL;
        n->kind = kind;
        n->line = (unsigned) m->line + 1;
        n->col = (unsigned) m->column + 1;
        return n;
}

/* Reader errors carry a byte offset instead of a mark. */
static void offset_to_mark(const char *data, size_t len, size_t off, unsigned *line, unsigned *col) {
        unsigned l = 1, c = 1;
        for (size_t i = 0; i < off && i < len; i++) {
                if (data[i] == '\n') {
                        l++;
                        c = 1;
                } else
                        c++;
        }
        *line = l;
        *col = c;
}

static int syntax_error(const yaml_parser_t *p, const char *file, const char *data, size_t len, struct diags *d) {
        unsigned line, col;
        if (p->error == YAML_MEMORY_ERROR)
                return -ENOMEM;
        if (p->error == YAML_READER_ERROR)
                offset_to_mark(data, len, p->problem_offset, &line, &col);
        else {
                line = (unsigned) p->problem_mark.line + 1;
                col = (unsigned) p->problem_mark.column + 1;
        }
        int r;
        unsigned cline = (unsigned) p->context_mark.line + 1, ccol = (unsigned) p->context_mark.column + 1;
        bool ctx_mark = p->context && p->error != YAML_READER_ERROR && (cline != line || ccol != col);
        if (ctx_mark && strstr(p->context, "quoted scalar"))
                /* libyaml finds an unclosed quote only at the next quote or the
                 * end of the file: the useful place is where the quote opened */
                r = diags_add(d, file, cline, ccol, "invalid yaml: the quoted string that starts here is not closed "
                              "(%s at line %u col %u)", p->problem ? p->problem : "unknown error", line, col);
        else if (ctx_mark)
                r = diags_add(d, file, line, col, "invalid yaml: %s (%s that starts at line %u col %u)",
                              p->problem ? p->problem : "unknown error", p->context, cline, ccol);
        else if (p->context)
                r = diags_add(d, file, line, col, "invalid yaml: %s (%s)",
                              p->problem ? p->problem : "unknown error", p->context);
        else
                r = diags_add(d, file, line, col, "invalid yaml: %s", p->problem ? p->problem : "unknown error");
        return r < 0 ? r : -EINVAL;
}

/* One loop over libyaml's events with one switch (about 130 lines): every
 * case pushes, pops or fills the node stack the loop owns, so the cases read
 * best side by side; split up, each would take the stack, the depth and the
 * document count as parameters. */
int ytree_parse(const char *file, const char *data, size_t len, unsigned max_depth,
                struct ynode **ret, struct diags *d) {
        _cleanup_(yaml_parser_deletep) yaml_parser_t p;
        if (!yaml_parser_initialize(&p))
                return -ENOMEM;
        yaml_parser_set_input_string(&p, (const unsigned char *) data, len);

        _cleanup_(ynode_freep) struct ynode *root = NULL;
        _cleanup_free_ struct ynode **stack = calloc(max_depth + 1, sizeof *stack);
        if (!stack)
                return -ENOMEM;
        size_t depth = 0;
        unsigned docs = 0;
        int r;

        for (;;) {
                _cleanup_(yaml_event_deletep) yaml_event_t ev = {};
                if (!yaml_parser_parse(&p, &ev))
                        return syntax_error(&p, file, data, len, d);

                unsigned line = (unsigned) ev.start_mark.line + 1, col = (unsigned) ev.start_mark.column + 1;
                struct ynode *n = NULL;
                const yaml_char_t *anchor = NULL, *tag = NULL;
                bool implicit_tag = true;

                switch (ev.type) {
                case YAML_STREAM_END_EVENT:
                        *ret = TAKE_PTR(root);
                        return 0;
                case YAML_DOCUMENT_START_EVENT:
                        if (++docs > 1) {
                                r = diags_add(d, file, line, col, "more than one yaml document");
                                return r < 0 ? r : -EINVAL;
                        }
                        continue;
                case YAML_ALIAS_EVENT:
                        r = diags_add(d, file, line, col, "yaml aliases are not allowed");
                        if (r < 0)
                                return r;
                        /* stands in as an empty value so the structure stays intact */
                        n = ynode_new(YNODE_SCALAR, &ev.start_mark);
                        if (!n || !(n->value = strdup(""))) {
                                ynode_free(n);
                                return -ENOMEM;
                        }
                        n->plain = true;
                        n->alias = true;
                        break;
                case YAML_SCALAR_EVENT:
                        anchor = ev.data.scalar.anchor;
                        tag = ev.data.scalar.tag;
                        implicit_tag = ev.data.scalar.plain_implicit || ev.data.scalar.quoted_implicit;
                        n = ynode_new(YNODE_SCALAR, &ev.start_mark);
                        if (!n)
                                return -ENOMEM;
                        n->value = malloc(ev.data.scalar.length + 1);
                        if (!n->value) {
                                ynode_free(n);
                                return -ENOMEM;
                        }
                        memcpy(n->value, ev.data.scalar.value, ev.data.scalar.length);
                        n->value[ev.data.scalar.length] = 0;
                        n->len = ev.data.scalar.length;
                        n->plain = ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
                        break;
                case YAML_SEQUENCE_START_EVENT:
                case YAML_MAPPING_START_EVENT:
                        if (depth >= max_depth) {
                                r = diags_add(d, file, line, col, "nesting deeper than %u levels", max_depth);
                                return r < 0 ? r : -EINVAL;
                        }
                        if (ev.type == YAML_SEQUENCE_START_EVENT) {
                                anchor = ev.data.sequence_start.anchor;
                                tag = ev.data.sequence_start.tag;
                                implicit_tag = ev.data.sequence_start.implicit;
                        } else {
                                anchor = ev.data.mapping_start.anchor;
                                tag = ev.data.mapping_start.tag;
                                implicit_tag = ev.data.mapping_start.implicit;
                        }
                        n = ynode_new(ev.type == YAML_SEQUENCE_START_EVENT ? YNODE_SEQ : YNODE_MAP, &ev.start_mark);
                        if (!n)
                                return -ENOMEM;
                        break;
                case YAML_SEQUENCE_END_EVENT:
                case YAML_MAPPING_END_EVENT:
                        if (depth > 0)
                                depth--;
                        continue;
                default:
                        continue;
                }

                if (anchor) {
                        r = diags_add(d, file, line, col, "yaml anchors are not allowed");
                        if (r < 0) {
                                ynode_free(n);
                                return r;
                        }
                }
                if (tag && !implicit_tag) {
                        r = diags_add(d, file, line, col, "yaml tags are not allowed");
                        if (r < 0) {
                                ynode_free(n);
                                return r;
                        }
                }

                if (depth == 0) {
                        /* the document's root; a stream holds at most one document */
                        ynode_free(root);
                        root = n;
                } else {
                        struct ynode *parent = stack[depth - 1];
                        size_t max = parent->kind == YNODE_MAP ? 2 * YTREE_MAX_KEYS : YTREE_MAX_ITEMS;
                        if (parent->n >= max) {
                                ynode_free(n);
                                r = parent->kind == YNODE_MAP
                                        ? diags_add(d, file, parent->line, parent->col, "more than %u keys in one mapping", YTREE_MAX_KEYS)
                                        : diags_add(d, file, parent->line, parent->col, "more than %u entries in one list", YTREE_MAX_ITEMS);
                                return r < 0 ? r : -EINVAL;
                        }
                        r = ynode_append(parent, n);
                        if (r < 0) {
                                ynode_free(n);
                                return r;
                        }
                }
                if (n->kind != YNODE_SCALAR)
                        stack[depth++] = n;
        }
}
