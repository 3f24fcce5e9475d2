#include "daemon/mux/replay_state.h"

#include <nlohmann/json.hpp>

#include "common/json_read.h"
#include "daemon/mux/peer_names.h"

namespace mcpd {

using nlohmann::json;

void ReplayState::tools_listed(const json& tools, bool first_page) {
    if (first_page) hints_.clear();
    if (!tools.is_array()) return;
    for (const json& tool : tools) {
        if (hints_.size() >= kMaxTools) return;
        const std::string* name = json_read::string_at(tool, "name");
        if (name == nullptr || name->size() > kMaxNameBytes) continue;
        const json* annotations = json_read::object_at(tool, "annotations");
        ToolHints hints;
        if (annotations != nullptr) {
            hints.read_only = json_read::bool_at(*annotations, "readOnlyHint");
            hints.idempotent = json_read::bool_at(*annotations, "idempotentHint");
            hints.destructive = json_read::bool_at(*annotations, "destructiveHint");
        }
        hints_[*name] = hints;
    }
}

std::optional<ToolHints> ReplayState::hints(std::string_view tool) const {
    const auto it = hints_.find(tool);
    if (it == hints_.end()) return std::nullopt;
    return it->second;
}

}  // namespace mcpd
