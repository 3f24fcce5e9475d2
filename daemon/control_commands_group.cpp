// Attaching a group session over the control socket: a [groups.NAME] of the registry,
// `mcpctl connect a b c`, or a server with filters served alone (docs/GROUPS.md). The checks
// and the session itself are group_attach's; this is the reply and the hand-over.
#include "common/log.h"
#include "daemon/control_commands.h"
#include "daemon/daemon.h"
#include "daemon/group_attach.h"

namespace mcpd {

void ControlCommands::attach_group(ControlConnection& c, const control::AttachRequest& request,
                                   GroupSpec spec) {
    std::variant<GroupPlan, GroupRefusal> planned =
        plan_group(daemon_, c.peer(), std::move(spec), request.cwd);
    if (const auto* refusal = std::get_if<GroupRefusal>(&planned)) {
        if (!refusal->missing.empty()) {
            // One answer, as for a name that does not exist.
            const std::string asked = request.servers.empty() ? request.server : refusal->missing;
            const Result<std::vector<ManagedServer*>> missing = resolve(c, {asked});
            c.reply_error(control::code::not_found,
                          missing ? "no server named '" + asked + "'" : missing.error());
            return;
        }
        c.reply_error(refusal->code, refusal->message);
        return;
    }
    GroupPlan plan = std::get<GroupPlan>(std::move(planned));
    const SessionId id = plan.id;
    const PeerCredentials peer = c.peer();
    c.reply_ok(control::to_json(control::AttachResult{request.server, id, request.pass_fds}));
    if (!request.pass_fds) {
        BufferEvent bev = c.hand_over();
        if (bev == nullptr) return;  // cut off: it never read its replies
        BuiltGroup built = build_group(daemon_, std::move(plan));
        daemon_.sessions().open_group(std::move(built.group), std::move(built.instances), peer,
                                      std::move(bev), {}, nullptr);
        return;
    }
    ControlConnection* link = &c;
    c.receive_fds(
        [this, plan, peer, link](std::vector<UniqueFd> fds) {
            BufferEvent input, output;
            if (!passed_ends(*link, fds, input, output)) return;
            BuiltGroup built = build_group(daemon_, plan);
            daemon_.sessions().open_group(std::move(built.group), std::move(built.instances), peer,
                                          std::move(input), std::move(output), link);
        },
        [this, id] { daemon_.sessions().end(id, "mcpctl connect went away", true); });
}

}  // namespace mcpd
