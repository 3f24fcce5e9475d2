#include "daemon/control/control_server.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/accounts.h"
#include "common/check.h"
#include "common/log.h"
#include "common/scope_guard.h"
#include "daemon/control/peer_auth.h"

namespace mcpd {
namespace {

std::string errno_text() {
    return std::strerror(errno);
}

bool make_address(const std::string& path, sockaddr_un& addr) {
    addr = {};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) return false;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    return true;
}

// bind() with the socket file born 0600 (whatever mcpd's umask); errno is bind's.
int bind_owner_only(int fd, const sockaddr_un& addr) {
    const mode_t old_umask = ::umask(0177);
    const OnScopeEnd restore([old_umask] { ::umask(old_umask); });
    return ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
}

}  // namespace

Result<UniqueFd> bind_control_socket(const std::string& path, const SocketAccess& access,
                                     bool private_dir) {
    sockaddr_un addr{};
    if (!make_address(path, addr)) {
        return permanent_failure("socket path '" + path + "' is too long (at most " +
                                 std::to_string(sizeof addr.sun_path - 1) + " bytes)");
    }
    const std::size_t slash = path.rfind('/');
    std::string directory_error;
    if (slash != std::string::npos &&
        !prepare_socket_directory(slash == 0 ? "/" : path.substr(0, slash), access, private_dir,
                                  directory_error)) {
        return permanent_failure(std::move(directory_error));
    }

    // Is somebody home? A live daemon answers connect(); a stale file refuses it.
    UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (::connect(probe.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
        // Who listens: peer_credentials reads SO_PEERCRED, as for every accepted peer.
        const std::optional<PeerCredentials> listener = peer_credentials(probe.get());
        if (listener && listener->uid == ::geteuid())
            return permanent_failure("another mcpd is already listening on " + path +
                                     "; stop it first ('mcpctl shutdown') or choose another "
                                     "--socket");
        return permanent_failure(
            "a process of " +
            (listener ? accounts::describe_uid(listener->uid) : "an unknown user") +
            ", not of mcpd's user (" + accounts::describe_uid(::geteuid()) + "), is listening on " +
            path +
            "; it may be impersonating mcpd: remove it (as root if need be) or choose another "
            "--socket");
    }
    const int probe_errno = errno;
    probe.reset();
    if (probe_errno == ECONNREFUSED) {
        struct stat st {};
        if (::lstat(path.c_str(), &st) == 0 && !S_ISSOCK(st.st_mode))
            return permanent_failure("'" + path +
                                     "' exists and is not a socket; remove it or choose another "
                                     "--socket");
        if (st.st_uid != ::geteuid())
            return permanent_failure("a stale socket of " + accounts::describe_uid(st.st_uid) +
                                     " is at " + path +
                                     "; mcpd removes only its own: remove it (as root if need "
                                     "be) or choose another --socket");
        log::info("replacing stale socket " + path);
        ::unlink(path.c_str());
    } else if (probe_errno != ENOENT) {
        return permanent_failure("cannot use socket path " + path + ": " +
                                 std::strerror(probe_errno));
    }

    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd) return permanent_failure("cannot create a socket: " + errno_text());
    const int bound = bind_owner_only(fd.get(), addr);
    const int bind_errno = errno;
    if (bound != 0)
        return permanent_failure("cannot bind " + path + ": " + std::strerror(bind_errno));
    // Opened up only now that it is ours: group first, so the group never sees a wider mode.
    if (access.group && ::chown(path.c_str(), -1, *access.group) != 0) {
        Failure failure = permanent_failure(
            "cannot give " + path + " to " + accounts::describe_gid(*access.group) + ": " +
            errno_text() + " (mcpd's user must be a member of that group)");
        ::unlink(path.c_str());
        return failure;
    }
    if (access.mode != 0600 && ::chmod(path.c_str(), access.mode) != 0) {
        Failure failure = permanent_failure("cannot set the mode of " + path + ": " + errno_text());
        ::unlink(path.c_str());
        return failure;
    }
    if (::listen(fd.get(), 128) != 0)
        return permanent_failure("cannot listen on " + path + ": " + errno_text());
    return fd;
}

ControlServer::ControlServer(event_base* base, UniqueFd listening, AcceptHandler on_accept,
                             MakeRoom make_room)
    : on_accept_(std::move(on_accept)),
      make_room_(std::move(make_room)),
      reserve_(kDescriptorReserve),
      resume_(base, [this] { evconnlistener_enable(listener_.get()); }) {
    ::fcntl(listening.get(), F_SETFL, ::fcntl(listening.get(), F_GETFL) | O_NONBLOCK);
    listener_.reset(evconnlistener_new(base, &ControlServer::on_accept, this,
                                       LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0,
                                       listening.get()));
    MCPD_CHECK(listener_ != nullptr, "libevent could not allocate the control socket's listener");
    listening.release();  // the listener closes it now
    evconnlistener_set_error_cb(listener_.get(), &ControlServer::on_error);
}

ControlServer::~ControlServer() = default;

void ControlServer::stop_accepting() {
    resume_.cancel();
    if (listener_ != nullptr) evconnlistener_disable(listener_.get());
}

void ControlServer::on_accept(evconnlistener*, evutil_socket_t fd, sockaddr*, int, void* self) {
    auto* server = static_cast<ControlServer*>(self);
    // Whatever was given up or closed since may have left room to take the reserve back.
    const bool whole = server->reserve_.full() || server->reserve_.refill();
    server->on_accept_(UniqueFd(fd), !whole);
}

void ControlServer::on_error(evconnlistener*, void* self) {
    auto* server = static_cast<ControlServer*>(self);
    const int err = EVUTIL_SOCKET_ERROR();
    if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
        server->out_of_descriptors(err);
        return;
    }
    log::warning(std::string("accept failed: ") + std::strerror(err));
}

void ControlServer::out_of_descriptors(int err) {
    // The listener stays enabled: the waiting connection is accepted on the next turn.
    if (err == EMFILE && make_room_() > 0) return;
    if (const std::size_t released = reserve_.release(); released > 0) {
        log::warning(
            "mcpd's descriptor table is full and no idle control connection could be "
            "closed; gave back the " +
            std::to_string(released) +
            " descriptors held in reserve so that root and mcpd's own user still get "
            "in (other users are refused until they are back)");
        return;
    }
    // Nothing left to give: pause accepting for a second instead of spinning.
    log::warning(std::string("cannot accept connections: ") + std::strerror(err) +
                 "; pausing for 1s");
    evconnlistener_disable(listener_.get());
    resume_.arm(std::chrono::seconds(1));
}

int ControlServer::fd() const {
    return evconnlistener_get_fd(listener_.get());
}

}  // namespace mcpd
