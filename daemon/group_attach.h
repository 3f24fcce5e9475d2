// Attaching a group session, whatever carries it: a [groups.NAME] of the registry, a server
// with filters served alone, or `mcpctl connect a b c`. The checks come first (every member a
// server the peer may use, member names that cannot clash, admission on each member) and the
// group session is built from what they decided once the client's transport is there. The
// control socket's attach (control_commands_group.cpp) and the HTTP front door
// (http_front_sessions.cpp) both go through here.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "daemon/control/peer_auth.h"
#include "daemon/group_session.h"
#include "daemon/mux/project.h"

namespace mcpd {

class Daemon;
class ManagedServer;

// What a group session will be: its id and its members', each member's project, and the
// members left out from the start (a failed server) with why.
struct GroupPlan {
    SessionId id = 0;
    GroupSpec spec;
    std::vector<GroupSession::Member> members;
    std::vector<std::optional<Project>> projects;
    std::vector<std::string> failed;
};

// Why a group session may not be attached: a control::code and the sentence. `missing` names
// the member the peer may not use (or that does not exist), for the caller to say as it says
// any unknown name.
struct GroupRefusal {
    std::string_view code;
    std::string message;
    std::string missing;
};

// The checks of a group session for `peer` in directory `cwd` (may be empty).
std::variant<GroupPlan, GroupRefusal> plan_group(Daemon& daemon, const PeerCredentials& peer,
                                                 GroupSpec spec, const std::string& cwd);

struct BuiltGroup {
    std::unique_ptr<GroupSession> group;
    std::vector<ManagedServer*> instances;  // per member; null for one left out
};

// The group session of `plan`, its members placed on their instances; hand it to
// SessionTable::open_group with the client's transport.
BuiltGroup build_group(Daemon& daemon, GroupPlan plan);

// The specs of the three kinds of group session.
GroupSpec registry_group(const config::GroupConfig& group);
GroupSpec adhoc_group(const std::vector<std::string>& servers);
// The members of an ad-hoc group named as its servers joined by '+' ("github+filesystem", as
// `mcpctl connect github filesystem` names it): 2 to 64 different server names. Nullopt for a
// name without '+' (a server or a registry group), or one that is no such list.
std::optional<std::vector<std::string>> adhoc_members(std::string_view name);
GroupSpec solo_group(const config::ServerConfig& server);

}  // namespace mcpd
