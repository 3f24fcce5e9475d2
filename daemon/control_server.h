// The control socket: binding it safely, and accepting connections.
#pragma once

#include <event2/listener.h>

#include <functional>
#include <string>

#include "common/unique_fd.h"
#include "daemon/event_loop.h"

namespace mcpd {

struct BindResult {
    UniqueFd fd;
    std::string error;  // a sentence, when fd is empty
};

// Bind and listen on `path`: create its directory (0700) when missing, refuse when a live
// daemon answers there, replace a stale socket file, and leave the socket mode 0600.
BindResult bind_control_socket(const std::string& path);

class ControlServer {
public:
    using AcceptHandler = std::function<void(UniqueFd connection)>;

    ControlServer(event_base* base, UniqueFd listening, AcceptHandler on_accept);
    ~ControlServer();
    ControlServer(const ControlServer&) = delete;
    ControlServer& operator=(const ControlServer&) = delete;

    void stop_accepting();

private:
    static void on_accept(evconnlistener*, evutil_socket_t fd, sockaddr*, int, void* self);
    static void on_error(evconnlistener*, void* self);

    evconnlistener* listener_;
    AcceptHandler on_accept_;
    Timer resume_;  // re-enables accepting after running out of file descriptors
};

}  // namespace mcpd
