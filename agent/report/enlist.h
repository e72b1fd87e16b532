/* Enlisting: a machine kiln has no spec for (its kiln.spec= URL answers 404,
 * or it boots with kiln.enlist=URL) tells the controller what it is and
 * powers off, so that the operator sees its disks (serial, model, size,
 * rotational, transport), NICs and CPU before writing its spec.
 *
 * The body of the one POST is the inventory exactly as `kiln inventory
 * --json` prints it (inventory_to_json), so the file the controller keeps
 * is what `kiln plan SPEC --inventory FILE` reads. A machine whose spec's
 * layouts it fits none of adds the reasons under "enlist" (which the
 * inventory loader skips), so the operator sees why with what. It is signed as the
 * webhook's bodies are (webhook.h): X-Kiln-Signature: sha256=<HMAC-SHA256
 * of the body under the enlist key>, X-Kiln-Event: enlist, X-Kiln-Node-Id
 * (machine UUID, else the boot MAC), X-Kiln-Run-Id (this boot) and
 * X-Kiln-Delivery ("<node id>/enlist/<run id>", the same on every retry).
 * The key is a file the boot server puts into the initramfs (never on the
 * kernel command line). Delivery: delivery.h's policy with a total time
 * limit; nothing is retried past it. Silent module: nothing is written to
 * any disk, nothing is logged. */
#pragma once
#include "delivery.h"
#include "strbuf.h"
#include "inventory.h"
#include "util.h"

#define ENLIST_KEY_MAX 4096u
#define ENLIST_DEFAULT_TIMEOUT_SEC 300u

/* Reads the key: the file's bytes without a trailing newline; registered
 * as a secret. 0, -ENOENT, -EACCES, -EINVAL (empty), -EFBIG (over
 * ENLIST_KEY_MAX), -ENOMEM. The caller wipes and frees it (freep_secret). */
int enlist_load_key(const char *path, char **ret_key);

/* The node id the controller files the inventory under: the machine UUID,
 * else the boot MAC (as the run report's node.id); NULL if neither. */
const char *enlist_node_id(const struct inventory *inv);

/* Why a machine that had a spec fit none of its layouts: one layout's
 * reason (plan_miss's, as the plan's JSON has it in layouts_not_fitting). */
struct enlist_reason {
        const char *layout;
        const char *rule;                       /* the disk rule, or NULL */
        const char *reason;
};

struct enlist_target {
        const char *url;
        const char *key;                        /* SECRET */
        const char *ca_file;                    /* extra CA; NULL = none */
        const struct delivery_policy *policy;   /* NULL = the default, ENLIST_DEFAULT_TIMEOUT_SEC in all */
        /* a spec was fetched, and this machine fits none of its layouts: the
         * body gains "enlist": {"why", "spec", "layouts_not_fitting": [...]}
         * beside the inventory's keys (inventory_load() skips it). NULL why:
         * the inventory alone */
        const char *why;
        const char *spec;                       /* the spec's URL as shown (url_display()) */
        const struct enlist_reason *reasons; size_t n_reasons;
};

/* Posts the inventory. 0 when the controller took it (2xx); *ret_body (may
 * be NULL) gets the exact body posted, also on failure. Errors as
 * webhook_post()'s, with err (may be NULL) saying what happened. */
int enlist_post(const struct inventory *inv, const struct enlist_target *t, char **ret_body, struct strbuf *err);
