// Fuzz target: the group router (daemon/mux/group_router*), driven through its whole API.
//
// The input is a script: the client sends requests of every kind the group handles (with
// names, cursors, URIs and params of every shape), notifications, answers to the members'
// requests and raw bytes; each of three members answers what it was sent (results of every
// shape, list pages with names good and bad and cursors, errors), notifies (list_changed,
// progress, updates, cancellations), asks the client things, goes away, comes back or is
// closed. After every operation each line written is checked:
//   - every line to the client is one JSON-RPC 2.0 message object;
//   - an answer reaches the client only for a request of its own still unanswered, once;
//   - a line to a member is JSON, and an answer to a member carries the id of a request that
//     member sent the client and that was not answered yet;
//   - unanswered() is the number of the client's requests not answered (at most that once
//     the client has cancelled one);
//   - an upgrade in place, whenever the router may be carried: a new router takes what it
//     carried, carries the same, and goes on in its place under the same checks.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/mux/group_router.h"
#include "fuzz_input.h"

namespace {

using namespace mcpd;
using fuzz::FuzzInput;
using nlohmann::json;

constexpr std::size_t kMembers = 3;
constexpr std::size_t kMaxSteps = 2000;

#define GROUP_CHECK(condition, what)                                                     \
    do {                                                                                 \
        if (!(condition)) {                                                              \
            std::fprintf(stderr, "group invariant broken: %s\n", std::string(what).c_str()); \
            std::abort();                                                                \
        }                                                                                \
    } while (0)

constexpr const char* kIds[] = {"1", "2", "\"1\"", "\"a\"", "12345678901234567890", "-3", "\"\"", "7"};
constexpr const char* kMethods[] = {
    "tools/list",   "prompts/list",       "resources/list", "resources/templates/list",
    "tools/call",   "prompts/get",        "resources/read", "resources/subscribe",
    "resources/unsubscribe", "completion/complete", "logging/setLevel", "ping",
    "initialize",   "server/discover",    "tasks/get",      "custom/thing"};
constexpr const char* kNames[] = {"alpha__echo", "beta__add", "gamma__x__y", "alpha__", "echo",
                                  "alpha__secret", "", "beta__a b"};
constexpr const char* kUris[] = {"mem://a", "doc://b", "doc://c/d", "x://y", "", "mem://private/k"};
constexpr const char* kItemNames[] = {"echo", "add", "secret", "a b", "x", "", "y\u00e9"};
constexpr const char* kVersions[] = {"2025-06-18", "2024-11-05", "2025-11-25"};
constexpr const char* kCapabilities[] = {
    "{}", R"({"tools":{"listChanged":true}})", R"({"resources":{"subscribe":true,"listChanged":true},"prompts":{}})",
    R"({"logging":{},"completions":{},"tools":{}})", R"({"tools":[],"experimental":{"x":{}}})", "[]"};
constexpr const char* kNotifications[] = {
    "notifications/tools/list_changed", "notifications/prompts/list_changed",
    "notifications/resources/list_changed", "notifications/progress",
    "notifications/resources/updated", "notifications/message", "notifications/cancelled"};

// MCPD_FUZZ_TRACE=1 prints every line each way, to follow a failing input.
void trace(const char* what, std::string_view line) {
    static const bool on = std::getenv("MCPD_FUZZ_TRACE") != nullptr;
    if (on) std::fprintf(stderr, "%s %.*s\n", what, static_cast<int>(line.size()), line.data());
}

struct Env final : GroupEnvironment {
    std::vector<std::string> client;
    std::vector<std::pair<std::size_t, std::string>> members;
    void to_client(std::string_view line) override {
        trace("group->client", line);
        client.emplace_back(line);
    }
    void to_member(std::size_t member, std::string_view line) override {
        trace(member == 0 ? "group->m0" : member == 1 ? "group->m1" : "group->m2", line);
        members.emplace_back(member, std::string(line));
    }
    void note(std::string_view) override {}
};

// A request a member received from the group and has not answered.
struct Received {
    std::string id;  // as JSON text
    std::string method;
};

class Harness {
public:
    explicit Harness(FuzzInput& in) : in_(in), spec_(spec()), router_(std::make_unique<GroupRouter>(spec_, env_, 42)) {}

    void run() {
        for (std::size_t step = 0; step < kMaxSteps && !in_.empty(); ++step) {
            operation();
            check();
        }
    }

private:
    GroupSpec spec() {
        GroupSpec spec;
        spec.name = "fuzz";
        spec.prefix = in_.byte() % 5 != 0;
        for (const char* name : {"alpha", "beta", "gamma__x"}) {
            GroupMemberSpec member;
            member.server = name;
            if (in_.flag()) member.member_filters.tools.exclude = {"secret*"};
            if (in_.flag()) member.group_filters.resources.exclude = {"mem://private/*"};
            if (in_.flag()) member.server_filters.tools.allow = {"e*", "a?d"};
            spec.members.push_back(std::move(member));
        }
        return spec;
    }

    void operation() {
        switch (in_.below(13)) {
            case 0:
            case 1:
            case 2:
                client_request();
                break;
            case 3:
                client_notification();
                break;
            case 4:
                client_answer();
                break;
            case 5:
                router_->on_client_line(in_.chunk());
                break;
            case 6:
            case 7:
            case 8:
                member_answer();
                break;
            case 9:
                member_notification();
                break;
            case 10:
                member_request();
                break;
            case 11: {
                const std::size_t m = in_.below(kMembers);
                switch (in_.below(3)) {
                    case 0:
                        router_->member_down(m, "fuzz");
                        break;
                    case 1:
                        router_->member_up(m);
                        break;
                    default:
                        router_->member_closed(m, "fuzz");
                        break;
                }
                break;
            }
            case 12:
                upgrade();
                break;
        }
    }

    // An upgrade in place: when the router may be carried, a new router of the same group takes
    // what it carried and goes on in its place; it carries the same again.
    void upgrade() {
        bool lasting = false;
        if (!router_->why_not_carried(lasting).empty()) return;
        const json state = router_->carried();
        auto next = std::make_unique<GroupRouter>(spec_, env_, 7);
        const Result<Done> restored = next->restore_carried(state);
        GROUP_CHECK(restored.ok(), "a new router refused what the router carried: " +
                                       (restored.ok() ? std::string() : restored.error()));
        GROUP_CHECK(next->carried() == state, "a new router carries other than it took");
        GROUP_CHECK(next->unanswered() == router_->unanswered(), "the requests under way changed in the carry");
        router_ = std::move(next);
    }

    // A value of any type (one nlohmann cannot read, such as 1e400, as a string).
    json any_json() {
        const char* text = in_.pick(fuzz::kAnyJson);
        json value = json::parse(text, nullptr, false);
        return value.is_discarded() ? json(text) : value;
    }

    void client_request() {
        const std::string id = in_.pick(kIds);
        const std::string method = in_.pick(kMethods);
        json params = json::object();
        switch (in_.below(6)) {
            case 0:
                params["name"] = in_.pick(kNames);
                params["arguments"] = json::object();
                if (in_.flag()) params["_meta"] = {{"progressToken", in_.pick(kIds)}};
                break;
            case 1:
                params["uri"] = in_.pick(kUris);
                break;
            case 2:
                if (!cursors_.empty() && in_.flag()) {
                    params["cursor"] = cursors_[in_.below(cursors_.size())];
                } else {
                    params["cursor"] = any_json();
                }
                break;
            case 3:
                params = {{"protocolVersion", in_.pick(kVersions)}, {"capabilities", json::object()},
                          {"clientInfo", {{"name", "fuzz"}, {"version", "1"}}}};
                break;
            case 4:
                params = {{"ref", {{"type", in_.flag() ? "ref/prompt" : "ref/resource"},
                                   {"name", in_.pick(kNames)}, {"uri", in_.pick(kUris)}}},
                          {"argument", {{"name", "a"}, {"value", "b"}}}};
                break;
            default:
                params = any_json();
                break;
        }
        std::string line = R"({"jsonrpc":"2.0","id":)" + id + R"(,"method":")" + method + '"';
        if (!params.is_null()) line += R"(,"params":)" + params.dump();
        line += '}';
        // A second request with an id still awaited gets its own answer (a duplicate error).
        awaiting_.insert(id);
        trace("client->group", line);
        router_->on_client_line(line);
    }

    void client_notification() {
        switch (in_.below(4)) {
            case 0:
                router_->on_client_line(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
                break;
            case 1: {
                const std::string id = in_.pick(kIds);
                router_->on_client_line(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":)" +
                                       id + "}}");
                // A cancelled request may go unanswered (or still be answered, if it crossed
                // its answer): from now on unanswered() may count fewer than the client awaits.
                cancelled_ = true;
                break;
            }
            case 2:
                router_->on_client_line(R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":)" +
                                       std::string(in_.pick(kIds)) + R"(,"progress":1}})");
                break;
            default:
                router_->on_client_line(R"({"jsonrpc":"2.0","method":"notifications/roots/list_changed"})");
                break;
        }
    }

    void client_answer() {
        const std::string id = client_asked_.empty() || !in_.flag()
                                   ? std::string(in_.pick(kIds))
                                   : client_asked_[in_.below(client_asked_.size())];
        router_->on_client_line(R"({"jsonrpc":"2.0","id":)" + id + R"(,"result":{"role":"assistant"}})");
    }

    void member_answer() {
        const std::size_t m = in_.below(kMembers);
        if (open_[m].empty()) return;
        const std::size_t which = in_.below(open_[m].size());
        const Received request = open_[m][which];
        if (!in_.flag() || in_.below(4) != 0) open_[m].erase(open_[m].begin() + static_cast<long>(which));
        json result = json::object();
        if (request.method == "initialize") {
            result = {{"protocolVersion", in_.pick(kVersions)},
                      {"capabilities", json::parse(in_.pick(kCapabilities))},
                      {"serverInfo", {{"name", "m"}, {"version", "1"}}}};
            if (in_.flag()) result["instructions"] = in_.flag() ? json("use it") : json(7);
        } else if (request.method.ends_with("/list")) {
            json items = json::array();
            const std::size_t count = in_.below(4);
            for (std::size_t i = 0; i < count; ++i) {
                const std::string key = in_.pick(kItemNames);
                items.push_back({{"name", key}, {"uri", std::string(in_.pick(kUris))}, {"uriTemplate", "doc://{x}"}});
                if (in_.below(8) == 0) items.back() = any_json();
            }
            const char* key = request.method == "tools/list" ? "tools"
                              : request.method == "prompts/list" ? "prompts"
                              : request.method == "resources/list" ? "resources"
                                                                   : "resourceTemplates";
            result[key] = items;
            if (in_.flag()) result["nextCursor"] = in_.flag() ? json("next-" + std::to_string(in_.byte())) : json(3);
        }
        std::string line;
        switch (in_.below(5)) {
            case 0:
                line = R"({"jsonrpc":"2.0","id":)" + request.id +
                       R"(,"error":{"code":-32002,"message":"no"}})";
                break;
            case 1:
                line = R"({"jsonrpc":"2.0","id":)" + request.id + R"(,"result":)" + any_json().dump() + "}";
                break;
            default:
                line = R"({"jsonrpc":"2.0","id":)" + request.id + R"(,"result":)" + result.dump() + "}";
                break;
        }
        router_->on_member_line(m, line);
    }

    void member_notification() {
        const std::size_t m = in_.below(kMembers);
        const std::string method = in_.pick(kNotifications);
        json params = {{"progressToken", json::parse(in_.pick(kIds), nullptr, false)}, {"progress", 1},
                       {"uri", in_.pick(kUris)}, {"requestId", json::parse(in_.pick(kIds), nullptr, false)}};
        if (!member_asked_[m].empty() && in_.flag())
            params["requestId"] = json::parse(member_asked_[m][in_.below(member_asked_[m].size())]);
        router_->on_member_line(m, json{{"jsonrpc", "2.0"}, {"method", method}, {"params", params}}.dump());
    }

    void member_request() {
        const std::size_t m = in_.below(kMembers);
        const std::string id = in_.flag() ? std::to_string(in_.byte()) : "\"s" + std::to_string(in_.byte()) + '"';
        member_asked_[m].push_back(id);
        router_->on_member_line(m, R"({"jsonrpc":"2.0","id":)" + id +
                                      R"(,"method":"sampling/createMessage","params":{"messages":[]}})");
    }

    void check() {
        for (const std::string& line : env_.client) {
            const json message = json::parse(line, nullptr, false);
            GROUP_CHECK(message.is_object() && message.value("jsonrpc", "") == "2.0",
                        "a line to the client is no JSON-RPC message: " + line);
            if (message.contains("method")) {
                if (message.contains("id")) client_asked_.push_back(message["id"].dump());
                continue;
            }
            const std::string id = message["id"].dump();
            if (id == "null") continue;  // an answer to a line that was not a request
            const auto it = awaiting_.find(id);
            GROUP_CHECK(it != awaiting_.end(),
                        "the client got an answer to no request of its own still unanswered: " + line);
            awaiting_.erase(it);
            if (message.contains("result") && message["result"].is_object() &&
                message["result"].contains("nextCursor") && message["result"]["nextCursor"].is_string())
                cursors_.push_back(message["result"]["nextCursor"]);
        }
        env_.client.clear();
        for (const auto& [m, line] : env_.members) {
            const json message = json::parse(line, nullptr, false);
            GROUP_CHECK(message.is_object(), "a line to a member is not a JSON object: " + line);
            if (message.contains("method") && message.contains("id")) {
                open_[m].push_back(Received{message["id"].dump(), message.value("method", "")});
            } else if (!message.contains("method")) {
                auto& asked = member_asked_[m];
                const auto it = std::find(asked.begin(), asked.end(), message["id"].dump());
                GROUP_CHECK(it != asked.end(), "a member got an answer to nothing it asked: " + line);
                asked.erase(it);
            }
        }
        env_.members.clear();
        GROUP_CHECK(cancelled_ ? router_->unanswered() <= awaiting_.size()
                               : router_->unanswered() == awaiting_.size(),
                    "unanswered() is " + std::to_string(router_->unanswered()) + ", the client awaits " +
                        std::to_string(awaiting_.size()));
    }

    FuzzInput& in_;
    Env env_;
    GroupSpec spec_;
    std::unique_ptr<GroupRouter> router_;
    std::multiset<std::string> awaiting_;  // the client's requests not answered yet
    bool cancelled_ = false;               // the client has cancelled a request
    std::vector<std::string> cursors_;
    std::vector<std::string> client_asked_;  // ids of the requests the client was sent
    std::vector<Received> open_[kMembers];
    std::vector<std::string> member_asked_[kMembers];
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzInput in(data, size);
    Harness harness(in);
    harness.run();
    return 0;
}
