#include "daemon/mux/project_placement.h"

#include <algorithm>

namespace mcpd {

namespace {

std::optional<std::size_t> index_of(std::span<const ChildView> children, const std::string& key) {
    if (key.empty()) return std::nullopt;  // a stopping child belongs to no project now
    for (std::size_t i = 0; i < children.size(); ++i) {
        if (children[i].key == key) return i;
    }
    return std::nullopt;
}

}  // namespace

std::size_t live_children(std::span<const ChildView> children) {
    return static_cast<std::size_t>(
        std::count_if(children.begin(), children.end(), [](const ChildView& c) { return c.live; }));
}

ChildRefusal child_refusal(std::span<const ChildView> children, const ChildQuota& quota) {
    const std::size_t live = live_children(children);
    if (quota.max_children > 0 && live >= quota.max_children) return ChildRefusal::server_full;
    if (quota.trusted) return ChildRefusal::none;
    if (quota.max_children > 0 && live + 1 >= quota.max_children)
        return ChildRefusal::owner_reserve;
    const auto own = static_cast<std::size_t>(
        std::count_if(children.begin(), children.end(),
                      [&](const ChildView& c) { return c.live && c.user == quota.user; }));
    if (quota.per_user > 0 && own >= quota.per_user) return ChildRefusal::user_share;
    return ChildRefusal::none;
}

bool child_available(std::span<const ChildView> children, const std::string& key,
                     const ChildQuota& quota) {
    if (index_of(children, key)) return true;
    return child_refusal(children, quota) == ChildRefusal::none;
}

AttachChoice place_session(std::span<const ChildView> children, const std::string& key, uid_t user) {
    if (const auto own = index_of(children, key)) return {AttachChoice::Kind::own, *own};
    for (std::size_t i = 0; i < children.size(); ++i) {
        if (children[i].running && !children[i].modern && !children[i].key.empty() &&
            children[i].user == user)
            return {AttachChoice::Kind::lobby, i};
    }
    return {AttachChoice::Kind::start, 0};
}

Settlement settle_session(std::span<const ChildView> children, const std::string& current,
                          const std::string& target, bool alone, bool only_roots_differ,
                          const ChildQuota& quota) {
    if (current == target) return Settlement::stay;
    const bool target_has_child = index_of(children, target).has_value();
    if (target_has_child) return Settlement::join;
    if (alone && only_roots_differ) return Settlement::rekey;
    // The child it leaves counts until reaped: no discount, or a storm of moves could run
    // more processes than max_children at once.
    return child_refusal(children, quota) == ChildRefusal::none ? Settlement::start
                                                                : Settlement::refuse;
}

std::string child_refusal_sentence(std::string_view server, const ChildQuota& quota,
                                   ChildRefusal why, std::string_view project_directory) {
    std::string sentence = "server '";
    sentence += server;
    sentence += "' ";
    switch (why) {
        case ChildRefusal::none:
        case ChildRefusal::server_full:
            sentence += "already runs " + std::to_string(quota.max_children) +
                        " children, one per project (max_children, sharing = \"project\")";
            break;
        case ChildRefusal::owner_reserve:
            sentence += "runs " + std::to_string(quota.max_children - 1) + " of its " +
                        std::to_string(quota.max_children) +
                        " children (max_children), and keeps the last for mcpd's own user";
            break;
        case ChildRefusal::user_share:
            sentence += "already runs " + std::to_string(quota.per_user) + " children for uid " +
                        std::to_string(quota.user) + " (max_children_per_user)";
            break;
    }
    sentence += ", and project ";
    sentence += project_directory;
    sentence +=
        " has none; try again when a project's sessions have ended, or raise the limit "
        "in the registry";
    return sentence;
}

}  // namespace mcpd
