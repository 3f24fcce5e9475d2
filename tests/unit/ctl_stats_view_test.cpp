// The text of a stats result (docs/STATS.md): mcpctl stats' tables and mcpctl top's screen.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "ctl/command.h"
#include "ctl/command_line.h"
#include "ctl/stats_view.h"
#include "render_command.h"

using mcpctl::SortKey;
using nlohmann::json;

namespace {

// COUNTERS with these outcomes and latency percentiles.
json counters(int replies, int errors, int tool_errors, int cancelled, json p50, json p99) {
    const int requests = replies + errors + tool_errors + cancelled;
    return {{"requests", requests},
            {"replies", replies},
            {"errors", errors},
            {"tool_errors", tool_errors},
            {"cancelled", cancelled},
            {"timeouts", 0},
            {"child_died", 0},
            {"in_flight", 0},
            {"bytes_in", 1830},
            {"bytes_out", 2210},
            {"latency", {{"count", requests}, {"p50_us", p50}, {"p99_us", p99}}}};
}

// A result as the contract shows it: one busy server with tools and a session, one stopped.
json sample_result() {
    json demo = {{"name", "demo"},
                 {"state", "running"},
                 {"children", 1},
                 {"sessions", 2},
                 {"sessions_total", 5},
                 {"restarts", 1},
                 {"restart_reasons", {{"exit 1", 1}}},
                 {"cpu_ms", 420},
                 {"cpu_percent", 1.5},
                 {"rss_bytes", 9437184},
                 {"pss_bytes", 6291456},
                 {"calls_per_s_10s", 3.2},
                 {"calls_per_s", 0.5},
                 {"totals", counters(7, 1, 1, 1, 250, 500000)}};
    json echo = counters(7, 0, 1, 0, 250, 2500);
    echo["method"] = "tools/call";
    echo["tool"] = "echo";
    json read = counters(0, 1, 0, 1, 100000, 500000);
    read["method"] = "resources/read";
    read["tool"] = nullptr;
    read["bytes_in"] = 330;
    read["bytes_out"] = 210;
    demo["tools"] = {echo, read};
    json session = counters(7, 1, 1, 1, 250, 500000);
    session.update({{"id", 7},
                    {"client", {{"name", "claude-code"}, {"version", "2.0.1"}}},
                    {"pid", 4242},
                    {"uid", 1000}});
    demo["sessions_detail"] = {session};

    json idle = {{"name", "idle"},
                 {"state", "stopped"},
                 {"sessions", 0},
                 {"restarts", 0},
                 {"cpu_ms", nullptr},
                 {"cpu_percent", nullptr},
                 {"rss_bytes", nullptr},
                 {"pss_bytes", nullptr},
                 {"calls_per_s_10s", 0},
                 {"calls_per_s", 0},
                 {"totals", counters(0, 0, 0, 0, 0, 0)},
                 {"tools", json::array()},
                 {"sessions_detail", json::array()}};
    return {{"uptime_ms", 73000}, {"servers", {demo, idle}}};
}

// A server with only the figures the sort keys read.
json ranked(const std::string& name, json rate, json errors, json p99, json cpu, json rss) {
    json server = {{"name", name},       {"state", "running"}, {"calls_per_s_10s", rate},
                   {"cpu_percent", cpu}, {"rss_bytes", rss},   {"totals", json::object()}};
    if (errors.is_number())
        server["totals"] = counters(10 - errors.get<int>(), errors.get<int>(), 0, 0, 100, p99);
    return server;
}

std::vector<std::string> names(const std::vector<const json*>& servers) {
    std::vector<std::string> out;
    for (const json* server : servers) out.push_back(server->at("name"));
    return out;
}

std::size_t widest(const std::vector<std::string>& lines) {
    std::size_t width = 0;
    for (const auto& line : lines) width = std::max(width, mcpctl::display_width(line));
    return width;
}

// The same result without the tools and sessions breakdowns, and no restarts.
json servers_only(json result) {
    for (json& server : result["servers"]) {
        server.erase("tools");
        server.erase("sessions_detail");
        server["restarts"] = 0;
    }
    return result;
}

}  // namespace

TEST_CASE("stats renders the servers, restarts, tools and sessions tables", "[stats]") {
    CHECK(render("stats", sample_result()) ==
          "SERVER  STATE    CALL/S  AVG/S  ERR%    P50    P99  IN-FL  SESS  CPU%     RSS\n"
          "demo    running     3.2    0.5   20%  250us  500ms      0     2   1.5  9.0MiB\n"
          "idle    stopped     0.0    0.0     -      -      -      0     0     -       -\n"
          "\n"
          "demo: 1 restart (exit 1: 1)\n"
          "\n"
          "SERVER  TOOL/METHOD     CALLS  ERR%    P50    P99  IN-FL      IN     OUT\n"
          "demo    echo                8   12%  250us  2.5ms      0  1.8KiB  2.2KiB\n"
          "demo    resources/read      2   50%  100ms  500ms      0    330B    210B\n"
          "\n"
          "SERVER  ID  CLIENT              PID   UID  CALLS  ERR%    P99  IN-FL\n"
          "demo     7  claude-code 2.0.1  4242  1000     10   20%  500ms      0\n");
}

TEST_CASE("stats --children: a row per process, its kind, pid, project and counts", "[stats]") {
    json result = servers_only(sample_result());
    result["servers"][0]["per_child"] = {
        {{"kind", "project"}, {"pid", 4310}, {"project", "/home/ann/web"}, {"sessions", 2},
         {"rss_bytes", 9437184}, {"totals", counters(4, 1, 0, 0, 250, 500000)}},
        {{"kind", "project"}, {"pid", 4377}, {"project", "/home/ann/api\x1b[2J"}, {"sessions", 0},
         {"rss_bytes", nullptr}, {"totals", counters(0, 0, 0, 0, nullptr, nullptr)}}};
    result["servers"][1]["per_child"] = json::array();
    CHECK(mcpctl::stats_text(result) ==
          "SERVER  STATE    CALL/S  AVG/S  ERR%    P50    P99  IN-FL  SESS  CPU%     RSS\n"
          "demo    running     3.2    0.5   20%  250us  500ms      0     2   1.5  9.0MiB\n"
          "idle    stopped     0.0    0.0     -      -      -      0     0     -       -\n"
          "\n"
          "SERVER  KIND      PID  PROJECT                 SESS  CALLS  ERR%    P99  IN-FL     RSS\n"
          "demo    project  4310  /home/ann/web              2      5   20%  500ms      0  9.0MiB\n"
          "demo    project  4377  /home/ann/api\\u001b[2J     0      0     -      -      0       -\n");
    result["servers"].erase(0);
    CHECK(mcpctl::children_table(result) == std::vector<std::string>{"no server processes"});
}

TEST_CASE("stats without tools or sessions in the result shows the servers only", "[stats]") {
    json result = servers_only(sample_result());
    CHECK(mcpctl::stats_text(result) ==
          "SERVER  STATE    CALL/S  AVG/S  ERR%    P50    P99  IN-FL  SESS  CPU%     RSS\n"
          "demo    running     3.2    0.5   20%  250us  500ms      0     2   1.5  9.0MiB\n"
          "idle    stopped     0.0    0.0     -      -      -      0     0     -       -\n");
    CHECK(mcpctl::stats_text({{"servers", json::array()}}) == "no servers to show\n");
}

TEST_CASE("stats says so when the tools and sessions asked for are empty", "[stats]") {
    json result = sample_result();
    result["servers"].erase(0);
    CHECK(mcpctl::tools_table(result) == std::vector<std::string>{"no calls counted yet"});
    CHECK(mcpctl::sessions_table(result) == std::vector<std::string>{"no sessions"});
}

TEST_CASE("missing and null figures print as '-'", "[stats]") {
    const json result = {{"servers", {{{"name", "bare"}, {"state", nullptr}}}}};
    CHECK(mcpctl::servers_table(result) ==
          std::vector<std::string>{
              "SERVER  STATE  CALL/S  AVG/S  ERR%  P50  P99  IN-FL  SESS  CPU%  RSS",
              "bare    -           -      -     -    -    -      -     -     -    -"});
    const json session = {{"id", 3}, {"client", nullptr}};
    const json with_session = {{"servers", {{{"name", "bare"}, {"sessions_detail", {session}}}}}};
    CHECK(mcpctl::sessions_table(with_session)[1] ==
          "bare     3  -         -    -      -     -    -      -");
}

TEST_CASE(
    "the error share counts errors, tool errors, timeouts and dead children among the "
    "settled requests",
    "[stats]") {
    // 2 replies, 1 error, 1 tool error, 2 cancelled, 1 timeout, 1 child_died: 4 of 8 failed.
    const json counted = {{"replies", 2},  {"errors", 1},     {"tool_errors", 1}, {"cancelled", 2},
                          {"timeouts", 1}, {"child_died", 1}, {"in_flight", 5},   {"requests", 13}};
    REQUIRE(mcpctl::error_ratio(counted).has_value());
    CHECK(*mcpctl::error_ratio(counted) == Approx(0.5));
    CHECK(mcpctl::error_percent_text(counted) == "50%");
    // A cancelled request settled, but it did not fail.
    CHECK(mcpctl::error_percent_text({{"replies", 3}, {"cancelled", 1}}) == "0.0%");
    CHECK(mcpctl::error_percent_text({{"replies", 999}, {"errors", 1}}) == "0.1%");
    CHECK(mcpctl::error_percent_text({{"tool_errors", 4}}) == "100%");
    // Nothing settled yet (in flight only), or no counters at all.
    CHECK_FALSE(mcpctl::error_ratio({{"requests", 2}, {"in_flight", 2}}).has_value());
    CHECK(mcpctl::error_percent_text({{"requests", 2}, {"in_flight", 2}}) == "-");
    CHECK(mcpctl::error_percent_text(nullptr) == "-");
}

TEST_CASE("durations are human, from microseconds to minutes", "[stats]") {
    CHECK(mcpctl::duration_us_text(50) == "50us");
    CHECK(mcpctl::duration_us_text(500) == "500us");
    CHECK(mcpctl::duration_us_text(1000) == "1.0ms");
    CHECK(mcpctl::duration_us_text(2500) == "2.5ms");
    CHECK(mcpctl::duration_us_text(10000) == "10ms");
    CHECK(mcpctl::duration_us_text(250000) == "250ms");
    CHECK(mcpctl::duration_us_text(1000000) == "1.0s");
    CHECK(mcpctl::duration_us_text(2500000) == "2.5s");
    CHECK(mcpctl::duration_us_text(30000000) == "30s");
    CHECK(mcpctl::duration_us_text(60000000) == "1m00s");
    CHECK(mcpctl::duration_us_text(120000000) == "2m00s");  // the +Inf bucket: twice the last
    CHECK(mcpctl::duration_us_text(nullptr) == "-");
    CHECK(mcpctl::duration_us_text("3ms") == "-");
}

TEST_CASE("sizes are human, in powers of 1024", "[stats]") {
    CHECK(mcpctl::bytes_text(0) == "0B");
    CHECK(mcpctl::bytes_text(1023) == "1023B");
    CHECK(mcpctl::bytes_text(1024) == "1.0KiB");
    CHECK(mcpctl::bytes_text(1536) == "1.5KiB");
    CHECK(mcpctl::bytes_text(9437184) == "9.0MiB");
    CHECK(mcpctl::bytes_text(125829120) == "120MiB");
    CHECK(mcpctl::bytes_text(5368709120.0) == "5.0GiB");
    CHECK(mcpctl::bytes_text(nullptr) == "-");
    CHECK(mcpctl::rate_text(3.25) == "3.2");
    CHECK(mcpctl::rate_text(340.4) == "340");
    CHECK(mcpctl::cpu_text(1.5) == "1.5");
    CHECK(mcpctl::cpu_text(nullptr) == "-");
}

TEST_CASE("servers sort by each key, largest first, missing figures last, ties by name",
          "[stats]") {
    const json result = {
        {"servers",
         {ranked("c", 1.0, 0, 1000, 3.0, 100), ranked("a", 5.0, 3, 250, nullptr, nullptr),
          ranked("b", 1.0, 1, 500000, 10.0, 300),
          ranked("d", nullptr, nullptr, nullptr, 0.5, 200)}}};
    using Names = std::vector<std::string>;
    CHECK(names(mcpctl::sorted_servers(result, SortKey::name)) == Names{"a", "b", "c", "d"});
    CHECK(names(mcpctl::sorted_servers(result, SortKey::calls)) == Names{"a", "b", "c", "d"});
    CHECK(names(mcpctl::sorted_servers(result, SortKey::errors)) == Names{"a", "b", "c", "d"});
    CHECK(names(mcpctl::sorted_servers(result, SortKey::p99)) == Names{"b", "c", "a", "d"});
    CHECK(names(mcpctl::sorted_servers(result, SortKey::cpu)) == Names{"b", "c", "d", "a"});
    CHECK(names(mcpctl::sorted_servers(result, SortKey::rss)) == Names{"b", "d", "c", "a"});
}

TEST_CASE("tools sort by calls, errors and p99, and by server and name", "[stats]") {
    json result = sample_result();
    json other = counters(1, 0, 0, 0, 50, 50);
    other["method"] = "tools/call";
    other["tool"] = "add";
    result["servers"][1]["tools"] = {other};
    const auto labels = [&](SortKey key) {
        std::vector<std::string> out;
        for (const auto& row : mcpctl::tool_rows(result, key))
            out.push_back(row.server->at("name").get<std::string>() + " " +
                          row.tool->at(row.tool->at("tool").is_string() ? "tool" : "method")
                              .get<std::string>());
        return out;
    };
    using Labels = std::vector<std::string>;
    CHECK(labels(SortKey::name) == Labels{"demo echo", "demo resources/read", "idle add"});
    CHECK(labels(SortKey::calls) == Labels{"demo echo", "demo resources/read", "idle add"});
    CHECK(labels(SortKey::errors) == Labels{"demo resources/read", "demo echo", "idle add"});
    CHECK(labels(SortKey::p99) == Labels{"demo resources/read", "demo echo", "idle add"});
    CHECK(labels(SortKey::rss) == labels(SortKey::calls));
}

TEST_CASE("the sort key cycles both ways and is named", "[stats]") {
    CHECK(mcpctl::next_sort_key(SortKey::name) == SortKey::calls);
    CHECK(mcpctl::next_sort_key(SortKey::rss) == SortKey::name);
    CHECK(mcpctl::next_sort_key(SortKey::name, -1) == SortKey::rss);
    SortKey key = SortKey::calls;
    for (int i = 0; i < 6; ++i) key = mcpctl::next_sort_key(key);
    CHECK(key == SortKey::calls);
    for (const SortKey each : mcpctl::kSortKeys)
        CHECK(mcpctl::sort_key_named(mcpctl::to_string(each)) == each);
    CHECK_FALSE(mcpctl::sort_key_named("memory").has_value());
}

TEST_CASE("top's screen: a summary, the keys, the table sorted with its column marked", "[stats]") {
    const std::vector<std::string> screen =
        mcpctl::top_screen(sample_result(), {SortKey::p99, false, 80, 24});
    CHECK(screen ==
          std::vector<std::string>{
              "mcpd up 1m13s, 2 servers, 2 sessions, 3.2 calls/s    sort: p99",
              "q quit  s or > next sort  < previous sort  t show tools  space refresh", "",
              "SERVER  STATE    CALL/S  AVG/S  ERR%    P50   P99*  IN-FL  SESS  CPU%     RSS",
              "demo    running     3.2    0.5   20%  250us  500ms      0     2   1.5  9.0MiB",
              "idle    stopped     0.0    0.0     -      -      -      0     0     -       -"});
    const std::vector<std::string> by_name =
        mcpctl::top_screen(sample_result(), {SortKey::name, true, 80, 24});
    CHECK(by_name[3].starts_with("SERVER*  STATE"));
    CHECK(by_name[7].starts_with("SERVER  TOOL/METHOD*"));
    CHECK(by_name.size() == 10);
}

TEST_CASE("top's screen fits the terminal: no line wider, no more lines than it has", "[stats]") {
    json result = sample_result();
    result["servers"][0]["name"] = "a-server-with-a-name-much-longer-than-the-others";
    for (int i = 0; i < 30; ++i) {
        json tool = counters(i, 1, 0, 0, 250, 2500);
        tool["method"] = "tools/call";
        tool["tool"] = "tool_with_a_rather_long_name_" + std::to_string(i);
        result["servers"][0]["tools"].push_back(tool);
    }
    for (const std::size_t width : {80, 60, 20}) {
        const auto screen = mcpctl::top_screen(result, {SortKey::calls, true, width, 24});
        INFO("width " << width);
        CHECK(widest(screen) <= width);
        CHECK(screen.size() == 24);
        CHECK(screen.back().starts_with("("));
        CHECK(screen.back().find("more lines") != std::string::npos);
    }
    // At 80 columns the name gives way, and the other columns stay whole.
    const auto screen = mcpctl::top_screen(result, {SortKey::calls, false, 80, 24});
    CHECK(widest(screen) <= 80);
    CHECK(screen[4].find("~  running") != std::string::npos);
    CHECK(screen[4].ends_with("9.0MiB"));
    CHECK(mcpctl::top_screen(result, {SortKey::calls, true, 80, 0}).empty());
}

TEST_CASE("a line is cut at a character, not inside one", "[stats]") {
    CHECK(mcpctl::display_width("h\xc3\xa9llo") == 5);
    CHECK(mcpctl::cut_to_width("h\xc3\xa9llo", 2) == "h\xc3\xa9");
    CHECK(mcpctl::cut_to_width("h\xc3\xa9llo", 1) == "h");
    CHECK(mcpctl::cut_to_width("abc", 10) == "abc");
}

TEST_CASE("a hostile client's name cannot drive the terminal", "[stats]") {
    json result = sample_result();
    json& session = result["servers"][0]["sessions_detail"][0];
    session["client"] = {{"name", "\x1b]0;owned\x07\x1b[2Jagent"}, {"version", "1\r\n2\xc2\x9b"}};
    result["servers"][0]["tools"][0]["tool"] = "\x1b[31mred";
    result["servers"][0]["restart_reasons"] = {{"exit\x1b[1m", 1}};
    const std::string text = mcpctl::stats_text(result);
    CHECK(text.find('\x1b') == std::string::npos);
    CHECK(text.find('\x07') == std::string::npos);
    CHECK(text.find('\r') == std::string::npos);
    CHECK(text.find("\xc2\x9b") == std::string::npos);
    CHECK(text.find("\\u001b]0;owned\\u0007\\u001b[2Jagent 1\\u000d\\u000a2\\u009b") !=
          std::string::npos);
    CHECK(text.find("\\u001b[31mred") != std::string::npos);
    for (const auto& line : mcpctl::top_screen(result, {SortKey::calls, true, 80, 24}))
        CHECK(line.find('\x1b') == std::string::npos);
}

TEST_CASE("stats and top build the stats request, top checks its options", "[stats]") {
    mcpctl::Invocation invocation;
    mcpctl::UsageError error;
    REQUIRE(
        mcpctl::parse_invocation({"stats", "a", "b", "--tools", "--sessions", "--children"},
                                 invocation, error));
    CHECK(invocation.request == json{{"protocol", 1},
                                     {"command", "stats"},
                                     {"servers", {"a", "b"}},
                                     {"tools", true},
                                     {"sessions", true},
                                     {"children", true}});
    REQUIRE(mcpctl::parse_invocation({"top", "--sort", "p99", "--interval", "0.5", "--tools"},
                                     invocation, error));
    CHECK(invocation.request["tools"] == true);
    CHECK(invocation.request["command"] == "stats");
    for (const auto& bad : std::vector<std::vector<std::string>>{{"top", "--sort", "size"},
                                                                 {"top", "--interval", "0"},
                                                                 {"top", "--interval", "x"},
                                                                 {"top", "--iterations", "0"},
                                                                 {"top", "--iterations", "2x"}}) {
        INFO(bad[1] << " " << bad[2]);
        CHECK_FALSE(mcpctl::parse_invocation(bad, invocation, error));
        CHECK(error.message.find(bad[1]) == 0);
    }
}

TEST_CASE("stats and top say each server's peak memory and OOM kills where mcpd knows them",
          "[stats]") {
    json result = sample_result();
    result["servers"][0]["peak_rss_bytes"] = 12582912;
    result["servers"][0]["oom_kills"] = 2;
    result["servers"][1]["peak_rss_bytes"] = nullptr;
    result["servers"][1]["oom_kills"] = nullptr;
    const std::vector<std::string> lines = mcpctl::memory_lines(result);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].starts_with("demo: peak memory 12"));
    CHECK(lines[0].ends_with(", 2 OOM kills"));
    CHECK(mcpctl::stats_text(result).find("\n\n" + lines[0] + "\n") != std::string::npos);
    const std::vector<std::string> screen =
        mcpctl::top_screen(result, {SortKey::p99, false, 80, 24});
    CHECK(std::find(screen.begin(), screen.end(), lines[0]) != screen.end());
    result["servers"][0]["oom_kills"] = 0;
    CHECK(mcpctl::memory_lines(result) == std::vector<std::string>{lines[0].substr(0, lines[0].find(','))});
}
