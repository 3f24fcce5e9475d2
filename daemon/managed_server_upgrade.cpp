// ManagedServer: its state carried across an upgrade in place (docs/UPGRADE.md). A running
// process is handed to the new binary as it is: its pipes stay open across the exec, the
// handshake it completed with mcpd is not repeated, and the lines it had begun to write are
// read on from where they stopped.
#include <unordered_set>

#include "common/descriptors.h"
#include "common/log.h"
#include "daemon/managed_server.h"

namespace mcpd {

std::string ManagedServer::why_not_carried(bool& passing) const {
    passing = true;
    if (!supervisor_.carriable()) {
        return supervisor_.state() == ServerState::running
                   ? "a health ping of mcpd's waits for its answer"
                   : "it is " + std::string(to_string(supervisor_.state()));
    }
    if (!draining_.empty()) return "an exited process of it is still draining its output";
    if (child_ == nullptr)
        return supervisor_.without_process() ? router_.why_not_carried() : "it has no process";
    if (handshake_ == nullptr || !handshake_->settled())
        return "mcpd's own request to it waits for an answer";
    if (std::string why = router_.why_not_carried(); !why.empty()) return why;
    return child_->why_not_carried();
}

std::optional<CarriedProcess> ManagedServer::carried_process() const {
    if (child_ == nullptr || handshake_ == nullptr || ids_ == nullptr) return std::nullopt;
    CarriedProcess p;
    p.pid = child_->pid();
    p.tag = child_->mark().tag;
    p.stdin_fd = child_->stdin_fd();
    p.stdout_fd = child_->stdout_fd();
    p.stderr_fd = child_->stderr_fd();
    p.begun_stdout = child_->begun_stdout();
    p.begun_stderr = child_->begun_stderr();
    p.next_id = ids_->peek();
    p.initialize_result = initialize_result_;
    p.protocol_version = handshake_->protocol_version();
    p.modern = handshake_->modern();
    p.abandoned.assign(handshake_->abandoned().begin(), handshake_->abandoned().end());
    const auto idle = timers_.find(TimerKind::idle);
    p.idle_armed = idle != timers_.end() && idle->second->pending();
    p.logs = logs_.tail(logs_.lines());
    return p;
}

std::optional<CarriedBox> ManagedServer::carried_box() const {
    if (!sandbox_plan_ && !cgroup_.active()) return std::nullopt;
    CarriedBox box;
    if (sandbox_plan_) {
        box.boxed = true;
        box.enforced = sandbox_plan_->enforced;
        box.unenforced = sandbox_plan_->unenforced;
    }
    const ServerCgroup::Carried cgroup = cgroup_.carried();
    box.cgroup_leaf = cgroup.leaf;
    box.ended_leaves = cgroup.ended;
    box.oom_kills = cgroup.oom_kills;
    box.counted = cgroup.counted;
    return box;
}

Result<Done> ManagedServer::take_over(const nlohmann::json& supervisor,
                                      const std::optional<CarriedProcess>& process,
                                      const std::optional<CarriedBox>& box) {
    if (box) {
        // The box is the kernel's, held by the process: only how it was enforced (for status)
        // and the cgroup's leaves and counts are mcpd's to know again.
        if (Result<Done> leaves = cgroup_.restore({box->cgroup_leaf, box->ended_leaves, box->oom_kills, box->counted});
            !leaves)
            return permanent_failure("server '" + config_.name + "': " + leaves.error());
        if (box->boxed) {
            sandbox::Plan plan;
            plan.active = true;
            plan.enforced = box->enforced;
            plan.unenforced = box->unenforced;
            sandbox_plan_ = std::move(plan);
        }
    }
    if (Result<Done> restored = supervisor_.restore(supervisor); !restored) return restored;
    if (!process) return Done{};
    SpawnedProcess taken;
    taken.pid = process->pid;
    taken.tag = process->tag;
    taken.stdin_fd = UniqueFd(process->stdin_fd);
    taken.stdout_fd = UniqueFd(process->stdout_fd);
    taken.stderr_fd = UniqueFd(process->stderr_fd);
    // Kept open across the exec only: the next exec (a server's) must not inherit them.
    for (const int fd : {process->stdin_fd, process->stdout_fd, process->stderr_fd})
        set_close_on_exec(fd);
    for (const std::string& line : process->logs) logs_.append(line);
    watch_child(std::move(taken));
    child_->resume_begun(process->begun_stdout, process->begun_stderr);
    ids_ = std::make_unique<ChildIds>(process->next_id);
    handshake_ = std::make_unique<Handshake>(*ids_, handshake_callbacks(child_.get()));
    initialize_result_ = process->initialize_result;
    handshake_->restore_ready(
        initialize_result_, process->protocol_version, process->modern,
        std::unordered_set<std::uint64_t>(process->abandoned.begin(), process->abandoned.end()));
    router_.on_child_ready(initialize_result_, handshake_->protocol_version(), handshake_->modern());
    if (process->idle_armed) supervisor_.on_sessions_changed(0);
    log::info(config_.name, "pid " + std::to_string(process->pid) + " carried across the upgrade" +
                                (process->begun_stdout.empty()
                                     ? std::string()
                                     : " (a line it had begun on stdout, " +
                                           std::to_string(process->begun_stdout.size()) +
                                           " bytes, read on)"));
    return Done{};
}

}  // namespace mcpd
