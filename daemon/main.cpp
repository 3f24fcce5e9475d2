// mcpd: the MCP server supervisor.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/log.h"
#include "config/registry.h"
#include "daemon/control/socket_reach.h"
#include "daemon/daemon.h"
#include "daemon/options.h"
#include "daemon/sandbox/kernel_support.h"
#include "daemon/server/sandbox_setup.h"
#include "daemon/systemd/journal.h"
#include "daemon/upgrade_binary.h"
#include "daemon/upgrade_state.h"

namespace {

// Make sure fds 0-2 exist, so no socket or pipe we open later lands on them.
void ensure_standard_fds() {
    for (int fd = 0; fd < 3; ++fd) {
        if (::fcntl(fd, F_GETFD) < 0) {
            const int null = ::open("/dev/null", O_RDWR);
            if (null >= 0 && null != fd) {
                ::dup2(null, fd);
                ::close(null);
            }
        }
    }
}

// `socket_flag`: --socket, when given; the check says which allowed users could not reach
// the socket mcpd would listen on.
int check_config(const std::string& path, const std::string& socket_flag) {
    const mcpd::config::LoadResult result = mcpd::config::load_registry(path);
    if (!result.registry) {
        for (const auto& error : result.errors)
            std::fprintf(stderr, "%s\n", error.to_string().c_str());
        std::fprintf(stderr, "%s: %zu %s\n", path.c_str(), result.errors.size(),
                     result.errors.size() == 1 ? "error" : "errors");
        return 1;
    }
    const auto& registry = *result.registry;
    std::printf("%s: OK, %zu %s\n", path.c_str(), registry.servers.size(),
                registry.servers.size() == 1 ? "server" : "servers");
    for (const auto& server : registry.servers) {
        std::string command = server.command;
        for (const auto& arg : server.args) command += " " + arg;
        std::printf("  %-20s %s%s\n", server.name.c_str(), command.c_str(),
                    server.autostart ? "" : "  (autostart = false)");
    }
    // What this machine can enforce of each sandbox; strict ones it cannot are errors.
    bool refused = false;
    bool any_sandbox = false;
    for (const auto& server : registry.servers) {
        for (const std::string& line : mcpd::sandbox_report(server)) {
            any_sandbox = true;
            refused = refused || line.starts_with("refused");
            std::printf("  %-20s %s\n", server.name.c_str(), line.c_str());
        }
    }
    if (any_sandbox) {
        for (const std::string& line : mcpd::sandbox::describe(mcpd::sandbox::kernel_support()))
            std::printf("  this machine: %s\n", line.c_str());
    }
    for (const auto& group : registry.groups) {
        std::string members;
        for (const auto& member : group.members)
            members += (members.empty() ? "" : ", ") + member.server;
        std::printf("  %-20s group of %s\n", group.name.c_str(), members.c_str());
    }
    const mcpd::SocketSettings socket = mcpd::resolve_socket(socket_flag, registry.daemon, path);
    const std::string unreachable = mcpd::unreachable_warning(
        mcpd::unreachable_peers(registry, socket.path, socket.access, socket.is_default,
                                mcpd::SocketState::planned),
        socket.path);
    if (!unreachable.empty()) std::fprintf(stderr, "warning: %s\n", unreachable.c_str());
    if (refused) {
        std::fprintf(stderr, "%s: a server with sandbox.strict = true asks for rules this machine "
                             "cannot enforce: it would not start\n", path.c_str());
        return 1;
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    ensure_standard_fds();
    const mcpd::CommandLine cli =
        mcpd::parse_command_line(std::vector<std::string>(argv + 1, argv + argc));
    if (!cli.error.empty()) {
        std::fprintf(stderr, "mcpd: %s\n%s", cli.error.c_str(), mcpd::usage_text().c_str());
        return 2;
    }
    switch (cli.mode) {
        case mcpd::CommandLine::Mode::help:
            std::fputs(mcpd::usage_text().c_str(), stdout);
            return 0;
        case mcpd::CommandLine::Mode::version:
            std::puts("mcpd " MCPD_VERSION);
            return 0;
        case mcpd::CommandLine::Mode::check_config:
            return check_config(cli.config_path, cli.socket_path);
        case mcpd::CommandLine::Mode::check_state:
            return mcpd::check_state_command(cli.state_fd);
        case mcpd::CommandLine::Mode::run:
            break;
    }

    mcpd::use_journal_if_connected();
    std::string config_path =
        cli.config_path.empty() ? mcpd::default_config_path() : cli.config_path;
    // Absolute, so reloads and relative paths inside the registry never depend on our cwd.
    if (char* real = ::realpath(config_path.c_str(), nullptr)) {
        config_path = real;
        std::free(real);
    }
    mcpd::config::LoadResult loaded = mcpd::config::load_registry(config_path);
    if (!loaded.registry) {
        for (const auto& error : loaded.errors) mcpd::log::error(error.to_string());
        mcpd::log::error("cannot start: fix the registry (check it with 'mcpd --check-config " +
                         config_path + "')");
        return 1;
    }
    if (!cli.log_level.empty()) {
        mcpd::log::Level level{};
        if (!mcpd::log::parse_level(cli.log_level, level)) {
            std::fprintf(stderr, "mcpd: --log-level must be debug, info, warning or error\n");
            return 2;
        }
        loaded.registry->daemon.log_level = level;
    }

    // An upgrade in place: this binary replaces the mcpd that exec'd it, from its state.
    std::unique_ptr<mcpd::UpgradeState> restored;
    if (cli.restore) {
        mcpd::Result<mcpd::UpgradeState> state = mcpd::take_upgrade_state(cli.state_fd);
        if (!state) {
            mcpd::log::error("cannot take over from the mcpd this binary replaces: " +
                             state.error());
            return 1;
        }
        restored = std::make_unique<mcpd::UpgradeState>(std::move(state).value());
    }

    mcpd::DaemonOptions options;
    options.config_path = config_path;
    mcpd::SocketSettings socket =
        mcpd::resolve_socket(cli.socket_path, loaded.registry->daemon, config_path);
    options.socket_path = std::move(socket.path);
    options.socket_reason = std::move(socket.reason);
    options.socket_is_default = socket.is_default;
    options.socket_access = socket.access;
    options.args = mcpd::arguments_to_keep(std::vector<std::string>(argv + 1, argv + argc));
    options.binary = mcpd::running_binary();
    mcpd::Daemon daemon(std::move(options), std::move(*loaded.registry));
    return daemon.run(std::move(restored));
}
