#include "daemon/mux/peer_names.h"

#include <algorithm>
#include <array>

namespace mcpd {

namespace {

// Every request a client may send a server, in the revisions mcpd speaks; sorted for the
// binary search.
constexpr std::array<std::string_view, 19> kMethods = {"completion/complete",
                                                       "initialize",
                                                       "logging/setLevel",
                                                       "ping",
                                                       "prompts/get",
                                                       "prompts/list",
                                                       "resources/list",
                                                       "resources/read",
                                                       "resources/subscribe",
                                                       "resources/templates/list",
                                                       "resources/unsubscribe",
                                                       "server/discover",
                                                       "subscriptions/listen",
                                                       "tasks/cancel",
                                                       "tasks/get",
                                                       "tasks/list",
                                                       "tasks/result",
                                                       "tools/call",
                                                       "tools/list"};

constexpr bool sorted() {
    for (std::size_t i = 1; i < kMethods.size(); ++i)
        if (!(kMethods[i - 1] < kMethods[i])) return false;
    return true;
}
static_assert(sorted());

bool continuation(char c) {
    return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

}  // namespace

std::string_view cut_to(std::string_view text, std::size_t max_bytes) {
    if (text.size() <= max_bytes) return text;
    std::size_t end = max_bytes;
    // Back to the start of the sequence that would be cut (a lead byte, or ASCII).
    while (end > 0 && continuation(text[end])) --end;
    return text.substr(0, end);
}

std::string_view counted_method(std::string_view method) {
    const auto found = std::lower_bound(kMethods.begin(), kMethods.end(), method);
    return found != kMethods.end() && *found == method ? *found : kUnlisted;
}

void ListedNames::add(std::string_view name) {
    if (name.empty() || name.size() > kMaxNameBytes || names_.size() >= kMaxListedNames) return;
    names_.emplace(name);
}

}  // namespace mcpd
