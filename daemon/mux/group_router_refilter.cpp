// A group session's filters changed by a reload: what the client is shown from then on, and
// telling it so.
#include "common/json_read.h"
#include "daemon/mux/group_router.h"

namespace mcpd {

using nlohmann::json;

namespace {

// The filter of one kind ("tools", "prompts", "resources") in a member's three tables.
struct KindFilters {
    const config::NameFilter *group, *member, *server;
    bool operator==(const KindFilters& other) const {
        return *group == *other.group && *member == *other.member && *server == *other.server;
    }
};

KindFilters of_kind(const GroupMemberSpec& spec, std::string_view kind) {
    const auto pick = [kind](const config::ItemFilters& filters) {
        return kind == "tools"     ? &filters.tools
               : kind == "prompts" ? &filters.prompts
                                   : &filters.resources;
    };
    return {pick(spec.group_filters), pick(spec.member_filters), pick(spec.server_filters)};
}

}  // namespace

void GroupRouter::refilter(const std::vector<GroupMemberSpec>& filters) {
    if (filters.size() != spec_.members.size()) return;
    std::set<std::string_view> changed;  // the lists whose content changed for the client
    for (std::size_t i = 0; i < filters.size(); ++i) {
        GroupMemberSpec& spec = spec_.members[i];
        for (std::string_view kind : {"tools", "prompts", "resources"}) {
            if (of_kind(spec, kind) == of_kind(filters[i], kind)) continue;
            // Its items are in the lists only while it is in the session and has the feature.
            if (active(i) && json_read::object_at(members_[i].capabilities, kind) != nullptr)
                changed.insert(kind);
        }
        spec.group_filters = filters[i].group_filters;
        spec.member_filters = filters[i].member_filters;
        spec.server_filters = filters[i].server_filters;
    }
    if (changed.empty()) return;
    const json merged = merged_capabilities();
    for (std::string_view kind : changed) {
        // A page handed out before is of the old list.
        if (kind == "resources") {
            ++epochs_["resources/list"];
            ++epochs_["resources/templates/list"];
        } else {
            ++epochs_[std::string(kind) + "/list"];
        }
        env_.note("group '" + spec_.name + "': a reload changed the " + std::string(kind) +
                  " filters; the session's list follows");
        // Told where the client was told lists may change, as when a member comes or goes.
        const json* declared = json_read::object_at(merged, kind);
        if (declared != nullptr && json_read::bool_at(*declared, "listChanged").value_or(false))
            list_changed(kind);
    }
}

}  // namespace mcpd
