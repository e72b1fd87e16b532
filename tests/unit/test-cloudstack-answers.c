/* cs_register_host() against hostile or broken CloudStack answers, through
 * struct cs_client's transport hook (no server): each gets the exact error
 * for the operator, and a well-formed exchange registers. The answers are
 * the ones tests/fuzz/fuzz-cloudstack.c starts from. */
#include "cloudstack.h"
#include "tap.h"

struct canned {
        const char *body[10];
        long status[10];
        int ret[10];
        unsigned calls;
        char commands[256];
};

static int canned_send(const struct http_request *req, const struct delivery_policy *policy,
                       struct http_response *resp, struct strbuf *err, void *userdata) {
        struct canned *c = userdata;
        unsigned i = c->calls++;
        const char *cmd = strstr(req->body, "command=");
        size_t l = strlen(c->commands);
        snprintf(c->commands + l, sizeof c->commands - l, "%s%.*s", l ? "," : "", cmd ? (int) strcspn(cmd + 8, "&") : 1,
                 cmd ? cmd + 8 : "?");
        resp->attempts = 1;
        strbuf_reset(&resp->body);
        if (i >= 10 || !c->body[i]) {
                resp->status = 0;
                strbuf_errorf(err, 0, "Connection refused");
                return -ETIMEDOUT;
        }
        resp->status = c->status[i] < 0 ? 0 : c->status[i] ? c->status[i] : 200;   /* -1: no answer */
        (void) strbuf_adds(&resp->body, c->body[i]);
        return c->ret[i];
}

#define ZONES "{\"listzonesresponse\":{\"count\":1,\"zone\":[{\"id\":\"z-1\",\"name\":\"zone1\"}]}}"
#define PODS "{\"listpodsresponse\":{\"count\":1,\"pod\":[{\"id\":\"p-1\",\"name\":\"pod1\"}]}}"
#define CLUSTERS "{\"listclustersresponse\":{\"count\":1,\"cluster\":[{\"id\":\"c-1\",\"name\":\"cluster1\"}]}}"
#define NO_HOSTS "{\"listhostsresponse\":{}}"

/* backoff of 1 ms: the looks after an addHost without a verdict cost no time */
static const struct delivery_policy fast = { 100, 100, 5000, 1, 1, 0, 0, NULL, NULL };

static int run_ip(struct canned *c, const char *ip, struct cs_result *res, struct strbuf *err) {
        struct cs_client cl = { .endpoint = "http://127.0.0.1:9/client/api", .api_key = "KEY",
                                .secret_key = "SECRET-0123456789", .policy = &fast,
                                .send = canned_send, .send_userdata = c };
        struct cs_host h = { .zone = "zone1", .pod = "pod1", .cluster = "cluster1", .ip = ip,
                             .password = "PASSWORD-0123456789" };
        return cs_register_host(&cl, &h, res, err);
}

static int run(struct canned *c, struct cs_result *res, struct strbuf *err) {
        return run_ip(c, "192.0.2.10", res, err);
}

#define HOST(ip, state, zone) "{\"listhostsresponse\":{\"count\":1,\"host\":[{\"id\":\"h-1\",\"ipaddress\":\"" ip \
        "\",\"state\":\"" state "\",\"zoneid\":\"" zone "\"}]}}"
#define ADD_530(text) "{\"addhostresponse\":{\"uuidList\":[],\"errorcode\":530,\"cserrorcode\":4250,\"errortext\":\"" text "\"}}"

static void expect(struct canned c, int want_r, const char *want_err, const char *want_commands) {
        struct cs_result res = { 0 };
        _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
        CHECK_INT(run(&c, &res, &err), want_r);
        CHECK_STR(strbuf_str(&err), want_err);
        CHECK_STR(c.commands, want_commands);
        CHECK(res.host_id == NULL);
        cs_result_done(&res);
}

int main(void) {
        /* a well-formed exchange: added */
        struct canned ok = { .body = { ZONES, PODS, CLUSTERS, NO_HOSTS,
                "{\"addhostresponse\":{\"count\":1,\"host\":[{\"id\":\"h-2\",\"name\":\"kvm-2\",\"state\":\"Up\"}]}}" } };
        struct cs_result res = { 0 };
        _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
        CHECK_INT(run(&ok, &res, &err), 0);
        CHECK_STR(res.host_id, "h-2");
        CHECK_STR(res.host_state, "Up");
        CHECK(res.added && err.len == 0);
        CHECK_STR(ok.commands, "listZones,listPods,listClusters,listHosts,addHost");
        cs_result_done(&res);

        /* not JSON at all, with HTTP 200 */
        expect((struct canned) { .body = { "<html>proxy login</html>" } }, -EBADMSG,
               "CloudStack answered listZones with something that is not its JSON (HTTP 200)", "listZones");
        /* JSON, but not an object wrapping an object */
        expect((struct canned) { .body = { "[{\"listzonesresponse\":{}}]" } }, -EBADMSG,
               "CloudStack answered listZones with something that is not its JSON (HTTP 200)", "listZones");
        /* truncated JSON */
        expect((struct canned) { .body = { "{\"listzonesresponse\":{\"zone\":[{\"id\":\"z-1\"" } }, -EBADMSG,
               "CloudStack answered listZones with something that is not its JSON (HTTP 200)", "listZones");
        /* the list is not a list; the zone has no id */
        expect((struct canned) { .body = { "{\"listzonesresponse\":{\"zone\":{\"id\":\"z-1\",\"name\":\"zone1\"}}}" } },
               -ENOENT, "CloudStack has no zone 'zone1' (it has: none)", "listZones");
        expect((struct canned) { .body = { "{\"listzonesresponse\":{\"zone\":[7,{\"name\":\"zone1\"},{\"id\":null,\"name\":\"zone1\"}]}}" } },
               -ENOENT, "CloudStack has no zone 'zone1' (it has: '?', 'zone1', 'zone1')", "listZones");
        /* errorcode in a 200 answer */
        expect((struct canned) { .body = { ZONES, "{\"listpodsresponse\":{\"errorcode\":530,\"errortext\":\"internal\"}}" } },
               -EPROTO, "CloudStack refused listPods (errorcode 530): internal", "listZones,listPods");
        /* 431 with CloudStack's error body */
        expect((struct canned) { .body = { ZONES, PODS, CLUSTERS, NO_HOSTS,
                                           "{\"addhostresponse\":{\"errorcode\":431,\"errortext\":\"Unable to add the host\"}}" },
                                 .status = { 0, 0, 0, 0, 431 }, .ret = { 0, 0, 0, 0, -EPROTO } },
               -EPROTO, "CloudStack refused addHost (HTTP 431, errorcode 431): Unable to add the host",
               "listZones,listPods,listClusters,listHosts,addHost");
        /* addHost answers without a host, or a host without an id */
        expect((struct canned) { .body = { ZONES, PODS, CLUSTERS, NO_HOSTS, "{\"addhostresponse\":{\"count\":0}}" } },
               -EBADMSG, "CloudStack's addHost answer names no host", "listZones,listPods,listClusters,listHosts,addHost");
        expect((struct canned) { .body = { ZONES, PODS, CLUSTERS,
                                           "{\"listhostsresponse\":{\"host\":[{\"ipaddress\":\"192.0.2.10\"}]}}" } },
               -EBADMSG, "CloudStack's listHosts answer has a host without an id", "listZones,listPods,listClusters,listHosts");
        /* 530 "already in the database": looked again, found, not sent again */
        struct canned exists = { .body = { ZONES, PODS, CLUSTERS, NO_HOSTS,
                ADD_530("Skipping host 192.0.2.10 because 6a1c-... is already in the database for resource 6a1c-...-LibvirtComputingResource with ID h-1"),
                HOST("192.0.2.10", "Up", "z-1") }, .status = { 0, 0, 0, 0, 530 }, .ret = { 0, 0, 0, 0, -EREMOTEIO } };
        res = (struct cs_result) { 0 };
        CHECK_INT(run(&exists, &res, &err), 0);
        CHECK_STR(res.host_id, "h-1");
        CHECK(!res.added && res.found_after_add && res.add_sends == 1 && err.len == 0);
        CHECK_STR(exists.commands, "listZones,listPods,listClusters,listHosts,addHost,listHosts");
        cs_result_done(&res);
        /* any other 530: one look, then final with CloudStack's text */
        expect((struct canned) { .body = { ZONES, PODS, CLUSTERS, NO_HOSTS,
                                           ADD_530("Could not add host at [http://192.0.2.10] with zone [1], pod [1] and cluster [1] due to: [Authentication error]."),
                                           NO_HOSTS },
                                 .status = { 0, 0, 0, 0, 530 }, .ret = { 0, 0, 0, 0, -EREMOTEIO } },
               -EPROTO, "CloudStack refused addHost (HTTP 530, errorcode 530): Could not add host at [http://192.0.2.10] with zone [1], pod [1] and cluster [1] due to: [Authentication error].",
               "listZones,listPods,listClusters,listHosts,addHost,listHosts");
        /* no verdict (timeout): look; the host is Connecting, then Up: no second addHost */
        struct canned lost = { .body = { ZONES, PODS, CLUSTERS, NO_HOSTS, "", HOST("192.0.2.10", "Connecting", "z-1"),
                                         HOST("192.0.2.10", "Up", "z-1") },
                               .status = { 0, 0, 0, 0, -1 }, .ret = { 0, 0, 0, 0, -EAGAIN } };
        res = (struct cs_result) { 0 };
        CHECK_INT(run(&lost, &res, &err), 0);
        CHECK_STR(res.host_state, "Up");
        CHECK(!res.added && res.found_after_add && res.add_sends == 1);
        CHECK_STR(lost.commands, "listZones,listPods,listClusters,listHosts,addHost,listHosts,listHosts");
        cs_result_done(&res);
        /* no verdict, nothing there: sent again after the look */
        struct canned resend = { .body = { ZONES, PODS, CLUSTERS, NO_HOSTS, "", NO_HOSTS,
                "{\"addhostresponse\":{\"count\":1,\"host\":[{\"id\":\"h-3\",\"state\":\"Up\"}]}}" },
                                 .status = { 0, 0, 0, 0, -1 }, .ret = { 0, 0, 0, 0, -EAGAIN } };
        res = (struct cs_result) { 0 };
        CHECK_INT(run(&resend, &res, &err), 0);
        CHECK(res.added && res.add_sends == 2);
        CHECK_STR(resend.commands, "listZones,listPods,listClusters,listHosts,addHost,listHosts,addHost");
        cs_result_done(&res);
        /* IPv6: CloudStack's long form is the same address; nothing added */
        struct canned v6 = { .body = { ZONES, PODS, CLUSTERS, HOST("fd00:0:0:0:0:0:0:15", "Up", "z-1") } };
        res = (struct cs_result) { 0 };
        CHECK_INT(run_ip(&v6, "fd00::15", &res, &err), 0);
        CHECK(!res.added && !res.found_after_add && res.add_sends == 0);
        CHECK_STR(v6.commands, "listZones,listPods,listClusters,listHosts");
        cs_result_done(&res);
        /* the address is in another zone: an error, not a second host */
        expect((struct canned) { .body = { ZONES, PODS, CLUSTERS, HOST("192.0.2.10", "Up", "z-9") } }, -EEXIST,
               "CloudStack already has host 192.0.2.10 (id h-1) in another zone (id z-9), not in zone 'zone1'",
               "listZones,listPods,listClusters,listHosts");
        /* the address of a url's host */
        struct cs_address a, b;
        CHECK_INT(cs_url_address("http://root@[fd00::0:5]:8080/x", &a), 0);
        CHECK_STR(a.text, "fd00::5");
        CHECK_INT(cs_host_address("fd00:0:0:0:0:0:0:5", &b), 0);
        CHECK(cs_address_equal(&a, &b));
        CHECK_INT(cs_url_address("http://10.0.0.1:80", &a), 0);
        CHECK_STR(a.text, "10.0.0.1");
        CHECK_INT(cs_host_address("[10.0.0.1]", &b), 0);
        CHECK(cs_address_equal(&a, &b));
        CHECK_INT(cs_url_address("http://[fd00::5", &a), -EINVAL);
        CHECK_INT(cs_url_address("10.0.0.1", &a), -EINVAL);
        CHECK_INT(cs_host_address("fd00::5%eth0", &a), -EINVAL);
        /* the connection goes away after the zones */
        expect((struct canned) { .body = { ZONES } }, -ETIMEDOUT,
               "CloudStack at 'http://127.0.0.1:9/client/api' did not answer listPods in time after 1 attempt (last: Connection refused)",
               "listZones,listPods");
        return TEST_DONE();
}
