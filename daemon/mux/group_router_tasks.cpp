// A group session offers no tasks (docs/GROUPS.md, Tasks): its members' task ids are theirs,
// not unique across the group, and the group declares no `tasks` capability, so a client could
// never poll a task it was given. What the group sends a member therefore asks for none, and
// the tools that run only as tasks are left out of its lists.
#include "common/json_read.h"
#include "daemon/mux/group_router.h"
#include "daemon/mux/mcp_versions.h"

namespace mcpd {

using nlohmann::json;

namespace {

constexpr const char* kTasksExtension = "io.modelcontextprotocol/tasks";

}  // namespace

void GroupRouter::without_tasks(json& message) const {
    // A server served alone keeps its tasks: its own initialize answer declares them.
    if (!spec_.prefix) return;
    const auto params = message.find("params");
    if (params == message.end() || !params->is_object()) return;
    params->erase("task");  // 2025-11-25: task augmentation
    const auto meta = params->find("_meta");
    if (meta == params->end() || !meta->is_object()) return;
    const auto capabilities = meta->find(kMetaClientCapabilities);
    if (capabilities == meta->end() || !capabilities->is_object()) return;
    const auto extensions = capabilities->find("extensions");
    if (extensions != capabilities->end() && extensions->is_object())
        extensions->erase(kTasksExtension);  // 2026-07-28: the tasks extension
}

bool GroupRouter::only_as_task(std::size_t member, const json& tool) {
    if (!spec_.prefix) return false;
    const json* execution = json_read::object_at(tool, "execution");
    const bool required =
        execution != nullptr && json_read::string_or(*execution, "taskSupport", "") == "required";
    const std::string* name = json_read::string_at(tool, "name");
    if (name == nullptr) return required;
    // A tool may change its mind across the member's lists (a restart, a list_changed).
    auto& known = members_[member].task_only;
    if (!required) {
        if (!known.empty()) known.erase(*name);
        return false;
    }
    if (known.size() >= kMaxKnown) known.clear();
    known.insert(*name);
    return true;
}

}  // namespace mcpd
