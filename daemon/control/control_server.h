// The control socket: binding it safely, and accepting connections.
#pragma once

#include <event2/listener.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "common/result.h"
#include "common/unique_fd.h"
#include "daemon/control/socket_directory.h"
#include "daemon/io/descriptor_reserve.h"
#include "daemon/io/event_loop.h"

namespace mcpd {

// Bind and listen on `path`: prepare its directory (socket_directory.h), refuse when anything
// listens there already (naming its user when that is another), replace a stale socket file
// of this user's (never another's), and leave the socket with `access`'s mode and group.
Result<UniqueFd> bind_control_socket(const std::string& path, const SocketAccess& access = {},
                                     bool private_dir = true);

// Descriptors kept back for a full descriptor table (io/descriptor_reserve.h): enough for one
// `mcpctl connect` (its connection and the two descriptors it passes) and then some.
inline constexpr std::size_t kDescriptorReserve = 8;

class ControlServer {
public:
    // `short_of_descriptors`: the reserve is not whole, so this connection may be taking one of
    // its descriptors; only root and mcpd's own user should keep it.
    using AcceptHandler = std::function<void(UniqueFd connection, bool short_of_descriptors)>;
    // The descriptor table is full: close what may go (idle control connections, oldest first)
    // and say how many descriptors that gave back.
    using MakeRoom = std::function<std::size_t()>;

    ControlServer(event_base* base, UniqueFd listening, AcceptHandler on_accept,
                  MakeRoom make_room);
    ~ControlServer();
    ControlServer(const ControlServer&) = delete;
    ControlServer& operator=(const ControlServer&) = delete;

    void stop_accepting();
    // The listening socket (an upgrade in place keeps it open across the exec).
    int fd() const;

private:
    static void on_accept(evconnlistener*, evutil_socket_t fd, sockaddr*, int, void* self);
    static void on_error(evconnlistener*, void* self);

    struct FreeListener {
        void operator()(evconnlistener* listener) const { evconnlistener_free(listener); }
    };

    // Out of descriptors: room made, or the reserve given up, else a pause.
    void out_of_descriptors(int err);

    AcceptHandler on_accept_;
    MakeRoom make_room_;
    DescriptorReserve reserve_;
    Timer resume_;  // re-enables accepting after running out of file descriptors
    // Last, so it goes first: nothing it calls back is destroyed before it.
    std::unique_ptr<evconnlistener, FreeListener> listener_;
};

}  // namespace mcpd
