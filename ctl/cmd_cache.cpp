// mcpctl cache clear [NAME...]: drop lazy servers' cached handshakes and lists, of the named
// servers or all of them. A server whose cache is gone starts for its next session and fills
// it again. Only root and mcpd's own user may clear the cache.
#include <string>

#include "common/control_protocol.h"
#include "common/json_read.h"
#include "ctl/command.h"

namespace mcpctl {

namespace {

mcpd::Result<nlohmann::json> build(const CommandLine& line) {
    if (line.args.empty() || line.args.front() != "clear") {
        return mcpd::permanent_failure(
            "cache needs an action: 'mcpctl cache clear [NAME...]' drops cached lists");
    }
    return mcpd::control::to_json(mcpd::control::ClearCacheRequest{
        std::vector<std::string>(line.args.begin() + 1, line.args.end())});
}

std::string entries(const nlohmann::json& of) {
    const nlohmann::json* n = mcpd::json_read::member(of, "entries");
    const std::uint64_t count = n != nullptr && n->is_number_unsigned() ? n->get<std::uint64_t>() : 0;
    return std::to_string(count) + (count == 1 ? " cache entry" : " cache entries");
}

std::string render(const nlohmann::json& result) {
    const nlohmann::json* servers = mcpd::json_read::member(result, "servers");
    if (servers == nullptr || !servers->is_array()) {
        return "dropped " + entries(result) +
               "; lazy servers start for their next session and fill it again\n";
    }
    std::string out;
    for (const nlohmann::json& s : *servers) {
        out += mcpd::json_read::string_or(s, "name", "?") + ": dropped " +
               entries(s) + "\n";
    }
    return out;
}

}  // namespace

extern const Command cmd_cache{
    .name = "cache",
    .usage = "cache clear [NAME...]",
    .summary = "drop lazy servers' cached lists",
    .help =
        "'cache clear' drops what lazy servers keep of their handshake and lists (docs/\n"
        "MULTIPLEXING.md, \"Lazy servers\"), of the named servers or of all of them, on disk and\n"
        "in mcpd. A server without a cache is cold: its next session starts its process, which\n"
        "fills the cache again ('mcpctl warm NAME' does that at once). Only root and mcpd's own\n"
        "user may clear the cache.\n",
    .options = {},
    .min_args = 1,
    .max_args = Command::kUnlimited,
    .build = build,
    .render = render,
    .exec = exec_request,
};

}  // namespace mcpctl
