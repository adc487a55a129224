// Linux calls Glibc's Swift overlay does not export. No _GNU_SOURCE here:
// with it clang sees two definitions of fd_set.
#ifndef KVCACHE_CLINUX_SHIM_H
#define KVCACHE_CLINUX_SHIM_H
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/file.h>
#include <sys/uio.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <malloc.h>

extern int accept4(int sockfd, struct sockaddr *addr, socklen_t *addrlen, int flags);
// glibc 2.28+; declared here because it hides behind _GNU_SOURCE.
extern int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, unsigned int flags);
static const unsigned int kv_RENAME_EXCHANGE = (1 << 1);
static const int kv_AT_FDCWD = -100;

#ifndef SOCK_NONBLOCK
#define SOCK_NONBLOCK 04000
#endif
#ifndef SOCK_CLOEXEC
#define SOCK_CLOEXEC 02000000
#endif
static const int kv_SOCK_NONBLOCK = SOCK_NONBLOCK;
static const int kv_SOCK_CLOEXEC = SOCK_CLOEXEC;
static const int kv_EFD_NONBLOCK = EFD_NONBLOCK;
static const int kv_EFD_CLOEXEC = EFD_CLOEXEC;
static const unsigned int kv_EPOLLIN = EPOLLIN;
static const unsigned int kv_EPOLLOUT = EPOLLOUT;
static const unsigned int kv_EPOLLERR = EPOLLERR;
static const unsigned int kv_EPOLLHUP = EPOLLHUP;
static const unsigned int kv_EPOLLRDHUP = EPOLLRDHUP;
#endif
