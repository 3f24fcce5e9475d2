// Fuzz target: the session router (daemon/router*), driven through its whole API.
//
// The input is a script of operations decoded byte by byte: sessions attach, initialize,
// send requests (ids, progress tokens, subscriptions, log levels, tasks, listen streams),
// cancel, answer the server's requests, send raw bytes, and detach; the child becomes ready
// (legacy or modern), answers what it received (results, errors, tasks, late and repeated
// answers, answers the daemon could not use), reports progress, notifies, asks sessions
// things, and dies; the clock moves and the registry entry changes. After every operation each line the router wrote is checked:
//   - every line is one valid JSON-RPC 2.0 message;
//   - a reply reaches a session only if that session has a request with that id unanswered;
//   - no id or progress token mcpd made up for the child reaches a session that did not
//     itself use those bytes, and progress, cancellations and listen streams go to their own;
//   - a request reaches the child with a fresh id mcpd allocated (never twice in one child's
//     life) and an mcpd progress token; a cancellation names a request this child still
//     works on, and one a session sends names that session's own request;
//   - the child's requests are answered at most once;
//   - nothing is sent to a session after it detached.
#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_envelope.h"
#include "daemon/mux/router.h"
#include "fuzz_input.h"

namespace {

using namespace mcpd;
using namespace std::chrono_literals;
using fuzz::FuzzInput;

// Ids mcpd allocates for the child start here, so they cannot pass for a session's own.
constexpr std::uint64_t kChildIdBase = 900000000;
// mcpd's handshake takes a few ids of each new child before sessions get any.
constexpr std::uint64_t kHandshakeIds = 2;
constexpr std::size_t kSlots = 4;
constexpr std::size_t kMaxSteps = 3000;

class Env final : public RouterEnvironment, public SessionSink {
public:
    TimePoint now() const override { return now_; }
    bool child_send(std::string_view line) override {
        to_child.emplace_back(line);
        return child_up;
    }
    std::uint64_t child_next_id() override {
        allocated.insert(next_id);
        return next_id++;
    }
    void send(SessionId session, std::string_view line) override {
        to_sessions.emplace_back(session, std::string(line));
    }
    void close(SessionId session, const std::string&) override {
        closed.push_back(session);
    }
    void want_child() override {}
    void deadlines_changed() override {}
    void note(std::string_view) override {}

    TimePoint now_ = TimePoint{} + 1000h;
    bool child_up = false;
    std::uint64_t next_id = kChildIdBase;
    std::set<std::uint64_t> allocated;  // every id handed out, for any child
    std::vector<std::string> to_child;
    std::vector<std::pair<SessionId, std::string>> to_sessions;
    std::vector<SessionId> closed;
};

// What one session sent and may legitimately receive.
struct SessionModel {
    bool attached = false;
    std::map<std::string, int> awaiting;  // raw id → requests sent and not answered yet
    std::set<std::string> own_tokens;     // every id, token and requestId it ever sent
    std::set<std::string> progress_tokens;
    std::vector<std::string> asked;         // ids of the server's requests delivered to it
    std::vector<std::string> asked_tokens;  // progress tokens on those requests
};

// A request the child received and has not answered.
struct Received {
    std::string raw_id;
    std::string method;
    SessionId owner = 0;  // the session whose request it is, when that is certain
};

// The current child process as the fuzz input plays it.
struct ChildModel {
    bool ready = false;
    bool modern = false;
    std::vector<Received> open;
    std::vector<std::string> answered;    // raw ids it answered (for late and repeated answers)
    std::set<std::uint64_t> ids_seen;     // request ids received in this life
    std::vector<std::string> tokens;      // progress tokens mcpd gave it
    std::vector<std::string> listens;     // raw ids of subscriptions/listen requests
    std::map<std::string, int> outgoing;  // its own requests' raw ids → unanswered count
    std::vector<std::string> outgoing_list;
    std::uint64_t next_request = 1;
    std::deque<std::string> received_lines;  // the last requests it got, as written to it
};

constexpr const char* kSessionIds[] = {"1",  "2",    "\"1\"",       "\"a\"", "12345678901234567890",
                                       "-3", "\"\"", "\"\\u0041\"", "0",     "900000003"};
constexpr const char* kTokens[] = {"\"t1\"", "5", "\"mcpd-p1\"", "\"t\\\"q\"", "{}", "1.5", "-0"};
constexpr const char* kUris[] = {"file:///a", "file:///a/b", "file:///ab", "x?y", ""};
constexpr const char* kLevels[] = {"debug", "info", "warning", "error", "emergency", "loud"};
constexpr const char* kTasks[] = {"task-1", "task-2", "task-\\u0033", ""};
constexpr const char* kMethods[] = {
    "tools/call",       "tools/list",           "resources/read",
    "logging/setLevel", "resources/subscribe",  "resources/unsubscribe",
    "tasks/get",        "tasks/result",         "tasks/cancel",
    "tasks/list",       "subscriptions/listen", "ping",
    "server/discover",  "initialize",           "prompts/list",
    "tasks/update"};
constexpr const char* kVersions[] = {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25",
                                     "1999-01-01"};
constexpr const char* kCapabilities[] = {
    "{}", R"({"sampling":{}})", R"({"elicitation":{}})", R"({"roots":{"listChanged":true}})",
    R"({"sampling":{"tools":{},"context":{}},"elicitation":{"form":{},"url":{}},"roots":{}})"};

// A request as the child should see it whoever sent it: id and progress token blanked out.
std::string normalized(std::string_view line, const wire::Envelope& e) {
    std::vector<wire::Replacement> changes{{e.id, "#"}};
    if (!e.progress_token.empty()) changes.push_back({e.progress_token, "#"});
    std::string out;
    wire::splice(line, std::move(changes), out);
    return out;
}

// The decoded value of a raw JSON string token, or empty.
std::string decoded(std::string_view token) {
    const nlohmann::json value = nlohmann::json::parse(token, nullptr, false);
    return value.is_string() ? value.get<std::string>() : std::string();
}

// MCPD_FUZZ_TRACE=1 prints every line each way, to follow a failing input.
void trace(const char* what, std::uint64_t session, std::string_view line) {
    static const bool on = std::getenv("MCPD_FUZZ_TRACE") != nullptr;
    if (on)
        std::fprintf(stderr, "%s %llu: %.*s\n", what, static_cast<unsigned long long>(session),
                     static_cast<int>(line.size()), line.data());
}

// Requests whose one answer from the child may answer several sessions (docs/MULTIPLEXING.md:
// a second subscribe or setLevel waits for the child's answer to the first).
bool shared_state_request(std::string_view method) {
    return method == "resources/subscribe" || method == "logging/setLevel";
}

bool is_integer(std::string_view token, std::uint64_t& value) {
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
    return ec == std::errc() && end == token.data() + token.size();
}

class Harness {
public:
    explicit Harness(FuzzInput& in) : in_(in) {
        config::ServerConfig config;
        config.name = "fuzz";
        config.command = "fuzz-server";
        configure(config);
        router_ = std::make_unique<Router>(config, env_, env_);
    }

    void run() {
        for (std::size_t step = 0; step < kMaxSteps && !in_.empty(); ++step) {
            detach_closed();
            operation();
        }
    }

private:
    void configure(config::ServerConfig& config) {
        const std::uint8_t bits = in_.byte();
        config.sharing = (bits & 1) != 0 ? config::Sharing::serialized : config::Sharing::shared;
        config.request_timeout = (bits & 2) != 0 ? 1s : 0ms;
        if ((bits & 4) != 0) config.roots = {"/srv/a", "file:///srv/b"};
        config.start_timeout = (bits & 8) != 0 ? 2s : 10s;
    }

    void operation() {
        const std::size_t slot = in_.below(kSlots);
        switch (in_.below(27)) {
            case 0:
                attach(slot);
                break;
            case 1:
                detach(slot);
                break;
            case 2:
                session_initialize(slot);
                break;
            case 3:
                session_line(slot, R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
                break;
            case 4:
            case 5:
            case 6:
                session_request(slot);
                break;
            case 7:
                session_cancel(slot);
                break;
            case 8:
                session_answer(slot);
                break;
            case 9:
                session_notification(slot);
                break;
            case 10:
                session_line(slot, std::string(in_.chunk()));
                break;
            case 11:
                child_ready();
                break;
            case 12:
                child_gone();
                break;
            case 13:
            case 14:
                child_answer();
                break;
            case 15:
                child_stray_answer();
                break;
            case 16:
                child_progress();
                break;
            case 17:
                child_notification();
                break;
            case 18:
                child_request();
                break;
            case 19:
                child_cancel();
                break;
            case 20:
                child_subscription_notification();
                break;
            case 21:
                tick();
                break;
            case 22:
                router_->fail_waiting("fuzz: the server failed");
                check(0);
                break;
            case 23:
                reconfigure();
                break;
            case 24:
                child_task_notification();
                break;
            case 25:
                child_reply_lost();
                break;
            default:
                session_line(slot, std::string(in_.chunk()));
                break;
        }
    }

    SessionId id_of(std::size_t slot) const { return generation_[slot] * kSlots + slot + 1; }

    // Sessions the router asked to close go on the next turn, as the daemon does it.
    void detach_closed() {
        std::vector<SessionId> closed;
        closed.swap(env_.closed);
        for (SessionId id : closed) {
            for (std::size_t slot = 0; slot < kSlots; ++slot) {
                if (id_of(slot) == id && sessions_[id].attached) detach(slot);
            }
        }
    }

    void attach(std::size_t slot) {
        if (sessions_[id_of(slot)].attached) return;
        trace("attach", id_of(slot), {});
        sessions_[id_of(slot)].attached = true;
        router_->attach(id_of(slot));
        check(id_of(slot));
    }

    // The session leaves; a session id is never used again.
    void detach(std::size_t slot) {
        const SessionId id = id_of(slot);
        if (!sessions_[id].attached) return;
        trace("detach", id, {});
        sessions_[id].attached = false;  // nothing may reach it from here on
        router_->detach(id);
        check(id);
        std::erase_if(task_owners_, [id](const auto& entry) { return entry.second == id; });
        ++generation_[slot];
    }

    // ----- session side -----

    void session_line(std::size_t slot, std::string line) {
        const SessionId id = id_of(slot);
        trace("session", id, line);
        note_session_line(id, line);
        router_->on_session_line(id, line);
        check(id);
    }

    // Record what a session line promises: a usable id on anything but a well-formed response
    // will get exactly one reply.
    void note_session_line(SessionId session, const std::string& line) {
        SessionModel& s = sessions_[session];
        std::string copy = line;
        wire::Envelope e;
        if (scanner_.scan(copy, e) != wire::ScanStatus::ok) return;
        for (const wire::Span* span :
             {&e.id, &e.progress_token, &e.reported_token, &e.request_id, &e.subscription_id}) {
            if (!span->empty()) s.own_tokens.insert(std::string(span->in(copy)));
        }
        if (!e.progress_token.empty())
            s.progress_tokens.insert(std::string(e.progress_token.in(copy)));
        const bool usable = e.id_kind == wire::IdKind::string || e.id_kind == wire::IdKind::integer;
        const bool good_response = e.jsonrpc_ok && !e.malformed && e.is_response();
        if (usable && !good_response) ++s.awaiting[std::string(e.id.in(copy))];
        if (e.is_request()) senders_[normalized(copy, e)].insert(session);
    }

    // (Each decision is its own statement: the order of operands of + is unspecified, and
    // an input must mean the same with every compiler.)
    void session_initialize(std::size_t slot) {
        const std::string id = in_.pick(kSessionIds);
        const std::string version = "\"" + std::string(in_.pick(kVersions)) + "\"";
        const std::string capabilities = in_.pick(kCapabilities);
        // Any field may hold a value of another type (a number for the version, ...).
        const std::uint8_t odd = in_.byte();
        const std::string odd_value = in_.pick(fuzz::kAnyJson);
        const std::string client_info = (odd & 0x30) == 0x10 ? odd_value
                                        : (odd & 0x30) == 0x20
                                            ? R"({"name":)" + odd_value + R"(,"version":"1"})"
                                        : (odd & 0x30) == 0x30
                                            ? R"({"name":"fuzz","version":)" + odd_value + "}"
                                            : std::string(R"({"name":"fuzz","version":"1"})");
        session_line(slot, R"({"jsonrpc":"2.0","id":)" + id +
                               R"(,"method":"initialize","params":{"protocolVersion":)" +
                               ((odd & 1) != 0 ? odd_value : version) +
                               R"(,"capabilities":)" + ((odd & 2) != 0 ? odd_value : capabilities) +
                               R"(,"clientInfo":)" + client_info + "}}");
    }

    std::string request_params(std::string_view method) {
        std::string params = "{";
        const std::uint8_t bits = in_.byte();
        if (method == "logging/setLevel")
            params += R"("level":")" + std::string(in_.pick(kLevels)) + "\",";
        if (method.starts_with("resources/"))
            params += R"("uri":")" + std::string(in_.pick(kUris)) + "\",";
        if (method.starts_with("tasks/"))
            params += R"("taskId":")" + std::string(in_.pick(kTasks)) + "\",";
        if (method == "tools/call") params += R"("name":"echo","arguments":{"id":1},)";
        if ((bits & 1) != 0) params += R"("task":{"ttl":1000},)";
        if ((bits & 6) != 0) {
            params += R"("_meta":{)";
            if ((bits & 2) != 0)
                params += R"("progressToken":)" + std::string(in_.pick(kTokens)) + ",";
            if ((bits & 4) != 0) {
                params += R"("io.modelcontextprotocol/related-task":{"taskId":")" +
                          std::string(in_.pick(kTasks)) + "\"},";
            }
            params.back() = '}';
            params += ',';
        }
        if (params.size() > 1) params.pop_back();
        return params + "}";
    }

    void session_request(std::size_t slot) {
        const std::string method = in_.pick(kMethods);
        const std::string id = in_.pick(kSessionIds);
        session_line(slot, R"({"jsonrpc":"2.0","id":)" + id + R"(,"method":")" + method +
                               R"(","params":)" + request_params(method) + "}");
    }

    void session_cancel(std::size_t slot) {
        session_line(
            slot,
            std::string(
                R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":)") +
                in_.pick(kSessionIds) + R"(,"reason":"fuzz"}})");
    }

    // The session answers one of the server's requests it was given (or one it was not).
    void session_answer(std::size_t slot) {
        SessionModel& s = sessions_[id_of(slot)];
        const std::string id = !s.asked.empty() && in_.byte() < 224
                                   ? s.asked[in_.below(s.asked.size())]
                                   : std::string("\"mcpd-1\"");
        const char* results[] = {R"("result":{"action":"accept","content":{}})",
                                 R"("error":{"code":-1,"message":"declined"})",
                                 R"("result":{"task":{"taskId":"client-task","status":"working"}})",
                                 R"("result":{"roots":[]})"};
        session_line(slot, R"({"jsonrpc":"2.0","id":)" + id + "," + in_.pick(results) + "}");
    }

    void session_notification(std::size_t slot) {
        SessionModel& s = sessions_[id_of(slot)];
        switch (in_.below(4)) {
            case 0: {
                const std::string token = !s.asked_tokens.empty() && in_.flag()
                                              ? s.asked_tokens[in_.below(s.asked_tokens.size())]
                                              : std::string(in_.pick(kTokens));
                session_line(
                    slot,
                    R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":)" +
                        token + R"(,"progress":1}})");
                break;
            }
            case 1:
                session_line(slot,
                             R"({"jsonrpc":"2.0","method":"notifications/roots/list_changed"})");
                break;
            case 2:
                session_line(
                    slot,
                    R"({"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"task-1"}})");
                break;
            default:
                session_line(
                    slot,
                    R"({"jsonrpc":"2.0","method":"notifications/custom","params":{"x":[1,2]}})");
                break;
        }
    }

    // ----- child side -----

    void child_ready() {
        if (child_.ready) return;
        child_.ready = true;
        child_.modern = in_.byte() % 4 == 0;
        env_.child_up = true;
        const std::string version = child_.modern ? "2026-07-28" : in_.pick(kVersions);
        const nlohmann::json result = {{"protocolVersion", version},
                                       {"capabilities",
                                        {{"tools", {{"listChanged", true}}},
                                         {"resources", {{"subscribe", true}}},
                                         {"tasks", {{"list", nlohmann::json::object()}}}}},
                                       {"serverInfo", {{"name", "fuzz"}, {"version", "1"}}}};
        trace(child_.modern ? "child ready (modern)" : "child ready", 0, version);
        router_->on_child_ready(result, version, child_.modern);
        check(0);
    }

    // The process dies; the next one counts its ids from the start again. The last lines it
    // was sent may never have left mcpd (its unwritten stdin, the first one perhaps in part):
    // the router sends again those of them that are requests still open.
    void child_gone() {
        const std::deque<std::string> sent = std::move(child_.received_lines);
        const std::size_t tail = sent.empty() ? 0 : in_.byte() % (sent.size() + 1);
        std::string unwritten;
        if (tail < sent.size() && in_.byte() % 2 == 0) {
            const std::string& cut = sent[sent.size() - tail - 1];
            unwritten = cut.substr(cut.size() / 2) + "\n";
        }
        for (std::size_t i = sent.size() - tail; i < sent.size(); ++i) unwritten += sent[i] + "\n";
        child_ = ChildModel{};
        env_.child_up = false;
        trace("child gone", 0, unwritten);
        router_->on_child_gone("fuzz: the server crashed", unwritten);
        env_.next_id = kChildIdBase + kHandshakeIds;
        check(0);
    }

    void child_line(const std::string& line) {
        std::string copy = line;
        wire::Envelope e;
        // The daemon passes on only JSON-RPC lines, and answers the child's pings itself.
        if (scanner_.scan(copy, e) != wire::ScanStatus::ok || !e.jsonrpc_ok) return;
        if (e.is_request() && e.method == "ping") return;
        if (!child_.ready) return;
        trace("child says", 0, copy);
        child_said_ = copy;
        router_->on_child_message(copy, e);
        check(0);
        child_said_.clear();
        reply_owner_ = 0;
        reply_shared_ = false;
        answering_listen_ = false;
    }

    void child_answer() {
        if (child_.open.empty()) return;
        const std::size_t index = in_.below(child_.open.size());
        const Received r = child_.open[index];
        child_.open.erase(child_.open.begin() + static_cast<std::ptrdiff_t>(index));
        child_.answered.push_back(r.raw_id);
        reply_owner_ = r.owner;
        reply_shared_ = shared_state_request(r.method);
        answering_listen_ = child_.modern && r.method == "subscriptions/listen";
        const std::string task = in_.pick(kTasks);
        const std::string results[] = {
            R"("result":{})",
            R"("error":{"code":-32000,"message":"no"})",
            R"("result":{"task":{"taskId":")" + task + R"(","status":"working"}})",
            R"("result":{"resultType":"task","taskId":")" + task + R"("})",
            R"("result":{"_meta":{"io.modelcontextprotocol/subscriptionId":)" +
                (r.method == "subscriptions/listen" ? r.raw_id : std::string("\"other\"")) + "}}",
            R"("result":{"_meta":{"io.modelcontextprotocol/subscriptionId":{"x":1}}})",
            R"("result" : {"content":[{"type":"text","text":"\u00e9"}]} )"};
        child_line(R"({"jsonrpc":"2.0","id":)" + r.raw_id + "," + in_.pick(results) + "}");
    }

    // The child's answer could not be used (too large, not JSON): the daemon reports it lost.
    void child_reply_lost() {
        std::string id = std::to_string(kChildIdBase + in_.below(16));
        if (!child_.open.empty() && in_.byte() < 224) {
            const std::size_t index = in_.below(child_.open.size());
            id = child_.open[index].raw_id;
            reply_owner_ = child_.open[index].owner;
            reply_shared_ = shared_state_request(child_.open[index].method);
            child_.answered.push_back(id);
            child_.open.erase(child_.open.begin() + static_cast<std::ptrdiff_t>(index));
        }
        trace("child reply lost", 0, id);
        router_->on_child_reply_lost(id, "fuzz: the reply was over max_message_bytes",
                                     "reply too large");
        check(0);
        reply_owner_ = 0;
        reply_shared_ = false;
    }

    // An answer to something the child was not asked, or was asked and already answered.
    void child_stray_answer() {
        std::string id = std::to_string(kChildIdBase + in_.below(64));
        if (!child_.answered.empty() && in_.flag())
            id = child_.answered[in_.below(child_.answered.size())];
        if (in_.byte() % 8 == 0) id = "\"x\"";
        child_line(R"({"jsonrpc":"2.0","id":)" + id + R"(,"result":{"late":true}})");
    }

    void child_progress() {
        const std::string token = !child_.tokens.empty() && in_.byte() < 224
                                      ? child_.tokens[in_.below(child_.tokens.size())]
                                      : std::string(in_.pick(kTokens));
        child_line(
            R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":)" +
            token + R"(,"progress":2,"total":3}})");
    }

    void child_notification() {
        switch (in_.below(5)) {
            case 0:
                child_line(
                    std::string(
                        R"({"jsonrpc":"2.0","method":"notifications/message","params":{"level":")") +
                    in_.pick(kLevels) + R"(","data":"x"}})");
                break;
            case 1:
                child_line(
                    std::string(
                        R"({"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":")") +
                    in_.pick(kUris) + R"("}})");
                break;
            case 2:
                child_line(R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})");
                break;
            case 3:
                child_line(
                    R"({"jsonrpc":"2.0","method":"notifications/elicitation/complete","params":{"elicitationId":"e"}})");
                break;
            default:
                child_line(std::string(in_.chunk()));
                break;
        }
    }

    void child_task_notification() {
        const std::string task = in_.pick(kTasks);
        if (in_.flag()) {
            child_line(
                R"({"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":")" +
                task + R"(","status":"completed"}})");
        } else {
            child_line(
                R"({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":1,"_meta":{"io.modelcontextprotocol/related-task":{"taskId":")" +
                task + R"("}}}})");
        }
    }

    // The server asks a client something (sampling, elicitation, roots).
    void child_request() {
        const std::uint64_t n = child_.next_request++;
        const std::string ids[] = {std::to_string(500000 + n),
                                   "\"c-" + std::to_string(n) + "\"",
                                   R"({"k":1})",
                                   "[1]",
                                   "1.5",
                                   "null"};
        const std::string id = ids[in_.byte() % 8 < 6 ? in_.byte() % 2 : in_.below(6)];
        const char* methods[] = {"sampling/createMessage", "elicitation/create", "roots/list",
                                 "custom/ask"};
        const char* params[] = {
            R"({"messages":[],"maxTokens":10)",
            R"({"messages":[],"maxTokens":1,"includeContext":"thisServer","tools":[])",
            R"({"message":"m","requestedSchema":{"type":"object"})",
            R"({"mode":"url","url":"https://x","message":"m")", "{"};
        const std::string method = in_.pick(methods);
        std::string line =
            R"({"jsonrpc":"2.0","id":)" + id + R"(,"method":")" + method + R"(","params":)";
        line += in_.pick(params);
        // The fields mcpd reads to pick a capability, with values of any type.
        const char* read_fields[] = {"includeContext", "mode", "tools", nullptr};
        if (const char* field = in_.pick(read_fields)) {
            const std::string value = in_.pick(fuzz::kAnyJson);
            line += std::string(line.back() == '{' ? "" : ",") + "\"" + field + "\":" + value;
        }
        const std::uint8_t bits = in_.byte();
        if ((bits & 3) != 0) {
            line += std::string(line.back() == '{' ? "" : ",") + R"("_meta":{)";
            if ((bits & 1) != 0) line += R"("progressToken":"cp)" + std::to_string(n) + "\"";
            if ((bits & 2) != 0) {
                line += std::string((bits & 1) != 0 ? "," : "") +
                        R"("io.modelcontextprotocol/related-task":{"taskId":")" + in_.pick(kTasks) +
                        "\"}";
            }
            line += "}";
        }
        line += "}}";
        ++child_.outgoing[id];
        child_.outgoing_list.push_back(id);
        child_line(line);
    }

    // The child gives up on one of its requests, or ends a listen stream.
    void child_cancel() {
        std::string target = std::to_string(kChildIdBase + in_.below(16));
        if (!child_.outgoing_list.empty() && in_.flag()) {
            target = child_.outgoing_list[in_.below(child_.outgoing_list.size())];
            // Once cancelled, any answer the router still sends for it would be a second one.
            child_.outgoing[target] = 0;
        } else if (!child_.listens.empty() && in_.flag()) {
            target = child_.listens[in_.below(child_.listens.size())];
        }
        child_line(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":)" +
                   target + R"(,"reason":"fuzz"}})");
    }

    // A modern stream's notification, naming the listen request by its id.
    void child_subscription_notification() {
        std::string stream = std::to_string(kChildIdBase + in_.below(16));
        if (!child_.listens.empty() && in_.byte() < 224)
            stream = child_.listens[in_.below(child_.listens.size())];
        child_line(
            R"({"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a","_meta":{"io.modelcontextprotocol/subscriptionId":)" +
            stream + "}}}");
    }

    // Time passes: by a step, or to the router's next deadline.
    void tick() {
        constexpr std::chrono::milliseconds kSteps[] = {1ms, 500ms, 1000ms, 2500ms, 11000ms, 0ms};
        const std::chrono::milliseconds step = in_.pick(kSteps);
        const std::optional<TimePoint> deadline = router_->next_deadline();
        if (step.count() > 0) {
            env_.now_ += step;
        } else if (deadline && *deadline > env_.now_) {
            env_.now_ = *deadline;
        }
        router_->on_timer();
        check(0);
    }

    // The registry entry changed (the daemon then restarts the server).
    void reconfigure() {
        config::ServerConfig config;
        config.name = "fuzz";
        config.command = "fuzz-server";
        configure(config);
        router_->set_config(config);
    }

    // ----- invariants -----

    void check(SessionId cause) {
        std::size_t attached = 0;
        for (const auto& [id, s] : sessions_) {
            attached += s.attached ? 1 : 0;
            FUZZ_CHECK(router_->has_session(id) == s.attached,
                       "the router and the fuzz script disagree on who is attached");
        }
        FUZZ_CHECK(router_->session_count() == attached && router_->summaries().size() == attached,
                   "the router counts its sessions wrongly");
        std::vector<std::string> to_child;
        to_child.swap(env_.to_child);
        for (std::string& line : to_child) check_child_line(line, cause);
        std::vector<std::pair<SessionId, std::string>> to_sessions;
        to_sessions.swap(env_.to_sessions);
        for (auto& [session, line] : to_sessions) check_session_line(session, line);
    }

    wire::Envelope valid_message(std::string& line, const char* where) {
        wire::Envelope e;
        FUZZ_CHECK(scanner_.scan(line, e) == wire::ScanStatus::ok && e.jsonrpc_ok && !e.malformed,
                   std::string("mcpd wrote an invalid JSON-RPC message to ") + where + ": " + line);
        return e;
    }

    void check_child_line(std::string& line, SessionId cause) {
        trace("  to child", cause, line);
        const wire::Envelope e = valid_message(line, "the child");
        const std::string raw_id(e.id.in(line));
        if (e.is_request()) {
            std::uint64_t id = 0;
            FUZZ_CHECK(e.id_kind == wire::IdKind::integer && is_integer(raw_id, id) &&
                           env_.allocated.contains(id),
                       "a request reached the child without an id mcpd allocated: " + line);
            FUZZ_CHECK(child_.ids_seen.insert(id).second,
                       "the child got the same request id twice: " + line);
            if (!e.progress_token.empty()) {
                const std::string token(e.progress_token.in(line));
                FUZZ_CHECK(token.starts_with("\"mcpd-p"),
                           "a session's progress token reached the child: " + line);
                child_.tokens.push_back(token);
            }
            const auto senders = senders_.find(normalized(line, e));
            const SessionId owner = senders != senders_.end() && senders->second.size() == 1
                                        ? *senders->second.begin()
                                        : 0;
            child_.open.push_back(Received{raw_id, e.method, owner});
            child_.received_lines.push_back(line);
            if (child_.received_lines.size() > 32) child_.received_lines.pop_front();
            if (e.method == "subscriptions/listen") child_.listens.push_back(raw_id);
            return;
        }
        if (e.is_response()) {
            auto it = child_.outgoing.find(raw_id);
            FUZZ_CHECK(
                it != child_.outgoing.end() && it->second > 0,
                "the child got an answer to a request it did not send, or a second one: " + line);
            --it->second;
            return;
        }
        if (e.method == "notifications/cancelled") {
            const std::string target(e.request_id.in(line));
            const auto open = std::find_if(child_.open.begin(), child_.open.end(),
                                           [&](const Received& r) { return r.raw_id == target; });
            FUZZ_CHECK(open != child_.open.end(),
                       "the child was told to cancel a request it is not working on: " + line);
            // Only a session's own step (its cancel, its leaving) may cancel its requests. A
            // subscribe or setLevel passes to a waiting session when its sender leaves, and
            // is cancelled when the last of them goes.
            if (cause != 0 && open->owner != 0 && !shared_state_request(open->method)) {
                FUZZ_CHECK(open->owner == cause,
                           "a session cancelled another session's request: " + line);
            }
            child_.answered.push_back(open->raw_id);
            child_.open.erase(open);
        }
    }

    void check_session_line(SessionId session, std::string& line) {
        trace("  to session", session, line);
        SessionModel& s = sessions_[session];
        FUZZ_CHECK(s.attached, "a line went to session " + std::to_string(session) +
                                   " after it detached: " + line);
        const wire::Envelope e = valid_message(line, "a session");
        // The child's own words, passed on unchanged. An answer never is: its id is mcpd's
        // rewrite even when the bytes come out the same (the session chose as its id the very
        // number mcpd gave the child for it), so it is checked, and its task recorded, as one.
        if (line == child_said_ && !e.is_response()) {
            check_task_owner(session, e, line);
            return;
        }
        check_no_leak(s, e, line);
        const std::string raw_id(e.id.in(line));
        if (e.is_response()) {
            // A subscribe or setLevel answers every session that waited on it (or took it
            // over when its sender left); each still only gets ids it sent (below).
            if (reply_owner_ != 0 && !reply_shared_) {
                FUZZ_CHECK(session == reply_owner_, "the answer to session " +
                                                        std::to_string(reply_owner_) +
                                                        "'s request went to session " +
                                                        std::to_string(session) + ": " + line);
            }
            if (!e.created_task_id.empty()) task_owners_[e.created_task_id] = session;
            if (e.id_kind == wire::IdKind::absent || e.id_kind == wire::IdKind::null) {
                FUZZ_CHECK(e.has_error, "a result without an id: " + line);
                return;
            }
            auto it = s.awaiting.find(raw_id);
            FUZZ_CHECK(it != s.awaiting.end() && it->second > 0,
                       "session " + std::to_string(session) +
                           " got a reply to a request it is not waiting on: " + line);
            --it->second;
            return;
        }
        if (e.is_request()) {
            FUZZ_CHECK(raw_id.starts_with("\"mcpd-") && !raw_id.starts_with("\"mcpd-p"),
                       "a server request reached a session without an mcpd id: " + line);
            s.asked.push_back(raw_id);
            if (!e.progress_token.empty()) s.asked_tokens.emplace_back(e.progress_token.in(line));
            return;
        }
        if (e.method == "notifications/progress") {
            FUZZ_CHECK(s.progress_tokens.contains(std::string(e.reported_token.in(line))),
                       "progress on a token this session never sent: " + line);
        }
        if (e.method == "notifications/cancelled") {
            const std::string target(e.request_id.in(line));
            FUZZ_CHECK(
                s.own_tokens.contains(target) ||
                    std::find(s.asked.begin(), s.asked.end(), target) != s.asked.end(),
                "a cancellation naming a request this session neither sent nor received: " + line);
        }
        if (!e.subscription_id.empty()) {
            FUZZ_CHECK(s.own_tokens.contains(std::string(e.subscription_id.in(line))),
                       "a stream notification naming a stream this session did not open: " + line);
        }
    }

    // A notification tied to a task reaches only the session the task was created for.
    void check_task_owner(SessionId session, const wire::Envelope& e, std::string_view line) {
        if (child_.modern || e.is_request()) return;
        std::string task;
        if (e.method == "notifications/tasks/status") {
            task = e.task_id;
        } else if (!e.related_task_id.empty() && e.method != "notifications/message" &&
                   e.method != "notifications/resources/updated") {
            task = decoded(e.related_task_id.in(line));
        } else {
            return;
        }
        const auto owner = task_owners_.find(task);
        FUZZ_CHECK(owner != task_owners_.end() && owner->second == session,
                   "a task's notification went to a session that does not own the task: " +
                       std::string(line));
    }

    // No token mcpd made up for the child reaches a session that did not send those bytes.
    // Only the fields mcpd rewrites in this kind of message count: anything else is the
    // child's own content, passed on as it wrote it.
    void check_no_leak(const SessionModel& s, const wire::Envelope& e, std::string_view line) {
        std::vector<const wire::Span*> rewritten;
        if (e.is_response()) rewritten.push_back(&e.id);
        if (e.is_response() && answering_listen_) rewritten.push_back(&e.subscription_id);
        if (e.method == "notifications/progress") rewritten.push_back(&e.reported_token);
        if (e.method == "notifications/cancelled") rewritten.push_back(&e.request_id);
        if (e.is_notification() && child_.modern) rewritten.push_back(&e.subscription_id);
        for (const wire::Span* span : rewritten) {
            if (span->empty()) continue;
            const std::string token(span->in(line));
            std::uint64_t value = 0;
            const bool child_id = is_integer(token, value) && env_.allocated.contains(value);
            const bool own_token = token.starts_with("\"mcpd-p");
            FUZZ_CHECK(!(child_id || own_token) || s.own_tokens.contains(token),
                       "a child-side id or token leaked to a session: " + std::string(line));
        }
    }

    FuzzInput& in_;
    Env env_;
    std::unique_ptr<Router> router_;
    wire::EnvelopeScanner scanner_{1024 * 1024};
    std::map<SessionId, SessionModel> sessions_;
    std::array<SessionId, kSlots> generation_{};
    ChildModel child_;
    std::map<std::string, std::set<SessionId>> senders_;  // normalized request → who sent it
    std::map<std::string, SessionId> task_owners_;  // task id → the session it was created for
    std::string child_said_;                        // the child line being handled
    SessionId reply_owner_ = 0;
    bool reply_shared_ = false;  // the child's current answer is to a subscribe or setLevel      // who the reply to the child's current answer belongs to
    bool answering_listen_ = false;  // the child's current answer ends a listen stream
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzInput in(data, size);
    Harness harness(in);
    harness.run();
    return 0;
}
