#include "flotilla/common/loopback.h"

#include <arpa/inet.h>
#include <netinet/in.h>

namespace flotilla {

bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost" || host == "::1" || host == "[::1]") return true;
  in_addr a{};
  return inet_pton(AF_INET, host.c_str(), &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

}  // namespace flotilla
