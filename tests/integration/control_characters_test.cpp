// Escape sequences and control characters a server writes on its stderr, or a client puts in
// its clientInfo, reach neither the terminal of `mcpctl logs/sessions/status` nor the daemon
// log raw: they are printed as \u00XX (and --json keeps the exact strings).
#include <catch2/catch.hpp>

#include "harness.h"
#include "mcp_session.h"

using namespace integration;
using nlohmann::json;

namespace {

// A byte a terminal acts on: a C0 control but the line end, DEL, or a C1 control in UTF-8.
std::optional<std::size_t> raw_control_at(const std::string& text) {
    for (std::size_t i = 0; i < text.size(); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if ((c < 0x20 && c != '\n') || c == 0x7f) return i;
        if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) < 0xa0)
            return i;
    }
    return std::nullopt;
}

#define CHECK_NO_RAW_CONTROLS(text)                                                 \
    do {                                                                            \
        const std::string checked_text = (text);                                    \
        const auto at = raw_control_at(checked_text);                               \
        INFO("raw control byte at " << (at ? *at : 0) << " of:\n" << checked_text); \
        CHECK_FALSE(at.has_value());                                                \
    } while (false)

// What the server writes (TOML escapes: ESC, BEL, CR, DEL, the C1 CSI) and how it must look.
constexpr const char* kBannerArgs =
    R"(args = ["--stderr-banner=red \u001b[31mALERT\u001b]0;title\u0007)"
    R"( cr\r del\u007f csi\u009b2J end"])";
constexpr const char* kBannerRaw = "red \x1b[31mALERT\x1b]0;title\x07 cr\r del\x7f csi\u009b2J end";
constexpr const char* kBannerShown =
    R"(red \u001b[31mALERT\u001b]0;title\u0007 cr\u000d del\u007f csi\u009b2J end)";

// The demo server "noisy", writing that banner on its stderr when it starts.
std::string noisy_toml() {
    std::string text = server_toml("noisy");
    const std::string empty = "args = []";
    text.replace(text.find(empty), empty.size(), kBannerArgs);
    return text;
}

// The server "broken", whose command (not found, so it fails) holds an ESC.
std::string broken_toml() {
    std::string text = server_toml("broken", {}, {}, "no-such-@ESC@command");
    const std::string placeholder = "@ESC@";
    text.replace(text.find(placeholder), placeholder.size(), "\\u001b[5m");
    return text;
}

}  // namespace

TEST_CASE("control characters from servers and clients are shown escaped", "[logs][sessions]") {
    TestEnv env("control-chars");
    env.write_registry(noisy_toml() + broken_toml());
    env.start_daemon();
    env.wait_state("noisy", "running");
    env.wait_state("broken", "failed");

    McpSession client(env.socket(), "noisy");
    const json id = client.request(
        "initialize",
        {{"protocolVersion", "2025-06-18"},
         {"capabilities", json::object()},
         {"clientInfo",
          {{"name", "evil\x1b[2J\x07name\nforged row"}, {"version", "9\x1b[5m\x7f"}}}});
    REQUIRE(client.wait_response(id).json.contains("result"));
    client.notify("notifications/initialized");

    RunResult logs;
    wait_until("the banner is in the logs", 10s, [&] {
        logs = env.ctl({"logs", "noisy"});
        return logs.exit_code == 0 && logs.out.find("ALERT") != std::string::npos;
    });
    CHECK_NO_RAW_CONTROLS(logs.out);
    CHECK(logs.out.find(std::string(kBannerShown) + "\n") != std::string::npos);

    // --json keeps the exact string, with nothing raw in the text.
    const RunResult logs_json = env.ctl({"--json", "logs", "noisy"});
    REQUIRE(logs_json.exit_code == 0);
    CHECK_NO_RAW_CONTROLS(logs_json.out);
    CHECK(json::parse(logs_json.out)["lines"][0] == kBannerRaw);

    const RunResult sessions = env.ctl({"sessions"});
    REQUIRE(sessions.exit_code == 0);
    CHECK_NO_RAW_CONTROLS(sessions.out);
    CHECK(sessions.out.find(R"(evil\u001b[2J\u0007name\u000aforged row 9\u001b[5m\u007f)") !=
          std::string::npos);
    const RunResult sessions_json = env.ctl({"--json", "sessions"});
    REQUIRE(sessions_json.exit_code == 0);
    CHECK_NO_RAW_CONTROLS(sessions_json.out);
    CHECK(json::parse(sessions_json.out)["sessions"][0]["client"]["version"] == "9\x1b[5m\x7f");

    // The failed server's error quotes its command.
    const RunResult status = env.ctl({"status"});
    REQUIRE(status.exit_code == 0);
    CHECK_NO_RAW_CONTROLS(status.out);
    CHECK(status.out.find(R"(no-such-\u001b[5mcommand)") != std::string::npos);
    CHECK_NO_RAW_CONTROLS(env.ctl({"--json", "status"}).out);

    // The daemon log: the server's stderr line, tagged and escaped, on one line.
    const std::string log = env.daemon_log();
    CHECK_NO_RAW_CONTROLS(log);
    CHECK(log.find(std::string("[noisy] ") + kBannerShown + "\n") != std::string::npos);
    CHECK(log.find(R"(no-such-\u001b[5mcommand)") != std::string::npos);
}

TEST_CASE("logs -f shows new escape sequences escaped", "[logs]") {
    TestEnv env("control-chars-follow");
    env.write_registry(noisy_toml());
    env.start_daemon();
    env.wait_state("noisy", "running");
    wait_until("the banner is in the logs", 10s, [&] {
        return env.ctl({"logs", "noisy"}).out.find("ALERT") != std::string::npos;
    });

    BackgroundProcess follower({bin("mcpctl"), "--socket", env.socket(), "logs", "-f", "noisy"});
    REQUIRE(follower.wait_for_output("ALERT", 10s));
    REQUIRE(env.ctl({"restart", "noisy"}).exit_code == 0);  // writes the banner again
    const bool again = follower.wait_for_output(kBannerShown, 10s, 2);
    INFO("follower output:\n" << follower.output());
    CHECK(again);
    CHECK_NO_RAW_CONTROLS(follower.output());
    CHECK(follower.stop(SIGINT) == 0);
}
