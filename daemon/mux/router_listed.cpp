// Router: the tools a child lists, taken from its tools/list answers as they pass, so that
// its stats count a tool by name only when the child listed it (daemon/mux/peer_names.h),
// and, with replay = "annotated", their hints (router_replay.cpp).
#include "common/json_read.h"
#include "daemon/mux/router.h"

namespace mcpd {

using nlohmann::json;

bool Router::asks_later_page(std::string_view line) {
    const json request = parse_forwarded(line);
    const json* params = json_read::object_at(request, "params");
    return params != nullptr && json_read::member(*params, "cursor") != nullptr;
}

void Router::note_listed_tools(std::string_view line, bool first_page) {
    const json answer = parse_forwarded(line);
    const json* result = json_read::object_at(answer, "result");
    const json* tools = result != nullptr ? json_read::member(*result, "tools") : nullptr;
    if (tools == nullptr || !tools->is_array()) return;
    stats_.tools_listed(listed_tool_names(*tools), first_page);
    // Their annotations decide replay after a crash, for a server that trusts them.
    if (config_.replay == config::Replay::annotated) replay_.tools_listed(*tools, first_page);
}

std::vector<std::string> Router::listed_tool_names(const json& tools) {
    std::vector<std::string> names;
    for (const json& tool : tools) {
        if (names.size() >= kMaxListedNames) break;
        if (const std::string* name = json_read::string_at(tool, "name")) names.push_back(*name);
    }
    return names;
}

}  // namespace mcpd
