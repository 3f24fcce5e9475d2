#include "daemon/mux/project_placement.h"

#include <algorithm>

namespace mcpd {

namespace {

std::optional<std::size_t> index_of(std::span<const ChildView> children, const std::string& key) {
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

bool child_available(std::span<const ChildView> children, const std::string& key,
                     unsigned max_children) {
    if (index_of(children, key)) return true;
    return max_children == 0 || live_children(children) < max_children;
}

Placement place_session(std::span<const ChildView> children, const std::string& key) {
    if (const auto own = index_of(children, key)) return {Placement::Kind::own, *own};
    for (std::size_t i = 0; i < children.size(); ++i) {
        if (children[i].running && !children[i].modern) return {Placement::Kind::lobby, i};
    }
    return {Placement::Kind::start, 0};
}

Settlement settle_session(std::span<const ChildView> children, const std::string& current,
                          const std::string& target, bool alone, bool only_roots_differ,
                          unsigned max_children) {
    if (current == target) return Settlement::stay;
    const bool target_has_child = index_of(children, target).has_value();
    if (target_has_child) return Settlement::join;
    if (alone && only_roots_differ) return Settlement::rekey;
    // A child it leaves alone stops as it goes: it does not count against the new one.
    const std::size_t live = live_children(children) - (alone ? 1 : 0);
    return max_children == 0 || live < max_children ? Settlement::start : Settlement::refuse;
}

std::string max_children_refusal(std::string_view server, unsigned max_children,
                                 std::string_view project_directory) {
    std::string sentence = "server '";
    sentence += server;
    sentence += "' already runs " + std::to_string(max_children) +
                " children, one per project (max_children, sharing = \"project\"), and project ";
    sentence += project_directory;
    sentence += " has none; try again when a project's sessions have ended, or raise "
                "max_children in the registry";
    return sentence;
}

}  // namespace mcpd
