#include "daemon/server/sandbox_setup.h"

#include <dirent.h>
#include <pwd.h>
#include <unistd.h>

#include <cstdlib>

#include "common/log.h"
#include "common/private_directories.h"
#include "daemon/control/socket_directory.h"

namespace mcpd {

namespace {

std::string own_home() {
    if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/') return home;
    if (const struct passwd* account = ::getpwuid(::geteuid()); account != nullptr)
        return account->pw_dir;
    return {};
}

std::optional<std::vector<std::string>> list_directory(const std::string& path) {
    DIR* dir = ::opendir(path.c_str());
    if (dir == nullptr) return std::nullopt;
    std::vector<std::string> names;
    while (const struct dirent* entry = ::readdir(dir)) names.emplace_back(entry->d_name);
    ::closedir(dir);
    return names;
}

// What this machine can enforce, as mcpd uses it: the delegated cgroup only once mcpd could
// move itself out of its root (else it is said once, and limits fall back to rlimits).
const sandbox::KernelSupport& effective_support() {
    static const sandbox::KernelSupport support = [] {
        sandbox::KernelSupport probed = sandbox::kernel_support();
        if (probed.cgroup.empty()) return probed;
        sandbox::CgroupTree tree(probed.cgroup);
        if (Result<Done> prepared = tree.prepare(::getpid()); !prepared) {
            log::warning("the delegated cgroup " + probed.cgroup +
                         " cannot be used, limits fall back to rlimits: " + prepared.error());
            probed.cgroup.clear();
        }
        return probed;
    }();
    return support;
}

// A leaf for the next child of `server`, or empty (no delegated cgroup, or it failed: said).
std::string make_leaf(const config::ServerConfig& server, const sandbox::Plan& plan) {
    if (sandbox::delegated_cgroup().empty()) return {};  // no probe for the common case
    const sandbox::KernelSupport& support = effective_support();
    if (support.cgroup.empty()) return {};
    static unsigned serial = 0;
    Result<std::string> leaf =
        sandbox::CgroupTree(support.cgroup).make_leaf(server.name, ++serial, plan.cgroup);
    if (!leaf) {
        log::warning(server.name, "no cgroup of its own: " + leaf.error());
        return {};
    }
    return std::move(leaf).value();
}

sandbox::ChildUser child_user(const config::ServerConfig& server) {
    sandbox::ChildUser user;
    const uid_t uid = server.run_as ? server.run_as->uid : ::geteuid();
    user.root = uid == 0;
    user.other_than_mcpd = uid != ::geteuid();
    return user;
}

std::string joined(const std::vector<std::string>& sentences) {
    std::string text;
    for (const std::string& sentence : sentences) text += (text.empty() ? "" : "; ") + sentence;
    return text;
}

}  // namespace

sandbox::Placeholders sandbox_placeholders(const config::ServerConfig& server) {
    sandbox::Placeholders values;
    const std::string suffix = "/servers/" + server.name;
    if (server.run_as) {
        // Its user's own directories, which mcpd (root) never creates in that user's home.
        values.home = server.run_as->home;
        values.cache = values.home + "/.cache/mcpd" + suffix;
        values.state = values.home + "/.local/state/mcpd" + suffix;
    } else {
        values.home = own_home();
        const std::string cache = own_cache_directory();
        const std::string state = own_state_directory();
        if (!cache.empty()) values.cache = cache + suffix;
        if (!state.empty()) values.state = state + suffix;
    }
    values.project = server.project_dir.empty() ? server.cwd : server.project_dir;
    return values;
}

Result<PreparedSandbox> prepare_sandbox(const config::ServerConfig& server,
                                        const std::string& command) {
    PreparedSandbox prepared;
    if (server.sandbox.any()) {
        const sandbox::Placeholders values = sandbox_placeholders(server);
        if (!server.run_as) {
            // Made, or checked as mcpd's own and private (as its socket directory is): the box
            // writes there, and TMPDIR points there.
            if (!server.sandbox.preset.empty() && !values.cache.empty())
                prepared.tmpdir = values.cache + "/tmp";
            for (const std::string& dir : {values.cache, values.state, prepared.tmpdir}) {
                std::string error;
                if (!dir.empty() &&
                    !prepare_socket_directory(dir, SocketAccess{0600, std::nullopt}, true, error))
                    return permanent_failure("the sandbox's directory " + dir +
                                             " cannot be used: " + error);
            }
        }
        prepared.plan = sandbox::make_plan(server.sandbox, values, effective_support(),
                                           child_user(server), command, list_directory);
        if (server.sandbox.strict.value_or(false) && !prepared.plan.unenforced.empty()) {
            return permanent_failure("the sandbox asks for what this machine cannot enforce, and "
                                     "strict = true: " +
                                     joined(prepared.plan.unenforced));
        }
    }
    // Every process gets a leaf where mcpd has a delegated cgroup, for its accounting.
    prepared.cgroup_leaf = make_leaf(server, prepared.plan);
    if (prepared.cgroup_leaf.empty() && prepared.plan.cgroup.any())
        return permanent_failure("its limits need a cgroup of its own, which could not be made "
                                 "(see the log)");
    if (prepared.plan.active) {
        const uid_t uid = server.run_as ? server.run_as->uid : ::geteuid();
        const gid_t gid = server.run_as ? server.run_as->gid : ::getegid();
        prepared.child.emplace(prepared.plan, ::geteuid(), ::getegid(), uid, gid);
    }
    return prepared;
}

void log_sandbox(const std::string& server, const sandbox::Plan& plan) {
    if (!plan.enforced.empty()) log::info(server, "sandbox: " + joined(plan.enforced));
    for (const std::string& why : plan.unenforced)
        log::warning(server, "sandbox not enforced: " + why);
}

nlohmann::json sandbox_json(const config::ServerConfig& server,
                            const std::optional<sandbox::Plan>& plan) {
    const config::Sandbox& box = server.sandbox;
    if (!box.any()) return nullptr;
    const auto optional_number = [](const std::optional<std::uint64_t>& n) {
        return n ? nlohmann::json(*n) : nlohmann::json(nullptr);
    };
    nlohmann::json out = {
        {"preset", box.preset.empty() ? nlohmann::json(nullptr) : nlohmann::json(box.preset)},
        {"network", config::to_string(box.network.value_or(config::NetworkAccess::all))},
        {"memory_bytes", optional_number(box.memory)},
        {"tasks", optional_number(box.tasks)},
        {"open_files", optional_number(box.open_files)},
        {"cpu", box.cpu ? nlohmann::json(config::to_string(*box.cpu)) : nlohmann::json(nullptr)},
        {"strict", box.strict.value_or(false)},
        {"enforced", nullptr},
        {"unenforced", nullptr},
    };
    if (plan) {
        out["enforced"] = plan->enforced;
        out["unenforced"] = plan->unenforced;
    }
    return out;
}

std::vector<std::string> sandbox_report(const config::ServerConfig& server) {
    std::vector<std::string> lines;
    if (!server.sandbox.any()) return lines;
    const sandbox::Plan plan = sandbox::make_plan(server.sandbox, sandbox_placeholders(server),
                                                  sandbox::kernel_support(), child_user(server),
                                                  {}, list_directory);
    std::string head = "sandbox";
    if (!server.sandbox.preset.empty()) head += " " + server.sandbox.preset;
    head += ", network " + std::string(config::to_string(plan.network));
    lines.push_back(head);
    for (const std::string& how : plan.enforced) lines.push_back("enforced: " + how);
    const bool strict = server.sandbox.strict.value_or(false);
    for (const std::string& why : plan.unenforced) {
        lines.push_back(std::string(strict ? "refused (strict): " : "not enforced: ") + why);
    }
    return lines;
}

}  // namespace mcpd
