// The Prometheus text of a stats result: exact text, cumulative buckets in seconds, label
// escaping, and figures left out rather than written as nonsense.
#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/metrics_text.h"

using mcpd::decimal_text;
using mcpd::escape_label_value;
using mcpd::metrics_text;
using nlohmann::json;

namespace {

// COUNTERS with the given latency buckets and everything else zero.
json counters(const json& buckets, std::uint64_t count = 0, std::uint64_t sum_us = 0) {
    return {{"requests", 0},  {"replies", 0},   {"errors", 0},    {"tool_errors", 0},
            {"cancelled", 0}, {"timeouts", 0},  {"child_died", 0}, {"in_flight", 0},
            {"bytes_in", 0},  {"bytes_out", 0},
            {"latency", {{"count", count}, {"sum_us", sum_us}, {"buckets", buckets}}}};
}

json tool_row(const std::string& method, const json& tool, json figures) {
    figures["method"] = method;
    figures["tool"] = tool;
    return figures;
}

// A JSON array of these (a braced list of one json would be that json itself).
json rows(std::initializer_list<json> items) {
    json array = json::array();
    for (const json& item : items) array.push_back(item);
    return array;
}

json with_servers(std::initializer_list<json> servers) {
    return {{"servers", rows(servers)}};
}

json server(const std::string& name, const json& tools) {
    return {{"name", name},         {"state", "running"},  {"children", 1},
            {"sessions", 2},        {"sessions_total", 5}, {"restarts", 1},
            {"cpu_ms", 420},        {"cpu_percent", 1.5},  {"rss_bytes", 9437184},
            {"pss_bytes", 6291456}, {"tools", tools}};
}

// The lines of `text` that start with `prefix`, joined.
std::string lines_starting(const std::string& text, const std::string& prefix) {
    std::string out;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        const std::string line = text.substr(start, end - start);
        if (line.starts_with(prefix)) out += line + '\n';
        start = end + 1;
    }
    return out;
}

}  // namespace

TEST_CASE("a small stats result gives exactly this text", "[metrics]") {
    json echo = counters({{1000, 2}, {2500000, 1}, {nullptr, 0}}, 3, 2150);
    echo["requests"] = 4;
    echo["replies"] = 2;
    echo["errors"] = 1;
    echo["in_flight"] = 1;
    echo["bytes_in"] = 300;
    echo["bytes_out"] = 500;
    json stats = with_servers({server("demo", rows({tool_row("tools/call", "echo", echo)}))});
    stats["uptime_ms"] = 1000;
    const std::string l = "{server=\"demo\",method=\"tools/call\",tool=\"echo\"";
    CHECK(metrics_text(stats) ==
          "# HELP mcpd_up Whether mcpd answered: always 1.\n"
          "# TYPE mcpd_up gauge\n"
          "mcpd_up 1\n"
          "# HELP mcpd_server_up Whether the server is running (1) or not (0).\n"
          "# TYPE mcpd_server_up gauge\n"
          "mcpd_server_up{server=\"demo\"} 1\n"
          "# HELP mcpd_server_sessions MCP sessions attached to the server now.\n"
          "# TYPE mcpd_server_sessions gauge\n"
          "mcpd_server_sessions{server=\"demo\"} 2\n"
          "# HELP mcpd_server_sessions_opened_total MCP sessions the server has had since mcpd started "
          "or it was added.\n"
          "# TYPE mcpd_server_sessions_opened_total counter\n"
          "mcpd_server_sessions_opened_total{server=\"demo\"} 5\n"
          "# HELP mcpd_server_restarts_total Automatic restarts of the server.\n"
          "# TYPE mcpd_server_restarts_total counter\n"
          "mcpd_server_restarts_total{server=\"demo\"} 1\n"
          "# HELP mcpd_server_cpu_seconds_total CPU time of the server's processes, in seconds.\n"
          "# TYPE mcpd_server_cpu_seconds_total counter\n"
          "mcpd_server_cpu_seconds_total{server=\"demo\"} 0.42\n"
          "# HELP mcpd_server_resident_bytes Resident memory (RSS) of the server's processes, in "
          "bytes.\n"
          "# TYPE mcpd_server_resident_bytes gauge\n"
          "mcpd_server_resident_bytes{server=\"demo\"} 9437184\n"
          "# HELP mcpd_server_proportional_bytes Proportional set size (PSS) of the server's "
          "processes, in bytes.\n"
          "# TYPE mcpd_server_proportional_bytes gauge\n"
          "mcpd_server_proportional_bytes{server=\"demo\"} 6291456\n"
          "# HELP mcpd_requests_total Requests forwarded to the server and settled, by outcome.\n"
          "# TYPE mcpd_requests_total counter\n"
          "mcpd_requests_total" + l + ",outcome=\"reply\"} 2\n"
          "mcpd_requests_total" + l + ",outcome=\"error\"} 1\n"
          "mcpd_requests_total" + l + ",outcome=\"tool_error\"} 0\n"
          "mcpd_requests_total" + l + ",outcome=\"cancelled\"} 0\n"
          "mcpd_requests_total" + l + ",outcome=\"timeout\"} 0\n"
          "mcpd_requests_total" + l + ",outcome=\"child_died\"} 0\n"
          "# HELP mcpd_requests_in_flight Requests forwarded to the server and not settled yet.\n"
          "# TYPE mcpd_requests_in_flight gauge\n"
          "mcpd_requests_in_flight" + l + "} 1\n"
          "# HELP mcpd_request_bytes_total Bytes of requests to the server (in) and of their "
          "answers (out).\n"
          "# TYPE mcpd_request_bytes_total counter\n"
          "mcpd_request_bytes_total" + l + ",direction=\"in\"} 300\n"
          "mcpd_request_bytes_total" + l + ",direction=\"out\"} 500\n"
          "# HELP mcpd_request_duration_seconds Time from forwarding a request to its answer, in "
          "seconds.\n"
          "# TYPE mcpd_request_duration_seconds histogram\n"
          "mcpd_request_duration_seconds_bucket" + l + ",le=\"0.001\"} 2\n"
          "mcpd_request_duration_seconds_bucket" + l + ",le=\"2.5\"} 3\n"
          "mcpd_request_duration_seconds_bucket" + l + ",le=\"+Inf\"} 3\n"
          "mcpd_request_duration_seconds_sum" + l + "} 0.00215\n"
          "mcpd_request_duration_seconds_count" + l + "} 3\n");
}

TEST_CASE("histogram buckets are cumulative, in seconds, ending in +Inf", "[metrics]") {
    // The bounds mcpd uses, each bucket holding one request more than the one before.
    const std::uint64_t bounds[] = {50,       100,      250,      500,      1000,    2500,   5000,
                                    10000,    25000,    50000,    100000,   250000,  500000, 1000000,
                                    2500000,  5000000,  10000000, 30000000, 60000000};
    json buckets = json::array();
    std::uint64_t count = 0;
    for (std::size_t i = 0; i < std::size(bounds); ++i) {
        buckets.push_back({bounds[i], i});
        count += i;
    }
    buckets.push_back({nullptr, 7});
    count += 7;
    const json stats = with_servers(
        {server("demo", rows({tool_row("ping", nullptr, counters(buckets, count, 123456789))}))});
    const std::string text = metrics_text(stats);
    const std::string l = "{server=\"demo\",method=\"ping\",tool=\"\"";
    const std::string p = "mcpd_request_duration_seconds_bucket" + l;
    CHECK(lines_starting(text, "mcpd_request_duration_seconds") ==
          p + ",le=\"0.00005\"} 0\n" + p + ",le=\"0.0001\"} 1\n" + p + ",le=\"0.00025\"} 3\n" +
              p + ",le=\"0.0005\"} 6\n" + p + ",le=\"0.001\"} 10\n" + p + ",le=\"0.0025\"} 15\n" +
              p + ",le=\"0.005\"} 21\n" + p + ",le=\"0.01\"} 28\n" + p + ",le=\"0.025\"} 36\n" +
              p + ",le=\"0.05\"} 45\n" + p + ",le=\"0.1\"} 55\n" + p + ",le=\"0.25\"} 66\n" + p +
              ",le=\"0.5\"} 78\n" + p + ",le=\"1\"} 91\n" + p + ",le=\"2.5\"} 105\n" + p +
              ",le=\"5\"} 120\n" + p + ",le=\"10\"} 136\n" + p + ",le=\"30\"} 153\n" + p +
              ",le=\"60\"} 171\n" + p + ",le=\"+Inf\"} 178\n" +
              "mcpd_request_duration_seconds_sum" + l + "} 123.456789\n" +
              "mcpd_request_duration_seconds_count" + l + "} 178\n");
}

TEST_CASE("a histogram with malformed buckets is left out whole", "[metrics]") {
    for (const json& buckets :
         {json{{100, 1}, {50, 1}, {nullptr, 0}}, json{{50, -1}, {nullptr, 0}},
          json{{50, 1}, {nullptr, 0}, {100, 1}}, json{{"50", 1}}, json{50, 1}, json("x")}) {
        INFO(buckets.dump());
        const json stats = with_servers(
            {server("demo", rows({tool_row("ping", nullptr, counters(buckets, 2, 10))}))});
        const std::string text = metrics_text(stats);
        CHECK(text.find("mcpd_request_duration_seconds") == std::string::npos);
        CHECK(text.find("mcpd_requests_in_flight{") != std::string::npos);
    }
}

TEST_CASE("label values escape backslash, double quote and newline", "[metrics]") {
    CHECK(escape_label_value("plain/name_1") == "plain/name_1");
    CHECK(escape_label_value("a\"b\\c\nd") == "a\\\"b\\\\c\\nd");
    CHECK(escape_label_value("caf\xC3\xA9 \xE2\x9C\x93") == "caf\xC3\xA9 \xE2\x9C\x93");
    // Not UTF-8: a lone continuation byte, a cut sequence, an overlong form, a surrogate.
    CHECK(escape_label_value("a\x80" "b") == "a\xEF\xBF\xBD" "b");
    CHECK(escape_label_value("\xC3") == "\xEF\xBF\xBD");
    CHECK(escape_label_value("\xC0\xAF") == "\xEF\xBF\xBD\xEF\xBF\xBD");
    CHECK(escape_label_value("\xED\xA0\x80") == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");

    const std::string tool = "say \"hi\"\\\nnow";
    const json stats =
        with_servers({server("demo", rows({tool_row("tools/call", tool, counters(nullptr))}))});
    CHECK(lines_starting(metrics_text(stats), "mcpd_requests_in_flight{") ==
          "mcpd_requests_in_flight{server=\"demo\",method=\"tools/call\","
          "tool=\"say \\\"hi\\\"\\\\\\nnow\"} 0\n");
}

TEST_CASE("a server without a process has no CPU or memory samples", "[metrics]") {
    json stopped = server("idle", json::array());
    stopped["state"] = "stopped";
    for (const char* key : {"cpu_ms", "cpu_percent", "rss_bytes", "pss_bytes"})
        stopped[key] = nullptr;
    const std::string text = metrics_text(with_servers({server("demo", rows({})), stopped}));
    CHECK(lines_starting(text, "mcpd_server_up") ==
          "mcpd_server_up{server=\"demo\"} 1\nmcpd_server_up{server=\"idle\"} 0\n");
    CHECK(lines_starting(text, "mcpd_server_cpu_seconds_total{") ==
          "mcpd_server_cpu_seconds_total{server=\"demo\"} 0.42\n");
    CHECK(lines_starting(text, "mcpd_server_resident_bytes{") ==
          "mcpd_server_resident_bytes{server=\"demo\"} 9437184\n");
    CHECK(lines_starting(text, "mcpd_server_proportional_bytes{") ==
          "mcpd_server_proportional_bytes{server=\"demo\"} 6291456\n");
    CHECK(text.find("NaN") == std::string::npos);
    CHECK(text.find("null") == std::string::npos);

    // With no server having a process, the families go altogether, HELP and TYPE too.
    const std::string alone = metrics_text(with_servers({stopped}));
    CHECK(alone.find("cpu_seconds") == std::string::npos);
    CHECK(alone.find("resident_bytes") == std::string::npos);
    // No tools rows: no per-name families.
    CHECK(alone.find("mcpd_requests_total") == std::string::npos);
}

TEST_CASE("every family is written once, its samples together", "[metrics]") {
    const json both = rows({tool_row("tools/call", "a", counters({{50, 1}, {nullptr, 0}}, 1, 40)),
                            tool_row("initialize", nullptr, counters({{50, 1}, {nullptr, 0}}, 1, 9))});
    const std::string text =
        metrics_text(with_servers({server("one", both), server("two", both)}));
    std::vector<std::string> families;  // the family of each line, in order
    std::size_t start = 0;
    while (start < text.size()) {
        const std::size_t end = text.find('\n', start);
        REQUIRE(end != std::string::npos);  // every line ends in a newline
        std::string line = text.substr(start, end - start);
        start = end + 1;
        if (line.starts_with("# ")) line = line.substr(7);  // "# HELP " or "# TYPE "
        std::string name = line.substr(0, line.find_first_of("{ "));
        // A histogram's _bucket, _sum and _count lines are its family's.
        if (name.starts_with("mcpd_request_duration_seconds")) name = "mcpd_request_duration_seconds";
        if (families.empty() || families.back() != name) families.push_back(name);
    }
    std::vector<std::string> sorted = families;
    std::sort(sorted.begin(), sorted.end());
    CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());
    CHECK(families.size() == 12);
}

TEST_CASE("decimal_text writes exact decimals without trailing zeros", "[metrics]") {
    CHECK(decimal_text(0, 6) == "0");
    CHECK(decimal_text(50, 6) == "0.00005");
    CHECK(decimal_text(1000000, 6) == "1");
    CHECK(decimal_text(2500000, 6) == "2.5");
    CHECK(decimal_text(60000000, 6) == "60");
    CHECK(decimal_text(420, 3) == "0.42");
    CHECK(decimal_text(1001, 3) == "1.001");
    CHECK(decimal_text(7, 0) == "7");
}
