/* bench:filter's floor of one extra hop on this machine: the cheapest process there can be
 * between a client and the upstream. One thread, epoll, each client connection piped byte for
 * byte to a connection of its own to the upstream (Nagle off): one read and one write a
 * message each way, no HTTP parsing, no verdict. bench/filter.ts compiles it with `cc -O2`
 * when a C compiler is there. argv[1]: the upstream's port. Prints {"port":N}. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_FD 65536
static int peer[MAX_FD];
static char buf[1 << 16];

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  int upPort = atoi(argv[1]), one = 1;
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) != 0 || listen(ls, 1024) != 0 || getsockname(ls, (struct sockaddr *)&a, &len) != 0) {
    perror("byte-pipe: listen");
    return 1;
  }
  printf("{\"port\":%d}\n", ntohs(a.sin_port));
  fflush(stdout);
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = ls}, evs[64];
  epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
  for (;;) {
    int n = epoll_wait(ep, evs, 64, -1);
    for (int i = 0; i < n; i++) {
      int fd = evs[i].data.fd;
      if (fd == ls) {
        int c = accept(ls, NULL, NULL);
        if (c < 0) continue;
        int u = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in ua = {.sin_family = AF_INET, .sin_port = htons(upPort), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        if (c >= MAX_FD || u < 0 || u >= MAX_FD || connect(u, (struct sockaddr *)&ua, sizeof ua) != 0) {
          close(c);
          if (u >= 0) close(u);
          continue;
        }
        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        setsockopt(u, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        peer[c] = u;
        peer[u] = c;
        struct epoll_event ec = {.events = EPOLLIN, .data.fd = c}, eu = {.events = EPOLLIN, .data.fd = u};
        epoll_ctl(ep, EPOLL_CTL_ADD, c, &ec);
        epoll_ctl(ep, EPOLL_CTL_ADD, u, &eu);
        continue;
      }
      if (peer[fd] < 0) continue; /* its pair closed earlier in this batch */
      ssize_t r = read(fd, buf, sizeof buf);
      if (r <= 0) {
        int p = peer[fd];
        peer[fd] = peer[p] = -1;
        close(p);
        close(fd);
        continue;
      }
      for (ssize_t off = 0; off < r;) {
        ssize_t w = write(peer[fd], buf + off, (size_t)(r - off));
        if (w <= 0) break;
        off += w;
      }
    }
  }
}
