// Lines the router tests write as a session or a child, and the router's notes they look for.
#pragma once

#include <algorithm>
#include <string>

#include "fake_router_environment.h"

namespace mcpd::testing {

// The _meta member tying a request or notification to the task `task_id_json`.
inline std::string related(const std::string& task_id_json) {
    return R"("_meta":{"io.modelcontextprotocol/related-task":{"taskId":)" + task_id_json + "}}";
}

// A `method` request (tasks/get, tasks/result, tasks/cancel) for the task `task_id_json`.
inline std::string task_request(const std::string& raw_id, const std::string& method,
                                const std::string& task_id_json) {
    return R"({"jsonrpc":"2.0","id":)" + raw_id + R"(,"method":")" + method +
           R"(","params":{"taskId":)" + task_id_json + "}}";
}

inline std::string set_level(const std::string& id, const std::string& level) {
    return R"({"jsonrpc":"2.0","id":)" + id +
           R"(,"method":"logging/setLevel","params":{"level":")" + level + R"("}})";
}

// resources/subscribe, or resources/unsubscribe when not `on`.
inline std::string subscribe(const std::string& id, const std::string& uri, bool on = true) {
    return R"({"jsonrpc":"2.0","id":)" + id + R"(,"method":"resources/)" +
           (on ? "subscribe" : "unsubscribe") + R"(","params":{"uri":")" + uri + R"("}})";
}

inline std::string updated(const std::string& uri) {
    return R"({"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":")" +
           uri + R"("}})";
}

// Whether one of the router's notes holds `text`.
inline bool noted(const FakeRouterEnvironment& env, const std::string& text) {
    return std::any_of(env.notes.begin(), env.notes.end(), [&](const std::string& note) {
        return note.find(text) != std::string::npos;
    });
}

}  // namespace mcpd::testing
