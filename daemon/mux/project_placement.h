// sharing = "project": which child a session goes to, as pure decisions over what the
// server's children are, so that the rules are unit-tested without processes. The ServerPool
// applies them at attach (place_session) and the Daemon once the session's project is
// known (settle_session).
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace mcpd {

// One child of the server, as the decisions see it.
struct ChildView {
    std::string key;            // its project's key (Project::key)
    bool live = true;           // runs, starts or holds sessions (what max_children bounds)
    bool running = false;       // ready to answer an initialize now
    bool modern = false;        // speaks the stateless era: its sessions have no handshake
    std::size_t sessions = 0;
};

// How many children count against max_children.
std::size_t live_children(std::span<const ChildView> children);

// Whether a session of project `key` can be served: its project has a child, or fewer than
// `max_children` (0: no limit) are live.
bool child_available(std::span<const ChildView> children, const std::string& key,
                     unsigned max_children);

// Where a new session goes, whose working directory's project is `key`.
struct Placement {
    enum class Kind {
        own,    // the child of its working directory's project (`index`)
        lobby,  // a running child of another project (`index`): it answers the initialize, and
                // the session moves once its roots are known; no process starts for a guess
        start,  // a new child for its working directory's project
    };
    Kind kind = Kind::start;
    std::size_t index = 0;
};
Placement place_session(std::span<const ChildView> children, const std::string& key);

// What to do once a session's project is known: `current` is the key of the child it is on
// (and `alone` whether it is that child's only session), `target` its project's.
enum class Settlement {
    stay,    // the same project: its held lines go to this child
    rekey,   // alone, and nothing but the roots differ: this child becomes the project's
    join,    // the project has a child: move there
    start,   // a new child for the project, then move there
    refuse,  // max_children are live and the project has none (a child the session leaves
             // alone does not count: it stops as the session goes)
};
Settlement settle_session(std::span<const ChildView> children, const std::string& current,
                         const std::string& target, bool alone, bool only_roots_differ,
                         unsigned max_children);

// What a session is told when Settlement::refuse (or child_available false) keeps it out.
std::string max_children_refusal(std::string_view server, unsigned max_children,
                                 std::string_view project_directory);

}  // namespace mcpd
