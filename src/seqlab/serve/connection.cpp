#include "seqlab/serve/connection.h"

#include <cerrno>
#include <cstdlib>

#include <dirent.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

namespace seqlab::serve {

namespace {

// The port of a socket address, and its host as getnameinfo writes it numerically (what
// cpp-httplib puts in Request::remote_addr); false for anything but IPv4 and IPv6.
bool endpoint(const sockaddr_storage& a, socklen_t len, std::string* host, int* port) {
  if (a.ss_family == AF_INET)
    *port = ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port);
  else if (a.ss_family == AF_INET6)
    *port = ntohs(reinterpret_cast<const sockaddr_in6&>(a).sin6_port);
  else
    return false;
  if (!host) return true;
  char buf[NI_MAXHOST];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&a), len, buf, sizeof buf, nullptr, 0,
                  NI_NUMERICHOST) != 0)
    return false;
  *host = buf;
  return true;
}

bool is_connection(int fd, const std::string& remote_addr, int remote_port, int local_port) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  int port = -1;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0 ||
      !endpoint(a, len, nullptr, &port) || port != local_port)
    return false;
  len = sizeof a;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0 ||
      !endpoint(a, len, nullptr, &port) || port != remote_port)
    return false;
  std::string host;  // last: every accepted socket shares the local port, few the remote one
  return endpoint(a, len, &host, &port) && host == remote_addr;
}

}  // namespace

ClientConnection::ClientConnection(const std::string& remote_addr, int remote_port,
                                   int local_port) {
  if (remote_port < 0 || local_port < 0) return;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return;
  while (const dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    if (is_connection(static_cast<int>(fd), remote_addr, remote_port, local_port)) {
      fd_ = static_cast<int>(fd);
      break;
    }
  }
  closedir(dir);
}

bool ClientConnection::closed() const {
  if (fd_ < 0) return false;
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) return false;  // nothing to read (or interrupted): still there
  if (p.revents & POLLNVAL) return true;
  char c;
  const ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return false;
  if (n == 0) return true;
  return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

}  // namespace seqlab::serve
