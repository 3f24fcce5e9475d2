// A session's project, for sharing = "project": the set of roots its client reports
// (roots/list), or else the directory `mcpctl connect` ran in. Sessions of the same project
// share one child; the child's own roots/list is answered with the project's roots, and
// `{project}` in the entry's cwd, args and env values is the project's directory.
//
// Roots compare as a set of normalised file:// URIs: `file:///a/b`, `file://localhost/a/b/`,
// `file:/a/./b` and `file:///a//b` are one root, and the order a client lists them in does
// not matter. Pure: no file system access. The daemon then resolves each directory as the
// session's peer and keeps it only when the peer may open it (daemon/peer_project.h).
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "config/registry.h"

namespace mcpd {

struct Project {
    std::vector<std::string> roots;  // normalised URIs, sorted, no duplicates; never empty
    std::string directory;           // the first file:// root's path, or the working directory
    bool from_roots = false;         // reported by the client (else its working directory)
    uid_t user = 0;                  // whose project: sessions of two users never share a child
    // Who its child runs as, when not mcpd's user (a daemon running as root: the user's own
    // identity); not part of the key, which the user already is.
    std::optional<config::ChildIdentity> identity;

    // One string per project: equal keys, same user and same roots.
    std::string key() const;
    // The ListRootsResult the project's child is answered with.
    nlohmann::json roots_result() const;
    bool operator==(const Project&) const = default;
};

// A root URI in its one spelling: `file:///path` with `localhost` dropped, `.`/`..` and
// repeated slashes resolved, no trailing slash (but for `/` itself), and percent-escapes of
// unreserved characters decoded (others upper-cased). A URI of another scheme is kept as
// written; nothing when it is not a URI at all, or names a file on another host
// (`file://HOST/...` with a host other than `localhost`: no directory here).
std::optional<std::string> normalise_root_uri(std::string_view uri);

// The path a normalised file:// URI names (escapes decoded); nothing for another scheme.
std::optional<std::string> file_uri_path(std::string_view normalised_uri);

// A file:// URI for an absolute path, normalised.
std::string directory_uri(std::string_view absolute_path);

// The project of a client's ListRootsResult ({"roots": [{"uri": ...}, ...]}). A failure says
// what was wrong with it (no roots, a root that is not a URI); the caller falls back to the
// working directory.
Result<Project> project_from_roots(const nlohmann::json& list_roots_result);

// The project of a working directory (an absolute path).
Result<Project> project_from_directory(std::string_view absolute_path);

// `server` as the child of `project` runs it: `{project}` in cwd, args and env values becomes
// the project's directory, the cwd is that directory when the registry gives none, the
// child's roots/list is answered with the project's roots, and it runs as the project's
// identity when it has one.
config::ServerConfig config_for_project(const config::ServerConfig& server, const Project& project);

}  // namespace mcpd
