#include "daemon/server/server_cgroup.h"

#include <algorithm>

#include "daemon/sandbox/kernel_support.h"

namespace mcpd {

ServerCgroup::~ServerCgroup() {
    if (!leaf_.empty()) ended_.push_back(leaf_);
    tidy();
}

void ServerCgroup::started(std::string leaf) {
    if (!leaf_.empty()) ended_.push_back(std::move(leaf_));
    leaf_ = std::move(leaf);
    counted_ = counted_ || !leaf_.empty();
}

bool ServerCgroup::ended() {
    if (leaf_.empty()) return false;
    const std::uint64_t kills = sandbox::read_usage(leaf_).oom_kills.value_or(0);
    oom_kills_ += kills;
    ended_.push_back(std::move(leaf_));
    leaf_.clear();
    tidy();
    return kills > 0;
}

void ServerCgroup::tidy() {
    std::erase_if(ended_, [](const std::string& leaf) { return sandbox::remove_leaf(leaf); });
}

Result<Done> ServerCgroup::restore(const Carried& carried) {
    const std::string& root = sandbox::delegated_cgroup();
    const auto inside = [&root](const std::string& leaf) {
        return !root.empty() && leaf.size() > root.size() + 1 && leaf.starts_with(root + "/") &&
               leaf.find("/..") == std::string::npos && leaf.find('\0') == std::string::npos;
    };
    if ((!carried.leaf.empty() && !inside(carried.leaf)) ||
        std::any_of(carried.ended.begin(), carried.ended.end(), [&](const std::string& l) { return !inside(l); }))
        return permanent_failure("its cgroup leaves are not in mcpd's delegated cgroup " +
                                 (root.empty() ? std::string("(it has none)") : root));
    leaf_ = carried.leaf;
    ended_ = carried.ended;
    oom_kills_ = carried.oom_kills;
    counted_ = carried.counted;
    return Done{};
}

std::optional<sandbox::CgroupUsage> ServerCgroup::usage() const {
    if (leaf_.empty()) return std::nullopt;
    return sandbox::read_usage(leaf_);
}

std::optional<std::uint64_t> ServerCgroup::oom_kills() const {
    if (!counted_) return std::nullopt;
    std::uint64_t total = oom_kills_;
    if (!leaf_.empty()) total += sandbox::read_usage(leaf_).oom_kills.value_or(0);
    return total;
}

}  // namespace mcpd
