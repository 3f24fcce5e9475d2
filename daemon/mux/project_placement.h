// sharing = "project": which child a session goes to, as pure decisions over what the
// server's children are, so that the rules are unit-tested without processes. Placement
// (daemon/placement.h) applies them at attach (place_session, child_available) and the Daemon
// once the session's project is known (settle_session).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace mcpd {

// One child of the server, as the decisions see it.
struct ChildView {
    std::string key;       // its project's key (Project::key); empty for one stopping
    bool live = true;      // has a process, or holds sessions (what max_children bounds)
    bool running = false;  // ready to answer an initialize now
    bool modern = false;   // speaks the stateless era: its sessions have no handshake
    std::size_t sessions = 0;
    uid_t user = 0;  // whose project it serves
};

// How many children count against max_children.
std::size_t live_children(std::span<const ChildView> children);

// Who asks for a new child, with the limits of the server asked.
struct ChildQuota {
    unsigned max_children = 0;  // live children of the server; 0: no limit
    unsigned per_user = 0;      // live children of one user who is not trusted; 0: no own limit
    uid_t user = 0;
    bool trusted = true;  // root or mcpd's own user: no per-user limit, and may take the
                          // last slot, which a user of allow_users never does
};

// Why no new child may start for `quota`'s user now.
enum class ChildRefusal {
    none,
    server_full,    // max_children live
    owner_reserve,  // one slot left, and it is kept for mcpd's user and root
    user_share,     // the user already has per_user live children
};
ChildRefusal child_refusal(std::span<const ChildView> children, const ChildQuota& quota);

// Whether a session of project `key` can be served: its project has a child, or a new one
// may start (child_refusal).
bool child_available(std::span<const ChildView> children, const std::string& key,
                     const ChildQuota& quota);

// Where a new session goes, whose working directory's project is `key`.
struct AttachChoice {
    enum class Kind {
        own,    // the child of its working directory's project (`index`)
        lobby,  // a running child of another project of the same user (`index`): it answers the
                // initialize, and the session moves once its roots are known; no process starts for
                // a guess
        start,  // a new child for its working directory's project
    };
    Kind kind = Kind::start;
    std::size_t index = 0;
};
// A lobby is only ever a child of the same user's: nothing of another user's child (its
// notifications, its logs) reaches a session even while it waits there.
AttachChoice place_session(std::span<const ChildView> children, const std::string& key, uid_t user);

// What to do once a session's project is known: `current` is the key of the child it is on
// (and `alone` whether it is that child's only session), `target` its project's. A child it
// leaves still counts until its process is reaped, so that a session switching its roots over
// and over never has more than max_children processes running.
enum class Settlement {
    stay,    // the same project: its held lines go to this child
    rekey,   // alone, and nothing but the roots differ: this child becomes the project's
    join,    // the project has a child: move there
    start,   // a new child for the project, then move there
    refuse,  // the project has no child and none may start (child_refusal)
};
Settlement settle_session(std::span<const ChildView> children, const std::string& current,
                          const std::string& target, bool alone, bool only_roots_differ,
                          const ChildQuota& quota);

// What a session is told when Settlement::refuse (or child_available false) keeps it out.
std::string child_refusal_sentence(std::string_view server, const ChildQuota& quota,
                                   ChildRefusal why, std::string_view project_directory);

}  // namespace mcpd
