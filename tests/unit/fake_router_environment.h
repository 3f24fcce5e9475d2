// An in-memory RouterEnvironment and a small harness for the router's unit tests.
//
// The clock only moves when a test says so; the child is a vector of the lines written to its
// stdin (writes can be made to fail); each session is a vector of the lines it was sent. Child
// lines go through a real EnvelopeScanner, as in the daemon, so tests write the child's side as
// plain JSON text. Captured lines are checked both parsed (nlohmann::json) and as raw bytes
// where byte-exactness is the point (ids, progress tokens).
#pragma once

#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/json_envelope.h"
#include "daemon/mux/router.h"

namespace mcpd::testing {

using namespace std::chrono_literals;
using nlohmann::json;

inline constexpr std::size_t kTestMaxMessage = 16 * 1024 * 1024;

// What every test's child answered to mcpd's initialize, unless a test says otherwise.
inline json demo_initialize_result(const std::string& version = "2025-11-25") {
    return json{{"protocolVersion", version},
                {"capabilities",
                 {{"tools", {{"listChanged", true}}},
                  {"resources", {{"subscribe", true}, {"listChanged", true}}},
                  {"logging", json::object()},
                  {"tasks",
                   {{"list", json::object()},
                    {"cancel", json::object()},
                    {"requests", {{"tools", {{"call", json::object()}}}}}}}}},
                {"serverInfo", {{"name", "demo-server"}, {"version", "1.2.3"}}},
                {"instructions", "use the tools"}};
}

// What a modern (2026-07-28) child answered to mcpd's server/discover, with `extra` merged in.
inline json demo_discover_result(const json& extra = json::object()) {
    json result = {
        {"resultType", "complete"},
        {"supportedVersions", {"2026-07-28"}},
        {"capabilities", {{"tools", {{"listChanged", true}}}, {"resources", json::object()}}},
        {"_meta",
         {{"io.modelcontextprotocol/serverInfo",
           {{"name", "demo-modern"}, {"version", "2.0.0"}}}}}};
    result.update(extra);
    return result;
}

// A 2026-07-28 request with the per-request _meta every modern client sends; `params` holds
// the other members of params, without braces ("" for none).
inline std::string modern_request(const std::string& raw_id, const std::string& method,
                                  const std::string& params = "") {
    std::string line = R"({"jsonrpc":"2.0","id":)";
    line += raw_id;
    line += R"(,"method":")";
    line += method;
    line += R"(","params":{)";
    if (!params.empty()) {
        line += params;
        line += ',';
    }
    line += R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
            R"("io.modelcontextprotocol/clientCapabilities":{}}}})";
    return line;
}

inline config::ServerConfig router_config() {
    config::ServerConfig config;
    config.name = "demo";
    config.command = "demo-server";
    config.start_timeout = 10s;
    return config;
}

// Both the router's environment and its session sink: what sessions were sent is recorded here.
class FakeRouterEnvironment : public RouterEnvironment, public SessionSink {
public:
    TimePoint now() const override { return now_; }

    bool child_send(std::string_view line) override {
        if (!child_accepts) {
            refused_child_lines.emplace_back(line);
            return false;
        }
        child_lines.emplace_back(line);
        return true;
    }

    std::uint64_t child_next_id() override { return next_child_id++; }

    // SessionSink, through two hooks a test environment may override.
    void send(SessionId session, std::string_view line) override { session_send(session, line); }
    void close(SessionId session, const std::string& reason) override {
        session_close(session, reason);
    }

    virtual void session_send(SessionId session, std::string_view line) {
        session_lines[session].emplace_back(line);
    }

    virtual void session_close(SessionId session, const std::string& reason) {
        closed.emplace_back(session, reason);
    }

    void want_child() override { ++want_child_calls; }
    void departed_session_gone(SessionId session) override { departed_gone.push_back(session); }
    void cancel_elsewhere(SessionId session, std::string_view line) override {
        cancelled_elsewhere.emplace_back(session, line);
    }
    void project_reported(SessionId session, const json* roots_result,
                          std::string_view why) override {
        project_reports.push_back(
            {session, roots_result != nullptr ? *roots_result : json(nullptr), std::string(why)});
    }
    void deadlines_changed() override { ++deadline_changes; }
    void note(std::string_view message) override { notes.emplace_back(message); }

    void advance(std::chrono::milliseconds d) { now_ += d; }

    // What session `id` was sent (empty when nothing).
    const std::vector<std::string>& sent_to(SessionId id) { return session_lines[id]; }

    void clear_records() {
        child_lines.clear();
        refused_child_lines.clear();
        session_lines.clear();
        closed.clear();
        notes.clear();
        want_child_calls = 0;
        deadline_changes = 0;
    }

    bool child_accepts = true;
    std::uint64_t next_child_id = 1;
    std::vector<std::string> child_lines;  // the child's stdin, one line each
    std::vector<std::string> refused_child_lines;
    std::map<SessionId, std::vector<std::string>> session_lines;
    std::vector<std::pair<SessionId, std::string>> closed;
    std::vector<std::string> notes;
    int want_child_calls = 0;
    int deadline_changes = 0;
    struct ProjectReport {
        SessionId session = 0;
        json roots_result;  // null when none was reported
        std::string why;
    };
    std::vector<ProjectReport> project_reports;
    std::vector<SessionId> departed_gone;
    std::vector<std::pair<SessionId, std::string>> cancelled_elsewhere;
    // The request log's records (Router::set_request_log): "method tool outcome duration_us".
    void request_settled(const SettledRequest& r) override {
        settled.push_back(std::string(r.method) + " " + std::string(r.tool) + " " +
                          std::string(to_string(r.outcome)) + " " +
                          std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(
                                             r.duration).count()));
    }
    std::vector<std::string> settled;

private:
    TimePoint now_ = TimePoint{} + 1000h;
};

// The raw bytes of the id of `line` (quotes included for strings); empty when absent.
inline std::string raw_id_of(std::string line) {
    wire::EnvelopeScanner scanner(kTestMaxMessage);
    wire::Envelope e;
    REQUIRE(scanner.scan(line, e) == wire::ScanStatus::ok);
    return std::string(e.id.in(line));
}

// The raw bytes of a progress token (params._meta.progressToken, or params.progressToken).
inline std::string raw_progress_token_of(std::string line) {
    wire::EnvelopeScanner scanner(kTestMaxMessage);
    wire::Envelope e;
    REQUIRE(scanner.scan(line, e) == wire::ScanStatus::ok);
    return std::string(e.progress_token.in(line));
}

inline json parse(const std::string& line) {
    json j = json::parse(line, nullptr, false);
    INFO(line);
    REQUIRE_FALSE(j.is_discarded());
    return j;
}

// A router over a fake environment, with a child that speaks whatever the test writes.
struct RouterHarness {
    explicit RouterHarness(const config::ServerConfig& config = router_config())
        : router(config, env, env), child_scanner(kTestMaxMessage) {}

    // The child finished mcpd's handshake.
    void child_ready(const std::string& version = "2025-11-25") {
        router.on_child_ready(demo_initialize_result(version), version);
    }

    // A modern child is ready: server/discover answered `discover`; there is no initialize.
    void modern_child_ready(const json& discover = demo_discover_result()) {
        router.on_child_ready(discover, "2026-07-28", /*modern=*/true);
    }

    // A line from session `id`.
    void send(SessionId id, std::string line) { router.on_session_line(id, line); }

    // A line from the child on its stdout.
    void from_child(std::string line) {
        wire::Envelope e;
        INFO("child line: " << line);
        REQUIRE(child_scanner.scan(line, e) == wire::ScanStatus::ok);
        router.on_child_message(line, e);
    }

    // Attach session `id`, initialize it with `version` and `capabilities`, send initialized,
    // and forget the records so far.
    void connect(SessionId id, const std::string& version = "2025-11-25",
                 const json& capabilities = json::object()) {
        router.attach(id);
        const json init = {
            {"jsonrpc", "2.0"},
            {"id", 0},
            {"method", "initialize"},
            {"params",
             {{"protocolVersion", version},
              {"capabilities", capabilities},
              {"clientInfo", {{"name", "client-" + std::to_string(id)}, {"version", "0.1"}}}}}};
        send(id, init.dump());
        send(id, R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
        env.clear_records();
    }

    // The child's result for a request it received (its line), with the child's id.
    void answer(const std::string& child_request, const std::string& result_json = "{}") {
        from_child(R"({"jsonrpc":"2.0","id":)" + raw_id_of(child_request) + R"(,"result":)" +
                   result_json + "}");
    }

    // The child's error for a request it received.
    void answer_error(const std::string& child_request, int code = -32601,
                      const std::string& message = "nope") {
        from_child(R"({"jsonrpc":"2.0","id":)" + raw_id_of(child_request) + R"(,"error":{"code":)" +
                   std::to_string(code) + R"(,"message":")" + message + R"("}})");
    }

    // The single line the child received since the last check; fails otherwise.
    std::string only_child_line() {
        std::string all;
        for (const auto& l : env.child_lines) all += l + "\n";
        INFO("child lines:\n" << all);
        REQUIRE(env.child_lines.size() == 1);
        std::string line = env.child_lines.front();
        env.child_lines.clear();
        return line;
    }

    // The single line session `id` received since the last check; fails otherwise.
    std::string only_line_to(SessionId id) {
        auto& lines = env.session_lines[id];
        std::string all;
        for (const auto& l : lines) all += l + "\n";
        INFO("lines to session " << id << ":\n" << all);
        REQUIRE(lines.size() == 1);
        std::string line = lines.front();
        lines.clear();
        return line;
    }

    // Send a request from a session and return what the child received for it.
    std::string forward(SessionId id, const std::string& line) {
        env.child_lines.clear();
        send(id, line);
        return only_child_line();
    }

    FakeRouterEnvironment env;
    Router router;
    wire::EnvelopeScanner child_scanner;
};

// The error code of a JSON-RPC error line.
inline int error_code_of(const std::string& line) {
    const json j = parse(line);
    INFO(line);
    REQUIRE(j.contains("error"));
    return j["error"]["code"].get<int>();
}

}  // namespace mcpd::testing
