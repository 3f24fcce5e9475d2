// The metrics (docs/STATS.md): `mcpctl metrics` and GET /metrics on [daemon] metrics_listen
// read by the Prometheus client library's own parser (parse_metrics.py, with Debian's
// python3-prometheus-client), their numbers against `mcpctl stats --json --tools`, what the
// endpoint answers to other methods and paths, that it answers only the holder of its token
// who names it in Host, that made-up names get no series of their own, and that it listens on
// loopback only. Traffic goes to 127.0.0.1 and nowhere else.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "harness.h"
#include "mcp_session.h"

using namespace integration;
using nlohmann::json;

namespace {

// A tool name no server has, with every character a label value escapes: it is counted as
// "unlisted", and never shown.
const std::string kOddTool = "odd \"name\" \\ with\na newline";

// The token GET /metrics asks for, in the file the registry names.
const std::string kMetricsToken = "0123456789abcdef-metrics";

// The [daemon] table serving metrics on `address`, with a token file written in `env`'s
// directory (mode 0600, as mcpd requires).
std::string metrics_daemon(const TestEnv& env, const std::string& address,
                           const std::string& token = kMetricsToken) {
    const std::string file = env.path("metrics.token");
    std::ofstream(file, std::ios::binary | std::ios::trunc) << token << "\n";
    REQUIRE(::chmod(file.c_str(), 0600) == 0);
    return "[daemon]\nmetrics_listen = \"" + address +
           "\"\nmetrics_token_file = " + toml_string(file) + "\n\n";
}

// The outcome labels and the COUNTERS fields that count them.
const std::pair<std::string, std::string> kOutcomes[] = {
    {"reply", "replies"},       {"error", "errors"},     {"tool_error", "tool_errors"},
    {"cancelled", "cancelled"}, {"timeout", "timeouts"}, {"child_died", "child_died"},
    {"replayed", "replayed"},
};

// A TCP socket of the test's own bound to a port the system chose on 127.0.0.1; its port.
int bind_loopback(int& fd) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0);
    return ntohs(address.sin_port);
}

// A loopback port nothing listens on now: bound to port 0, read back, closed.
int free_loopback_port() {
    int fd = -1;
    const int port = bind_loopback(fd);
    ::close(fd);
    return port;
}

// Send `request` to 127.0.0.1:port and read until the server closes (10 s at most).
std::string http_exchange(int port, const std::string& request) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    const timeval timeout{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    std::string response;
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0 &&
        ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(request.size())) {
        char buffer[16384];
        ssize_t n;
        while ((n = ::recv(fd, buffer, sizeof buffer, 0)) > 0)
            response.append(buffer, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return response;
}

// A request as Prometheus sends it: Host naming the endpoint, and the token.
std::string http(int port, const std::string& method, const std::string& target,
                 const std::string& token = kMetricsToken, const std::string& host = "") {
    return http_exchange(port, method + " " + target + " HTTP/1.1\r\nHost: " +
                                   (host.empty() ? "127.0.0.1:" + std::to_string(port) : host) +
                                   "\r\nAuthorization: Bearer " + token +
                                   "\r\nConnection: close\r\n\r\n");
}

std::string status_line(const std::string& response) {
    return response.substr(0, response.find("\r\n"));
}

std::string head_of(const std::string& response) {
    return response.substr(0, response.find("\r\n\r\n") + 2);
}

std::string body_of(const std::string& response) {
    const std::size_t end = response.find("\r\n\r\n");
    return end == std::string::npos ? std::string() : response.substr(end + 4);
}

// The text parsed by parse_metrics.py beside this file: {"families": [...]}.
json parse_metrics(const TestEnv& env, const std::string& text) {
    const std::string file = env.path("metrics.prom");
    std::ofstream(file, std::ios::binary) << text;
    const std::string script =
        (std::filesystem::path(__FILE__).parent_path() / "parse_metrics.py").string();
    // Debian's python3 explicitly: the one with python3-prometheus-client.
    const RunResult parsed = run_process({"/usr/bin/python3", script, file});
    INFO("the text:\n" << text << "\nthe parser: " << parsed.describe());
    REQUIRE(parsed.exit_code == 0);
    return json::parse(parsed.out);
}

// "name{a=x,b=y}" with the labels in order: one key per sample.
std::string sample_key(const std::string& name, const json& labels) {
    std::string key = name + "{";
    for (const auto& [label, value] : labels.items())  // nlohmann keeps keys sorted
        key += label + "=" + value.get<std::string>() + ",";
    return key + "}";
}

struct Parsed {
    std::vector<std::pair<std::string, std::string>> families;  // name, type, in text order
    std::map<std::string, double> samples;                      // sample_key -> value
    std::set<std::string> bucket_bounds;                        // every le as written
};

Parsed flatten(const json& parsed) {
    Parsed out;
    for (const json& family : parsed["families"]) {
        out.families.emplace_back(family["name"], family["type"]);
        for (const json& sample : family["samples"]) {
            const std::string key = sample_key(sample["name"], sample["labels"]);
            INFO(key);
            CHECK(out.samples.count(key) == 0);  // no sample twice
            out.samples[key] = sample["value"].get<double>();
            if (sample["labels"].contains("le")) out.bucket_bounds.insert(sample["labels"]["le"]);
        }
    }
    return out;
}

json labels_of(const std::string& server, const json& row = nullptr) {
    json labels = {{"server", server}};
    if (!row.is_null()) {
        labels["method"] = row["method"];
        labels["tool"] = row["tool"].is_string() ? row["tool"] : json("");
    }
    return labels;
}

// The sample `name`{labels} must be there with `value` (a JSON number or boolean).
void expect_sample(const Parsed& parsed, const std::string& name, const json& labels,
                   const json& value) {
    const std::string key = sample_key(name, labels);
    INFO(key << " expected " << value.dump());
    const auto it = parsed.samples.find(key);
    REQUIRE(it != parsed.samples.end());
    CHECK(it->second ==
          Approx(value.is_boolean() ? (value.get<bool>() ? 1.0 : 0.0) : value.get<double>()));
}

// The le label written for a bound of `us` microseconds, found by its value.
std::string le_of(const Parsed& parsed, const json& us) {
    if (us.is_null()) return "+Inf";
    const double seconds = us.get<double>() / 1e6;
    for (const std::string& le : parsed.bucket_bounds)
        if (le != "+Inf" && std::abs(std::stod(le) - seconds) <= seconds * 1e-9) return le;
    FAIL("no bucket bound of " << seconds << " s");
    return {};
}

bool has_sample_of(const Parsed& parsed, const std::string& name, const std::string& server) {
    for (const auto& [key, value] : parsed.samples)
        if (key.starts_with(name + "{") && key.find("server=" + server + ",") != std::string::npos)
            return true;
    return false;
}

// Every figure of `stats` (asked with tools) in the metrics, sample for sample; CPU and memory
// only as present or absent, since they move between two requests.
void expect_stats_in_metrics(const json& stats, const Parsed& parsed) {
    std::size_t name_samples = 0;
    for (const json& server : stats["servers"]) {
        const std::string name = server["name"];
        INFO("server " << name);
        expect_sample(parsed, "mcpd_server_up", labels_of(name),
                      json(server["state"] == "running"));
        expect_sample(parsed, "mcpd_server_sessions", labels_of(name), server["sessions"]);
        expect_sample(parsed, "mcpd_server_sessions_opened_total", labels_of(name),
                      server["sessions_total"]);
        expect_sample(parsed, "mcpd_server_restarts_total", labels_of(name), server["restarts"]);
        CHECK(has_sample_of(parsed, "mcpd_server_cpu_seconds_total", name) ==
              server["cpu_ms"].is_number());
        CHECK(has_sample_of(parsed, "mcpd_server_resident_bytes", name) ==
              server["rss_bytes"].is_number());
        CHECK(has_sample_of(parsed, "mcpd_server_proportional_bytes", name) ==
              server["pss_bytes"].is_number());
        for (const json& row : server["tools"]) {
            INFO("row " << row.dump());
            const json labels = labels_of(name, row);
            for (const auto& [outcome, field] : kOutcomes) {
                json with = labels;
                with["outcome"] = outcome;
                expect_sample(parsed, "mcpd_requests_total", with, row[field]);
            }
            expect_sample(parsed, "mcpd_requests_in_flight", labels, row["in_flight"]);
            for (const auto& [direction, field] :
                 {std::pair{"in", "bytes_in"}, std::pair{"out", "bytes_out"}}) {
                json with = labels;
                with["direction"] = direction;
                expect_sample(parsed, "mcpd_request_bytes_total", with, row[field]);
            }
            const json& latency = row["latency"];
            std::uint64_t cumulative = 0;
            for (const json& bucket : latency["buckets"]) {
                cumulative += bucket[1].get<std::uint64_t>();
                json with = labels;
                with["le"] = le_of(parsed, bucket[0]);
                expect_sample(parsed, "mcpd_request_duration_seconds_bucket", with, cumulative);
            }
            expect_sample(parsed, "mcpd_request_duration_seconds_count", labels, latency["count"]);
            expect_sample(parsed, "mcpd_request_duration_seconds_sum", labels,
                          json(latency["sum_us"].get<double>() / 1e6));
            name_samples += std::size(kOutcomes) + 1 + 2 + latency["buckets"].size() + 2;
        }
    }
    std::size_t found = 0;
    for (const auto& [key, value] : parsed.samples)
        if (key.starts_with("mcpd_request")) ++found;
    CHECK(found == name_samples);  // and nothing else per name
}

// The tools row of `server` with this method and tool (null: none), null when absent.
json row_of(const json& stats, const std::string& server, const std::string& method,
            const json& tool) {
    for (const json& s : stats["servers"])
        if (s["name"] == server)
            for (const json& row : s["tools"])
                if (row["method"] == method && row["tool"] == tool) return row;
    return nullptr;
}

// The addresses ("0100007F" is 127.0.0.1) of the sockets listening on `port`, from
// /proc/net/tcp and /proc/net/tcp6.
std::vector<std::string> listening_addresses(int port) {
    char port_hex[8];
    std::snprintf(port_hex, sizeof port_hex, "%04X", port);
    std::vector<std::string> addresses;
    for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
        std::ifstream in(table);
        std::string line;
        std::getline(in, line);  // the header
        while (std::getline(in, line)) {
            std::istringstream fields(line);
            std::string slot, local, remote, state;
            fields >> slot >> local >> remote >> state;
            const std::size_t colon = local.rfind(':');
            if (state == "0A" && colon != std::string::npos && local.substr(colon + 1) == port_hex)
                addresses.push_back(local.substr(0, colon));
        }
    }
    return addresses;
}

// Sessions and calls that leave every outcome a client can cause in the counts.
void make_traffic(McpSession& client) {
    client.initialize("metrics test");
    client.wait_response(client.request("tools/list"));  // as an agent does first
    for (const char* text : {"one", "two", "three"}) {
        const McpMessage answer = client.wait_response(client.call_tool("echo", {{"text", text}}));
        REQUIRE(answer.tool_text() == text);
    }
    client.wait_response(client.call_tool("echo", {{"text", "bad"}, {"is_error", true}}));
    client.wait_response(client.call_tool(kOddTool, json::object()));
    const McpMessage missing = client.wait_response(client.request("no/such/method"));
    CHECK(missing.is_error());
}

}  // namespace

TEST_CASE(
    "metrics: mcpctl metrics and GET /metrics hold the stats figures, for a Prometheus parser",
    "[metrics]") {
    TestEnv env("metrics");
    const int port = free_loopback_port();
    const std::string address = "127.0.0.1:" + std::to_string(port);
    env.write_registry(metrics_daemon(env, address) + server_toml("demo") +
                       server_toml("spare", {}, {{"autostart", "false"}}));
    env.start_daemon();
    env.wait_state("demo", "running");
    McpSession client(env.socket(), "demo");
    make_traffic(client);

    const RunResult text = env.ctl({"metrics"});
    {
        INFO(text.describe());
        REQUIRE(text.exit_code == 0);
    }
    const RunResult stats_run = env.ctl({"--json", "stats", "--tools"});
    {
        INFO(stats_run.describe());
        REQUIRE(stats_run.exit_code == 0);
    }
    const json stats = json::parse(stats_run.out);
    const Parsed parsed = flatten(parse_metrics(env, text.out));

    // Every family of the table, once each, in its order (the parser names a counter's family
    // without _total); a stopped server has no CPU or memory, a running one has both.
    CHECK(parsed.families == std::vector<std::pair<std::string, std::string>>{
                                 {"mcpd_up", "gauge"},
                                 {"mcpd_server_up", "gauge"},
                                 {"mcpd_server_sessions", "gauge"},
                                 {"mcpd_server_sessions_opened", "counter"},
                                 {"mcpd_server_restarts", "counter"},
                                 {"mcpd_server_cpu_seconds", "counter"},
                                 {"mcpd_server_resident_bytes", "gauge"},
                                 {"mcpd_server_proportional_bytes", "gauge"},
                                 // mcpd_server_oom_kills_total only with a delegated cgroup
                                 {"mcpd_server_peak_resident_bytes", "gauge"},
                                 {"mcpd_requests", "counter"},
                                 {"mcpd_requests_in_flight", "gauge"},
                                 {"mcpd_request_bytes", "counter"},
                                 {"mcpd_request_duration_seconds", "histogram"},
                             });
    expect_sample(parsed, "mcpd_up", json::object(), 1);
    expect_stats_in_metrics(stats, parsed);
    CHECK_FALSE(has_sample_of(parsed, "mcpd_server_cpu_seconds_total", "spare"));
    CHECK(has_sample_of(parsed, "mcpd_server_cpu_seconds_total", "demo"));

    // What the session did is there: listed tools by name, the odd one as "unlisted".
    const json echo = row_of(stats, "demo", "tools/call", "echo");
    REQUIRE_FALSE(echo.is_null());
    CHECK(echo["replies"] == 3);
    CHECK(echo["tool_errors"] == 1);
    json echo_reply = labels_of("demo", echo);
    echo_reply["outcome"] = "reply";
    expect_sample(parsed, "mcpd_requests_total", echo_reply, 3);
    CHECK(row_of(stats, "demo", "tools/call", kOddTool).is_null());
    const json odd = row_of(stats, "demo", "tools/call", "unlisted");
    REQUIRE_FALSE(odd.is_null());
    CHECK(odd["requests"] == 1);
    expect_sample(parsed, "mcpd_requests_in_flight", labels_of("demo", odd), 0);
    CHECK(text.out.find("odd") == std::string::npos);
    CHECK(row_of(stats, "demo", "no/such/method", nullptr).is_null());
    CHECK(row_of(stats, "demo", "unlisted", nullptr)["errors"] == 1);
    CHECK(row_of(stats, "demo", "tools/list", nullptr)["replies"] == 1);

    SECTION("mcpctl metrics NAME shows that server only") {
        const RunResult demo = env.ctl({"metrics", "demo"});
        REQUIRE(demo.exit_code == 0);
        const Parsed only = flatten(parse_metrics(env, demo.out));
        CHECK(has_sample_of(only, "mcpd_server_up", "demo"));
        CHECK_FALSE(has_sample_of(only, "mcpd_server_up", "spare"));
    }

    SECTION("GET /metrics serves the same families and counts over HTTP") {
        const std::string response = http(port, "GET", "/metrics");
        CHECK(status_line(response) == "HTTP/1.1 200 OK");
        CHECK(head_of(response).find(
                  "\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n") !=
              std::string::npos);
        const Parsed served = flatten(parse_metrics(env, body_of(response)));
        CHECK(served.families == parsed.families);
        // No traffic since: every request figure is the same (CPU and memory may move).
        for (const auto& [key, value] : parsed.samples) {
            if (!key.starts_with("mcpd_request")) continue;
            INFO(key);
            REQUIRE(served.samples.count(key) == 1);
            CHECK(served.samples.at(key) == value);
        }
        const std::string query = http(port, "GET", "/metrics?name[]=x");
        CHECK(status_line(query) == "HTTP/1.1 200 OK");
    }

    SECTION("HEAD has no body; another method is 405 with Allow, another path 404") {
        const std::string head = http(port, "HEAD", "/metrics");
        CHECK(status_line(head) == "HTTP/1.1 200 OK");
        CHECK(body_of(head).empty());
        const std::string post = http(port, "POST", "/metrics");
        CHECK(status_line(post) == "HTTP/1.1 405 Method Not Allowed");
        CHECK(head_of(post).find("\r\nAllow: GET, HEAD\r\n") != std::string::npos);
        CHECK(status_line(http(port, "DELETE", "/metrics")) == "HTTP/1.1 405 Method Not Allowed");
        CHECK(status_line(http(port, "GET", "/other")) == "HTTP/1.1 404 Not Found");
        CHECK(status_line(http(port, "GET", "/")) == "HTTP/1.1 404 Not Found");
    }

    SECTION("it listens on 127.0.0.1 only, and says where in the log") {
        CHECK(listening_addresses(port) == std::vector<std::string>{"0100007F"});
        CHECK(env.daemon_log().find("http://" + address + "/metrics") != std::string::npos);
    }
}

TEST_CASE("metrics: port 0 gets a free port, which the log names", "[metrics]") {
    TestEnv env("metrics-port-0");
    env.write_registry(metrics_daemon(env, "127.0.0.1:0") + server_toml("demo"));
    env.start_daemon();
    const std::regex served("http://127\\.0\\.0\\.1:([0-9]+)/metrics");
    std::smatch match;
    std::string log;
    wait_until("the log names the metrics address", 10s, [&] {
        log = env.daemon_log();
        return std::regex_search(log, match, served);
    });
    const int port = std::stoi(match[1]);
    CHECK(port != 0);
    const std::string response = http(port, "GET", "/metrics");
    CHECK(status_line(response) == "HTTP/1.1 200 OK");
    CHECK(body_of(response).find("\nmcpd_server_up{server=\"demo\"} ") != std::string::npos);
    CHECK(listening_addresses(port) == std::vector<std::string>{"0100007F"});
}

TEST_CASE("metrics: a reload moves the endpoint to a changed address", "[metrics]") {
    TestEnv env("metrics-reload");
    const int first = free_loopback_port();
    const auto registry = [&env](int port) {
        env.write_registry(metrics_daemon(env, "127.0.0.1:" + std::to_string(port)) +
                           server_toml("demo"));
    };
    registry(first);
    env.start_daemon();
    env.wait_state("demo", "running");
    CHECK(status_line(http(first, "GET", "/metrics")) == "HTTP/1.1 200 OK");

    const int second = free_loopback_port();
    registry(second);
    const RunResult reload = env.ctl({"reload"});
    INFO(reload.describe());
    REQUIRE(reload.exit_code == 0);
    CHECK(status_line(http(second, "GET", "/metrics")) == "HTTP/1.1 200 OK");
    CHECK(http(first, "GET", "/metrics").empty());  // refused: nothing listens there now
    CHECK(listening_addresses(first).empty());
}

TEST_CASE("metrics: an address in use is logged and mcpd runs without it", "[metrics]") {
    TestEnv env("metrics-in-use");
    // A listener of the test's own on the port (bound, listening, never accepting).
    int fd = -1;
    const int port = bind_loopback(fd);
    REQUIRE(::listen(fd, 1) == 0);
    const std::string taken = "127.0.0.1:" + std::to_string(port);
    env.write_registry(metrics_daemon(env, taken) + server_toml("demo"));
    env.start_daemon();
    env.wait_state("demo", "running");
    ::close(fd);
    const std::string log = env.daemon_log();
    INFO(log);
    CHECK(log.find("cannot bind " + taken + ": " + std::strerror(EADDRINUSE)) != std::string::npos);
    CHECK(env.ctl({"metrics"}).exit_code == 0);
}

TEST_CASE("metrics: GET /metrics answers only the token's holder who names it in Host",
          "[metrics][access]") {
    TestEnv env("metrics-access");
    const int port = free_loopback_port();
    const std::string address = "127.0.0.1:" + std::to_string(port);
    env.write_registry(metrics_daemon(env, address) + server_toml("demo"));
    env.start_daemon();
    env.wait_state("demo", "running");

    const std::string anonymous = http_exchange(
        port, "GET /metrics HTTP/1.1\r\nHost: " + address + "\r\nConnection: close\r\n\r\n");
    CHECK(status_line(anonymous) == "HTTP/1.1 401 Unauthorized");
    CHECK(body_of(anonymous).find("mcpd_") == std::string::npos);
    CHECK(status_line(http(port, "GET", "/metrics", "not-the-token")) ==
          "HTTP/1.1 401 Unauthorized");
    // A page of another site whose name resolves here (DNS rebinding) names that site.
    const std::string rebound = http(port, "GET", "/metrics", kMetricsToken,
                                     "metrics.attacker.example:" + std::to_string(port));
    CHECK(status_line(rebound) == "HTTP/1.1 421 Misdirected Request");
    CHECK(body_of(rebound).find("mcpd_") == std::string::npos);
    CHECK(status_line(http(port, "GET", "/metrics")) == "HTTP/1.1 200 OK");
    CHECK(status_line(http(port, "GET", "/metrics", kMetricsToken,
                           "localhost:" + std::to_string(port))) == "HTTP/1.1 200 OK");

    // A token file others may read is refused and logged; fixed and reloaded, it serves again,
    // with the file's new token.
    ::chmod(env.path("metrics.token").c_str(), 0644);
    REQUIRE(env.ctl({"reload"}).exit_code == 0);
    wait_until("the token file's mode is logged", 10s, [&] {
        return env.daemon_log().find(
                   "has mode 0644, so other users may read or change the "
                   "token: make it 0600") != std::string::npos;
    });
    CHECK(http(port, "GET", "/metrics").empty());  // nothing listens
    env.write_registry(metrics_daemon(env, address, "the-next-token") + server_toml("demo"));
    REQUIRE(env.ctl({"reload"}).exit_code == 0);
    CHECK(status_line(http(port, "GET", "/metrics")) == "HTTP/1.1 401 Unauthorized");
    CHECK(status_line(http(port, "GET", "/metrics", "the-next-token")) == "HTTP/1.1 200 OK");
}

TEST_CASE("metrics: a registry with metrics_listen and no token file is refused",
          "[metrics][access]") {
    TestEnv env("metrics-no-token");
    env.write_registry("[daemon]\nmetrics_listen = \"127.0.0.1:0\"\n\n" + server_toml("demo"));
    const RunResult checked = run_process({bin("mcpd"), "--check-config", env.registry()});
    INFO(checked.describe());
    CHECK(checked.exit_code != 0);
    CHECK((checked.out + checked.err).find("'metrics_listen' needs 'metrics_token_file'") !=
          std::string::npos);
}

TEST_CASE("metrics: made-up tool and method names get no series, listed tools keep theirs",
          "[metrics][names]") {
    TestEnv env("metrics-names");
    env.write_registry(server_toml("demo"));
    env.start_daemon();
    env.wait_state("demo", "running");
    McpSession client(env.socket(), "demo");
    client.initialize("made-up names");
    // Before any list the tools are unlisted; a flood of names, some long, pipelined.
    std::vector<json> ids;
    for (int i = 0; i < 300; ++i) {
        const std::string name =
            "made-up-" + std::to_string(i) + std::string(i % 3 == 0 ? 4000 : 0, 'x');
        ids.push_back(client.call_tool(name, json::object()));
        ids.push_back(client.request("made/up/" + std::to_string(i)));
    }
    for (const json& id : ids) client.wait_response(id);
    client.wait_response(client.request("tools/list"));
    CHECK(client.wait_response(client.call_tool("echo", {{"text", "real"}})).tool_text() == "real");

    const RunResult text = env.ctl({"metrics"});
    REQUIRE(text.exit_code == 0);
    CHECK(text.out.find("made-up") == std::string::npos);
    CHECK(text.out.find("made/up") == std::string::npos);
    CHECK(
        text.out.find("mcpd_requests_total{server=\"demo\",method=\"tools/call\",tool=\"unlisted\","
                      "outcome=\"error\"} 300") != std::string::npos);
    CHECK(text.out.find("mcpd_requests_total{server=\"demo\",method=\"unlisted\",tool=\"\","
                        "outcome=\"error\"} 300") != std::string::npos);
    CHECK(text.out.find("mcpd_requests_total{server=\"demo\",method=\"tools/call\",tool=\"echo\","
                        "outcome=\"reply\"} 1") != std::string::npos);
    // Four rows: unlisted tools, unlisted methods, tools/list and echo: 7 outcomes each.
    CHECK(count_of(text.out, "\nmcpd_requests_total{") == 4 * 7);
}
