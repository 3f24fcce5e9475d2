#include "daemon/group_session.h"

#include <random>

#include "common/log.h"
#include "daemon/placement.h"

namespace mcpd {

GroupSession::GroupSession(SessionId client, GroupSpec spec, std::vector<Member> members,
                           Placement& placement,
                           ClientWriter to_client)
    : client_(client),
      members_(std::move(members)),
      placement_(placement),
      send_client_(std::move(to_client)),
      router_(std::move(spec), *this, cursor_nonce()) {}

void GroupSession::to_client(std::string_view line) {
    send_client_(std::span<const std::string_view>(&line, 1));
}

void GroupSession::to_client_pieces(std::span<const std::string_view> pieces) {
    send_client_(pieces);
}

Router* GroupSession::member_router(std::size_t member, SessionId& session) {
    const Member& target = members_.at(member);
    ManagedServer* server = placement_.server_of(target.id, target.server);
    if (server == nullptr || !server->router().has_session(target.id)) return nullptr;
    session = target.id;
    return &server->router();
}

void GroupSession::to_member(std::size_t member, std::string_view line) {
    SessionId session = 0;
    if (Router* router = member_router(member, session)) {
        // A line of its own: the router may pad it for the scanner.
        std::string copy(line);
        router->on_session_line(session, copy);
    }
}

void GroupSession::to_member_scanned(std::size_t member, std::string_view line,
                                     const wire::Envelope& envelope) {
    SessionId session = 0;
    // The router reads neither the line again nor past its end; it copies what it keeps.
    if (Router* router = member_router(member, session)) router->on_session_line(session, line, envelope);
}

void GroupSession::note(std::string_view message) {
    log::info(router_.spec().name, std::string(message));
}

void GroupSession::refilter(const config::Registry& registry) {
    std::vector<GroupMemberSpec> filters = router_.spec().members;
    const config::GroupConfig* group =
        router_.spec().from_registry ? registry.find_group(router_.spec().name) : nullptr;
    for (GroupMemberSpec& member : filters) {
        if (const config::ServerConfig* server = registry.find(member.server))
            member.server_filters = server->filters;
        if (group == nullptr) continue;
        member.group_filters = group->filters;
        for (const config::GroupMember& listed : group->members) {
            if (listed.server == member.server) member.member_filters = listed.filters;
        }
    }
    router_.refilter(filters);
}

std::uint64_t cursor_nonce() {
    static std::mt19937_64 generator{std::random_device{}()};
    return generator() >> 1;
}

}  // namespace mcpd
