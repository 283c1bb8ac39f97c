// Whether an HTTP client is still there, for a handler that is not writing to it (serve/server.cpp:
// a non-streaming completion waits for the whole result before it writes a byte).
//
// cpp-httplib 0.11 gives a handler neither its socket nor a way to ask whether the client left.
// The connection is found once, among this process's sockets, by the two endpoints the request
// records (local port, remote address and port: one TCP connection), and then polled without
// blocking while the handler waits. A readable socket whose peek returns no bytes (the client's
// FIN) or an error (its RST) is closed; bytes waiting (a pipelined next request) mean the client
// is still there and are left for cpp-httplib to read. A client that half-closes (shutdown of its
// writing side) while waiting for the reply counts as gone, as in cpp-httplib's later versions.
//
// Linux: the sockets are listed from /proc/self/fd. Where the connection cannot be found (no
// /proc, or the client reset it before the lookup) it is unwatched and closed() stays false.
#pragma once

#include <string>

namespace seqlab::serve {

class ClientConnection {
 public:
  ClientConnection() = default;  // unwatched
  // The accepted socket whose local port is local_port and whose peer is remote_addr:remote_port
  // (the text cpp-httplib's Request holds: numeric host as getnameinfo writes it). Costs one
  // fstat and up to two address look-ups per open descriptor of the process.
  ClientConnection(const std::string& remote_addr, int remote_port, int local_port);

  bool watched() const { return fd_ >= 0; }
  // True once the client has closed or reset the connection; never blocks. The descriptor stays
  // valid as long as the handler runs (cpp-httplib closes it on the handler's thread, after).
  bool closed() const;

 private:
  int fd_ = -1;
};

}  // namespace seqlab::serve
