// mcpctl upgrade [--binary PATH] [--wait] [--timeout DURATION]: replace mcpd in place
// (docs/UPGRADE.md).
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <thread>

#include "common/check.h"
#include "common/clock.h"
#include "common/control_protocol.h"
#include "ctl/command.h"
#include "ctl/daemon_client.h"
#include "ctl/output.h"

namespace mcpctl {

namespace {

using mcpd::control::kDefaultWait;

constexpr OptionSpec kOptions[] = {
    {'b', "binary", "PATH", "the new mcpd (default: the file mcpd was started from)"},
    {'w', "wait", "", "return once the new mcpd has taken over"},
    {'t', "timeout", "DURATION", "give up waiting after DURATION (30s, 2m; default 60s)"},
};

// The binary as mcpd will need it: absolute (a relative path is the caller's, not mcpd's).
std::string absolute(const std::string& path) {
    if (path.empty() || path.front() == '/') return path;
    char* real = ::realpath(path.c_str(), nullptr);
    if (real == nullptr) {  // it does not exist (mcpd will say so): relative to here anyway
        char* here = ::getcwd(nullptr, 0);
        const std::string out = here != nullptr ? std::string(here) + "/" + path : path;
        std::free(here);
        return out;
    }
    std::string out(real);
    std::free(real);
    return out;
}

mcpd::Result<nlohmann::json> build(const CommandLine& line) {
    const mcpd::Result<WaitOption> wait = parse_wait(line, kDefaultWait);
    if (!wait) return wait.failure();
    return mcpd::control::to_json(mcpd::control::UpgradeRequest{absolute(line.value("binary"))});
}

// mcpd's count of upgrades in place, when it answers a status request now.
std::optional<std::uint64_t> upgrades_now(const Context& ctx) {
    DaemonClient client(ctx.endpoint);
    mcpd::control::Reply reply;
    if (!client.connect() ||
        !client.call(mcpd::control::request(mcpd::control::Command::status), reply,
                     std::chrono::seconds(5)) ||
        !reply.ok)
        return std::nullopt;
    const nlohmann::json* daemon = reply.result.contains("daemon") ? &reply.result["daemon"] : nullptr;
    if (daemon == nullptr || !daemon->contains("upgrades") || !(*daemon)["upgrades"].is_number_unsigned())
        return std::nullopt;
    return (*daemon)["upgrades"].get<std::uint64_t>();
}

// Wait for the exec (mcpd closes every connection but the state's), then for the new process
// to answer with the count of upgrades the reply promised.
bool wait_for_new_mcpd(const Context& ctx, DaemonClient& client, std::uint64_t upgrades,
                       mcpd::Duration timeout) {
    const auto deadline = mcpd::Clock::now() + timeout;
    client.wait_closed(timeout);  // a timeout here is the one reported below
    while (mcpd::Clock::now() < deadline) {
        if (const auto now = upgrades_now(ctx); now && *now >= upgrades) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ctx.output.client_error(ClientError{kExitError, "timeout",
                                        "the new mcpd did not answer within " +
                                            mcpd::format_duration(timeout) +
                                            " (see 'mcpctl status' and mcpd's log)"});
    return false;
}

int exec(const Context& ctx) {
    const mcpd::Result<WaitOption> wait = parse_wait(ctx.line(), kDefaultWait);
    MCPD_CHECK(wait.ok(), "build() let a bad --wait or --timeout through");

    DaemonClient client(ctx.endpoint);
    nlohmann::json result;
    int exit_code = kExitOk;
    // The new binary gets StateCheck::kTimeout to read the state; the reply comes after it.
    if (!call_daemon(ctx, client, ctx.request(), kReplyTimeout, result, exit_code))
        return exit_code;
    const std::string binary = result.value("binary", std::string());
    const std::uint64_t upgrades =
        result.contains("upgrades") && result["upgrades"].is_number_unsigned()
            ? result["upgrades"].get<std::uint64_t>()
            : 0;
    if (wait->wait && !wait_for_new_mcpd(ctx, client, upgrades, wait->timeout)) return kExitError;
    if (ctx.output.json()) {
        ctx.output.print_json(result);
    } else {
        ctx.output.print_text((wait->wait ? "mcpd upgraded in place to " : "mcpd is upgrading in place to ") +
                              binary + " (state " +
                              std::to_string(result.value("state_bytes", std::size_t{0})) +
                              " bytes)\n");
    }
    return kExitOk;
}

}  // namespace

extern const Command cmd_upgrade{
    .name = "upgrade",
    .usage = "upgrade [-b|--binary PATH] [-w|--wait] [-t|--timeout DURATION]",
    .summary = "replace mcpd in place with a new binary, keeping its state",
    .help =
        "Ask mcpd to replace itself with a new binary under the same process (by default\n"
        "the file it was started from, where a package upgrade puts the new one). mcpd\n"
        "first has the new binary read its state (mcpd --check-state); if it cannot, or if\n"
        "something mcpd cannot carry yet is present (an HTTP session, a server\n"
        "busy starting, stopping or answering, another mcpctl's --wait), mcpd refuses,\n"
        "says why, and carries on. Otherwise it execs the new binary, which takes over the\n"
        "control socket, every server's state, the running servers' processes (not\n"
        "restarted), the sessions on the socket or through mcpctl connect and the logs -f\n"
        "(which go on). With --wait, return once the new mcpd answers, or fail after\n"
        "--timeout (default 60s). Only root and mcpd's own user may ask. See\n"
        "docs/UPGRADE.md.\n",
    .options = kOptions,
    .min_args = 0,
    .max_args = 0,
    .build = build,
    .render = nullptr,
    .exec = exec,
};

}  // namespace mcpctl
