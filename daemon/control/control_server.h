// The control socket: binding it safely, and accepting connections.
#pragma once

#include <event2/listener.h>

#include <functional>
#include <memory>
#include <string>

#include "common/result.h"
#include "common/unique_fd.h"
#include "daemon/control/socket_directory.h"
#include "daemon/io/event_loop.h"

namespace mcpd {

// Bind and listen on `path`: prepare its directory (socket_directory.h), refuse when anything
// listens there already (naming its user when that is another), replace a stale socket file
// of this user's (never another's), and leave the socket with `access`'s mode and group.
Result<UniqueFd> bind_control_socket(const std::string& path, const SocketAccess& access = {},
                                     bool private_dir = true);

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

    struct FreeListener {
        void operator()(evconnlistener* listener) const { evconnlistener_free(listener); }
    };

    AcceptHandler on_accept_;
    Timer resume_;  // re-enables accepting after running out of file descriptors
    // Last, so it goes first: nothing it calls back is destroyed before it.
    std::unique_ptr<evconnlistener, FreeListener> listener_;
};

}  // namespace mcpd
