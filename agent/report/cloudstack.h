/* CloudStack's HTTP API, the subset kiln needs to register a KVM host:
 * listZones, listPods, listClusters, listHosts and addHost.
 *
 * Requests are signed as CloudStack's developer guide describes ("Signing API
 * Requests"): every parameter except the signature, values URL-encoded as
 * java.net.URLEncoder does with spaces as %20, sorted by name, joined with
 * '&', the whole string lower-cased, HMAC-SHA1 with the secret key, Base64,
 * then URL-encoded as the "signature" parameter. kiln always adds
 * signatureversion=3 and expires (ISO 8601, UTC) so a captured request cannot
 * be replayed later. Requests go out as POST form bodies, so the host password
 * never appears in a URL (or a proxy's log).
 *
 * Silent module: returns 0 / -errno; on failure *ret_error (if given) gets a
 * message meant for the operator, e.g.
 *   "CloudStack refused addHost (errorcode 431): Unable to add the host" */
#pragma once
#include "delivery.h"
#include "strbuf.h"
#include "util.h"

#include <json-c/json.h>
#include <time.h>

#define CS_EXPIRES_SEC 600      /* signed requests are valid this long */

struct cs_param {
        const char *name;       /* lower case */
        const char *value;
};

/* How a request travels: delivery_send() unless a test or a fuzzer puts its
 * own transport here (tests/fuzz/fuzz-cloudstack.c answers from its input). */
typedef int (*cs_send_fn)(const struct http_request *req, const struct delivery_policy *policy,
                          struct http_response *resp, struct strbuf *err, void *userdata);

struct cs_client {
        const char *endpoint;   /* http(s)://host:8080/client/api */
        const char *api_key;
        const char *secret_key; /* SECRET */
        const char *ca_file;    /* NULL = system CAs */
        const struct delivery_policy *policy;   /* NULL = default */
        unsigned expires_sec;   /* 0 = CS_EXPIRES_SEC */
        cs_send_fn send;        /* NULL = delivery_send */
        void *send_userdata;
};

/* Append v URL-encoded the way CloudStack re-encodes it when it verifies:
 * [A-Za-z0-9.*_-] kept, space as %20, everything else %XX. */
int cs_encode_value(const char *v, struct strbuf *out);

/* The signature (Base64, not yet URL-encoded) over params, which must already
 * contain apikey, command and everything else that is sent. */
int cs_signature(const struct cs_param *params, size_t n, const char *secret_key, char **ret);

/* "2026-11-30T05:40:00+0000", the form CloudStack parses for expires. */
int cs_format_expires(time_t t, char *buf, size_t len);

/* The complete form body (or query) for one command: params plus command,
 * response=json, apikey, signatureversion=3, expires=now+expires_sec, signature. */
int cs_build_query(const struct cs_client *c, const char *command, const struct cs_param *params, size_t n,
                   time_t now, struct strbuf *out);

/* Sign and send one command; *ret gets the "<command>response" object of the
 * answer (the caller puts it). */
int cs_call(const struct cs_client *c, const char *command, const struct cs_param *params, size_t n,
            json_object **ret, struct strbuf *err);

struct cs_host {
        const char *zone, *pod, *cluster;      /* names */
        const char *ip;                         /* how the host is found in listHosts */
        const char *url;                        /* addHost url; default http://IP */
        const char *username;                   /* default root */
        const char *password;                   /* SECRET; NULL = key-based login */
};

struct cs_result {
        char *zone_id, *pod_id, *cluster_id, *host_id;
        char *host_name, *host_state;
        bool added;                             /* false: it was there already */
        bool found_after_add;                   /* not added by an answer kiln saw, but found after
                                                 * its addHost (another run's, or one whose answer was lost) */
        unsigned add_sends;                     /* addHost requests sent */
};
void cs_result_done(struct cs_result *r);

/* An address as CloudStack knows a host: parsed, so that "fd00::5" and Java's
 * "fd00:0:0:0:0:0:0:5" are the same; text is the short form. */
struct cs_address {
        int family;                             /* AF_INET or AF_INET6 */
        unsigned char bytes[16];
        char text[46];
};
/* An IP address, IPv6 with or without brackets; -EINVAL if it is none. */
int cs_host_address(const char *text, struct cs_address *ret);
bool cs_address_equal(const struct cs_address *a, const struct cs_address *b);
/* The address of a url's host (http://[fd00::5]:80/ -> fd00::5); a name is resolved. */
int cs_url_address(const char *url, struct cs_address *ret);

/* Resolve the names, look for the host by its address (host_url's, else ip)
 * on every page of listHosts, and add it only if it is not there, so that
 * no sequence of lost answers or concurrent runs adds it twice (the rules
 * are in cloudstack.c and docs/register.md). -ENOENT when a zone, pod or
 * cluster is unknown; -EPROTO with CloudStack's text when addHost failed. */
int cs_register_host(const struct cs_client *c, const struct cs_host *h, struct cs_result *ret,
                     struct strbuf *err);
