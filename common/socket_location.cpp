#include "common/socket_location.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

namespace mcpd::control {

namespace {

// A directory of this user's own, not a link to one: only then is it the user's runtime
// directory (another user could create a look-alike under /tmp, not under /run/user).
bool own_directory(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::getuid();
}

}  // namespace

SocketChoice default_socket(std::string_view run_user) {
    const char* runtime = std::getenv("XDG_RUNTIME_DIR");
    if (runtime != nullptr && runtime[0] == '/')
        return {std::string(runtime) + "/mcpd/mcpd.sock", "$XDG_RUNTIME_DIR is set"};
    const std::string uid = std::to_string(::getuid());
    const std::string user_runtime = std::string(run_user) + "/" + uid;
    if (own_directory(user_runtime))
        return {user_runtime + "/mcpd/mcpd.sock",
                "XDG_RUNTIME_DIR is unset and " + user_runtime + " is this user's runtime directory"};
    return {"/tmp/mcpd-" + uid + "/mcpd.sock",
            "XDG_RUNTIME_DIR is unset and there is no runtime directory " + user_runtime +
                " of this user's"};
}

std::string default_socket_path() { return default_socket().path; }

SocketChoice client_socket(std::string_view flag_value, std::string_view system_socket,
                           std::string_view run_user) {
    if (!flag_value.empty()) return {std::string(flag_value), "--socket names it"};
    const char* env = std::getenv("MCPD_SOCKET");
    if (env != nullptr && env[0] != '\0') return {env, "$MCPD_SOCKET names it"};
    SocketChoice user = default_socket(run_user);
    // Members of group mcpd reach the system service without naming its socket.
    if (::access(user.path.c_str(), F_OK) != 0 &&
        ::access(std::string(system_socket).c_str(), F_OK) == 0)
        return {std::string(system_socket),
                "the per-user socket " + user.path + " does not exist (" + user.reason +
                    ") and the system service's does"};
    return user;
}

std::string client_socket_path(std::string_view flag_value, std::string_view system_socket) {
    return client_socket(flag_value, system_socket).path;
}

}  // namespace mcpd::control
