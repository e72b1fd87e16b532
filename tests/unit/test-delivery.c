/* delivery_send() against a real server that takes the connection and never
 * answers (a listening socket nobody accepts from): an attempt that the
 * shared deadline cuts short ends at the deadline, not a fraction of a
 * millisecond before it. cloudstack.c tells "the time ran out" from "no
 * answer" by the clock after such an attempt (a CI run's resend was left
 * 2.9 ms, curl was given 2 and the registration's error named the cut-off
 * instead of CloudStack's last "later"). */
#include "delivery.h"
#include "tap.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

int main(void) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof a;
        if (fd < 0 || bind(fd, (struct sockaddr *) &a, sizeof a) < 0 || listen(fd, 64) < 0 ||
            getsockname(fd, (struct sockaddr *) &a, &len) < 0) {
                perror("silent server");
                return 1;
        }
        char url[64];
        snprintf(url, sizeof url, "http://127.0.0.1:%u/client/api", ntohs(a.sin_port));
        struct http_request req = { .method = "POST", .url = url, .content_type = "text/plain", .body = "x", .body_len = 1 };

        /* deadlines 2.0-3.9 ms away, every tenth of a millisecond: the
         * fraction a timeout in whole milliseconds would drop */
        unsigned early = 0, late = 0;
        for (unsigned k = 0; k < 20; k++) {
                struct delivery_policy p = { 1000, 1000, 5000, 1, 1, 0, 1, NULL, NULL };
                _cleanup_(http_response_done) struct http_response resp = { 0 };
                _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
                p.deadline_usec = now_usec() + 2000 + 100 * k;
                int r = delivery_send(&req, &p, &resp, &err);
                uint64_t end = now_usec();
                CHECK(r == -ETIMEDOUT || r == -EAGAIN);
                CHECK_INT(resp.status, 0);
                early += end < p.deadline_usec;
                late += end > p.deadline_usec + 500000;
        }
        CHECK_INT(early, 0);
        CHECK_INT(late, 0);     /* and not far past it either */
        close(fd);
        return TEST_DONE();
}
