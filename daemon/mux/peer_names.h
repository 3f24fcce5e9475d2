// The names peers choose that mcpd keeps or shows, bounded (docs/STATS.md, "Names"): how long
// one may be, which method names are counted apart, and the tools a child listed, so that a
// name the server never listed is counted under "unlisted" and never gets counters of its own.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <string_view>

namespace mcpd {

// A tool or method name kept or shown (stats, metrics labels, the request log, journal fields).
inline constexpr std::size_t kMaxNameBytes = 128;
// A client's name or version from initialize's clientInfo (status, sessions, stats, logs).
inline constexpr std::size_t kMaxClientTextBytes = 128;
// Names kept of a child's list (the first ones of its tools/list answers).
inline constexpr std::size_t kMaxListedNames = 1024;
// What a name the server never listed, or a method MCP does not have, is counted as.
inline constexpr std::string_view kUnlisted = "unlisted";

// The longest prefix of `text` of at most `max_bytes` that does not end inside a UTF-8
// sequence.
std::string_view cut_to(std::string_view text, std::size_t max_bytes);

// The MCP request method `method` names, as a view of static storage; kUnlisted for any other.
std::string_view counted_method(std::string_view method);

// The tool names a child listed, from its tools/list answers: a first page replaces them, a
// later page (asked with a cursor) adds to them. At most kMaxListedNames names of at most
// kMaxNameBytes each; longer names and names past the cap are not kept (so not listed).
class ListedNames {
public:
    void clear() { names_.clear(); }
    void add(std::string_view name);
    bool contains(std::string_view name) const { return names_.find(name) != names_.end(); }
    std::size_t size() const { return names_.size(); }
    const std::set<std::string, std::less<>>& names() const { return names_; }

private:
    std::set<std::string, std::less<>> names_;
};

}  // namespace mcpd
