/* libFuzzer target: CloudStack's answers (agent/report/cloudstack.c). The input is
 * the controller's side of one registration: up to six answers, separated by
 * the byte 0x1e, to listZones, listPods, listClusters, listHosts, addHost in
 * turn (then to the looks and sends that follow an addHost that failed). The
 * first byte of an answer picks how it arrives ('2' HTTP 200, 'A' 401, '4'
 * 431, '3' 530 (CloudStack's verdict, as delivery_send returns it), '5' 503
 * until the time is up, '0' no answer at all); the rest is its body. cs_register_host() runs for real against them: it must end
 * with a result that names a host or with an error message for the operator,
 * and the message must never carry the secret key or the host password. */
#include "cloudstack.h"

#include <errno.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SECRET "fuzz-SECRET-key-9f2c"
#define PASSWORD "fuzz-host-PASSWORD-77aa"

struct answers {
        const uint8_t *data;
        size_t size, pos;
        unsigned calls, limit;
};

static int fake_send(const struct http_request *req, const struct delivery_policy *policy,
                     struct http_response *resp, struct strbuf *err, void *userdata) {
        struct answers *a = userdata;
        a->calls++;
        if (a->calls > a->limit)
                __builtin_trap();       /* each request takes an answer; once they are out, two more at most */
        resp->attempts = 1;
        resp->body.max = DELIVERY_MAX_RESPONSE;
        strbuf_reset(&resp->body);
        if (a->pos >= a->size) {
                resp->status = 0;
                strbuf_errorf(err, 0, "Connection refused");
                return -ETIMEDOUT;
        }
        const uint8_t *p = a->data + a->pos, *end = memchr(p, 0x1e, a->size - a->pos);
        size_t n = end ? (size_t) (end - p) : a->size - a->pos;
        a->pos += n + (end ? 1 : 0);
        char how = n > 0 ? (char) p[0] : '2';
        if (n > 0 && strbuf_add(&resp->body, p + 1, n - 1) < 0)
                return -EFBIG;
        switch (how) {
        case 'A':
                resp->status = 401;
                return -EACCES;
        case '4':
                resp->status = 431;
                return -EPROTO;
        case '3':
                resp->status = 530;
                return -EREMOTEIO;
        case '5':
                resp->status = 503;
                strbuf_errorf(err, 0, "HTTP 503");
                return -ETIMEDOUT;
        case '0':
                resp->status = 0;
                strbuf_reset(&resp->body);
                strbuf_errorf(err, 0, "Couldn't connect to server");
                return -ETIMEDOUT;
        default:
                resp->status = 200;
                return 0;
        }
}

static bool contains(const void *hay, size_t n, const char *needle) {
        return memmem(hay, n, needle, strlen(needle)) != NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct answers a = { data, size, 0, 0, 3 };
        for (size_t i = 0; i < size; i++)
                a.limit += data[i] == 0x1e;
        /* backoff of 1 ms: the looks after a lost addHost answer cost no time */
        static const struct delivery_policy fast = { 100, 100, 2000, 1, 1, 0, 0, NULL, NULL };
        struct cs_client c = {
                .policy = &fast,
                .endpoint = "http://127.0.0.1:9/client/api",
                .api_key = "fuzz-api-key",
                .secret_key = SECRET,
                .send = fake_send,
                .send_userdata = &a,
        };
        struct cs_host h = {
                .zone = "zone1", .pod = "pod1", .cluster = "cluster1",
                .ip = "192.0.2.10", .password = PASSWORD,
        };
        struct cs_result res = { 0 };
        struct strbuf err = STRBUF_INIT;
        int r = cs_register_host(&c, &h, &res, &err);
        if (r == 0) {
                if (!res.host_id || !res.zone_id || !res.pod_id || !res.cluster_id || a.calls < 4)
                        __builtin_trap();
                cs_result_done(&res);
        } else {
                if (res.host_id || res.zone_id)
                        __builtin_trap();       /* ret is set only on success */
                if (!err.len && r != -ENOMEM)
                        __builtin_trap();       /* every refusal says why */
        }
        if ((strstr(strbuf_str(&err), SECRET) && !contains(data, size, SECRET)) ||
            (strstr(strbuf_str(&err), PASSWORD) && !contains(data, size, PASSWORD)))
                __builtin_trap();               /* a secret in the operator's message */
        strbuf_release(&err);
        return 0;
}
