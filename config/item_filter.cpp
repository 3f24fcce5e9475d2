#include "config/item_filter.h"

#include <fnmatch.h>

namespace mcpd::config {

namespace {

bool matches_any(const std::vector<std::string>& globs, const std::string& name) {
    for (const std::string& glob : globs) {
        if (::fnmatch(glob.c_str(), name.c_str(), 0) == 0) return true;
    }
    return false;
}

}  // namespace

bool NameFilter::admits_listed(std::string_view name) const {
    const std::string text(name);
    if (!allow.empty() && !matches_any(allow, text)) return false;
    return !matches_any(exclude, text);
}

std::vector<std::string>& filter_list(ItemFilters& filters, std::string_view key) {
    const bool exclude = key.starts_with("exclude_");
    const std::string_view kind = exclude ? key.substr(8) : key;
    NameFilter& filter = kind == "tools" ? filters.tools
                         : kind == "prompts" ? filters.prompts
                                             : filters.resources;
    return exclude ? filter.exclude : filter.allow;
}

}  // namespace mcpd::config
