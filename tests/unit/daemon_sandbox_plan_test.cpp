// The sandbox plan (daemon/sandbox/sandbox_plan.h): placeholders resolved, hidden paths cut
// out of the grants, and for each kind of kernel what is enforced and what is reported as not.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include "daemon/sandbox/sandbox_child.h"
#include "daemon/sandbox/sandbox_plan.h"

using namespace mcpd;
using sandbox::KernelSupport;
using sandbox::PathGrant;

namespace {

// A directory tree of the test's: directory -> entries.
sandbox::ListDirectory tree(std::map<std::string, std::vector<std::string>> dirs) {
    return [dirs](const std::string& path) -> std::optional<std::vector<std::string>> {
        const auto it = dirs.find(path);
        if (it == dirs.end()) return std::nullopt;
        return it->second;
    };
}

const sandbox::ListDirectory kNothing = [](const std::string&) {
    return std::optional<std::vector<std::string>>();
};

sandbox::Placeholders values() {
    return {"/home/ann", "/home/ann/src/app", "/home/ann/.cache/mcpd/servers/fs",
            "/home/ann/.local/state/mcpd/servers/fs"};
}

KernelSupport landlock_only(int abi = 7) {
    KernelSupport support;
    support.landlock_abi = abi;
    return support;
}

KernelSupport everything() {
    KernelSupport support = landlock_only();
    support.namespaces = true;
    return support;
}

bool granted(const sandbox::Plan& plan, const std::string& path, bool write) {
    return std::find(plan.grants.begin(), plan.grants.end(), PathGrant{path, write}) !=
           plan.grants.end();
}

bool mentions(const std::vector<std::string>& sentences, const std::string& part) {
    return std::any_of(sentences.begin(), sentences.end(),
                       [&](const std::string& s) { return s.find(part) != std::string::npos; });
}

}  // namespace

TEST_CASE("sandbox plan: placeholders resolve for the child's user and project",
          "[sandbox]") {
    const sandbox::Placeholders v = values();
    CHECK(sandbox::resolve_rule_path("~", v) == "/home/ann");
    CHECK(sandbox::resolve_rule_path("~/.npm", v) == "/home/ann/.npm");
    CHECK(sandbox::resolve_rule_path("{project}", v) == "/home/ann/src/app");
    CHECK(sandbox::resolve_rule_path("{project}/../other", v) == "/home/ann/src/other");
    CHECK(sandbox::resolve_rule_path("{cache}/tmp", v) == "/home/ann/.cache/mcpd/servers/fs/tmp");
    CHECK(sandbox::resolve_rule_path("{state}", v) == "/home/ann/.local/state/mcpd/servers/fs");
    CHECK(sandbox::resolve_rule_path("/srv/x/", v) == "/srv/x");
    sandbox::Placeholders no_project = v;
    no_project.project.clear();
    CHECK(sandbox::resolve_rule_path("{project}/x", no_project).empty());
}

TEST_CASE("sandbox plan: a hidden path is cut out of a grant over its tree, entry by entry",
          "[sandbox]") {
    const auto list = tree({
        {"/home/ann", {".", "..", ".ssh", ".config", "notes"}},
        {"/home/ann/.config", {"gh", "editor"}},
    });
    const std::vector<PathGrant> grants = {{"/home/ann", false}, {"/usr", false},
                                           {"/home/ann/.ssh/keys", true}};
    const std::vector<PathGrant> cut =
        sandbox::cut_out_hidden(grants, {"/home/ann/.ssh", "/home/ann/.config/gh"}, list);
    const std::vector<PathGrant> expected = {{"/home/ann/.config/editor", false},
                                             {"/home/ann/notes", false},
                                             {"/usr", false}};
    std::vector<PathGrant> sorted = cut;
    std::sort(sorted.begin(), sorted.end(),
              [](const PathGrant& a, const PathGrant& b) { return a.path < b.path; });
    CHECK(sorted == expected);

    // A tree that cannot be listed is granted whole (the mount namespace must hide then).
    const std::vector<PathGrant> whole = sandbox::cut_out_hidden(
        {{"/home/ann", false}}, {"/home/ann/.ssh"}, kNothing);
    CHECK(whole == std::vector<PathGrant>{{"/home/ann", false}});
}

TEST_CASE("sandbox plan: the project preset with Landlock alone", "[sandbox]") {
    config::Sandbox box;
    box.preset = "readonly";
    const auto list = tree({{"/home/ann", {".ssh", "src", ".npm", ".local"}}});
    const sandbox::Plan plan = sandbox::make_plan(box, values(), landlock_only(), {},
                                                  "/home/ann/.nvm/versions/node/v20/bin/node", list);
    REQUIRE(plan.active);
    CHECK(plan.restrict_filesystem);
    CHECK(granted(plan, "/usr", false));
    CHECK(granted(plan, "/home/ann/src", false));
    CHECK_FALSE(granted(plan, "/home/ann", false));
    CHECK_FALSE(granted(plan, "/home/ann/.ssh", false));
    CHECK(granted(plan, "/home/ann/.npm", true));
    CHECK(granted(plan, "/home/ann/.cache/mcpd/servers/fs", true));
    // The command's installation is readable whatever the rules say.
    CHECK(granted(plan, "/home/ann/.nvm/versions/node/v20", false));
    // No mount namespace: hidden paths are cut out by Landlock alone.
    CHECK_FALSE(plan.mount_namespace);
    CHECK(plan.unenforced.empty());
    CHECK(plan.scope);
}

TEST_CASE("sandbox plan: with namespaces, hidden paths get a tmpfs and their trees stay whole",
          "[sandbox]") {
    config::Sandbox box;
    box.preset = "readonly";
    const auto list = tree({{"/home/ann", {".ssh", "src"}}});
    const sandbox::Plan plan = sandbox::make_plan(box, values(), everything(), {}, "", list);
    CHECK(plan.mount_namespace);
    CHECK(granted(plan, "/home/ann", false));
    CHECK(std::find(plan.hidden.begin(), plan.hidden.end(), "/home/ann/.ssh") != plan.hidden.end());
    CHECK(plan.unenforced.empty());
}

TEST_CASE("sandbox plan: network rules by what the kernel has", "[sandbox]") {
    config::Sandbox none;
    none.network = config::NetworkAccess::none;
    const sandbox::Plan full = sandbox::make_plan(none, values(), everything(), {}, "", kNothing);
    CHECK(full.network_namespace);
    CHECK_FALSE(full.loopback_up);
    CHECK(full.landlock_tcp);
    CHECK(full.unenforced.empty());
    // No filesystem rule was asked for: no path is restricted.
    CHECK_FALSE(full.restrict_filesystem);

    const sandbox::Plan tcp_only = sandbox::make_plan(none, values(), landlock_only(), {}, "", kNothing);
    CHECK_FALSE(tcp_only.network_namespace);
    CHECK(tcp_only.landlock_tcp);
    CHECK(mentions(tcp_only.unenforced, "UDP"));

    const sandbox::Plan old = sandbox::make_plan(none, values(), landlock_only(2), {}, "", kNothing);
    CHECK_FALSE(old.landlock_tcp);
    CHECK(mentions(old.unenforced, "network none"));
    CHECK_FALSE(old.scope);

    config::Sandbox loopback;
    loopback.network = config::NetworkAccess::loopback;
    const sandbox::Plan lo = sandbox::make_plan(loopback, values(), everything(), {}, "", kNothing);
    CHECK(lo.network_namespace);
    CHECK(lo.loopback_up);
    CHECK_FALSE(lo.landlock_tcp);
    KernelSupport userns = everything();
    userns.through_user_namespace = true;
    CHECK(sandbox::make_plan(loopback, values(), userns, {}, "", kNothing).user_namespace);
    CHECK(mentions(sandbox::make_plan(loopback, values(), landlock_only(), {}, "", kNothing).unenforced,
                   "network loopback"));
}

TEST_CASE("sandbox plan: limits as rlimits, and what rlimits cannot do", "[sandbox]") {
    config::Sandbox box;
    box.memory = 256ULL << 20;
    box.open_files = 128;
    box.tasks = 32;
    box.cpu = config::CpuLimit{config::CpuLimit::Kind::quota, 50};
    const sandbox::Plan root = sandbox::make_plan(box, values(), everything(), {true, false}, "", kNothing);
    const std::vector<sandbox::ResourceLimit> expected = {{RLIMIT_NOFILE, 128},
                                                          {RLIMIT_DATA, 256ULL << 20}};
    CHECK(root.rlimits == expected);
    CHECK(mentions(root.enforced, "could raise it again"));
    CHECK(mentions(root.unenforced, "never applies to root"));
    CHECK(mentions(root.unenforced, "cpu 50%"));

    KernelSupport userns = everything();
    userns.unprivileged_user_namespaces = true;
    const sandbox::Plan user = sandbox::make_plan(box, values(), userns, {}, "", kNothing);
    CHECK(user.tasks == 32);
    CHECK_FALSE(mentions(user.unenforced, "tasks"));
    CHECK_FALSE(mentions(user.enforced, "raise it again"));
    // Root is never limited by RLIMIT_NPROC, namespace or not.
    CHECK(sandbox::make_plan(box, values(), userns, {true, false}, "", kNothing).tasks == 0);
    // Without user namespaces, RLIMIT_NPROC would count the user's every process.
    const sandbox::Plan restricted = sandbox::make_plan(box, values(), everything(), {}, "", kNothing);
    CHECK(restricted.tasks == 0);
    CHECK(mentions(restricted.unenforced, "unless user namespaces are allowed"));
}

TEST_CASE("sandbox plan: with a delegated cgroup, memory, tasks and cpu go to its leaf",
          "[sandbox]") {
    config::Sandbox box;
    box.memory = 256ULL << 20;
    box.open_files = 128;
    box.tasks = 32;
    box.cpu = config::CpuLimit{config::CpuLimit::Kind::quota, 50};
    KernelSupport support = everything();
    support.cgroup = "/sys/fs/cgroup/system.slice/mcpd.service";
    // Root's processes too: pids.max holds whoever runs in the leaf.
    const sandbox::Plan plan = sandbox::make_plan(box, values(), support, {true, false}, "", kNothing);
    CHECK(plan.cgroup.memory == 256ULL << 20);
    CHECK(plan.cgroup.tasks == 32U);
    CHECK(plan.cgroup.cpu == box.cpu);
    CHECK(plan.rlimits == std::vector<sandbox::ResourceLimit>{{RLIMIT_NOFILE, 128}});
    CHECK(plan.tasks == 0);
    CHECK(plan.unenforced.empty());
    CHECK(mentions(plan.enforced, "memory.max"));
    CHECK(mentions(plan.enforced, "pids.max"));
    CHECK(mentions(plan.enforced, "cpu.max"));
}

TEST_CASE("sandbox plan: what an older Landlock leaves open is said beside the path rules",
          "[sandbox]") {
    config::Sandbox box;
    box.preset = "project";
    const sandbox::Plan debian12 = sandbox::make_plan(box, values(), landlock_only(2), {}, "", kNothing);
    CHECK(mentions(debian12.enforced, "Landlock ABI 2"));
    CHECK(mentions(debian12.enforced, "truncating a file it may only read"));
    CHECK(mentions(debian12.enforced, "signals to processes outside the box"));
    CHECK(debian12.unenforced.empty());
    const sandbox::Plan current = sandbox::make_plan(box, values(), landlock_only(7), {}, "", kNothing);
    CHECK_FALSE(mentions(current.enforced, "leaves open"));
    const sandbox::Plan abi5 = sandbox::make_plan(box, values(), landlock_only(5), {}, "", kNothing);
    CHECK(mentions(abi5.enforced, "leaves open: signals"));
    CHECK_FALSE(mentions(abi5.enforced, "ioctl"));
}

TEST_CASE("sandbox plan: no Landlock, no namespaces: every path rule is reported", "[sandbox]") {
    config::Sandbox box;
    box.preset = "project";
    const sandbox::Plan plan = sandbox::make_plan(box, values(), KernelSupport{}, {}, "", kNothing);
    CHECK(plan.active);
    CHECK_FALSE(plan.restrict_filesystem);
    CHECK(mentions(plan.unenforced, "no Landlock"));
    CHECK(mentions(plan.unenforced, "hide"));
}

TEST_CASE("sandbox plan: none at all is inactive", "[sandbox]") {
    const sandbox::Plan plan = sandbox::make_plan({}, values(), everything(), {}, "", kNothing);
    CHECK_FALSE(plan.active);
    const sandbox::ChildSandbox child(plan, 1000, 1000, 1000, 1000);
    CHECK_FALSE(child.active());
    CHECK(child.enter() == sandbox::ChildStep::none);
    CHECK(child.restrict() == sandbox::ChildStep::none);
}

TEST_CASE("sandbox plan: installation prefixes", "[sandbox]") {
    CHECK(sandbox::install_prefix("/opt/node/bin/node") == "/opt/node");
    CHECK(sandbox::install_prefix("/usr/local/lib/app/run") == "/usr/local/lib/app");
    CHECK(sandbox::install_prefix("/bin/sh") == "/bin");
}

TEST_CASE("sandbox: what the kernel offers is described", "[sandbox]") {
    const std::vector<std::string> none = sandbox::describe(KernelSupport{});
    CHECK(mentions(none, "Landlock: not available"));
    CHECK(mentions(none, "namespaces: not allowed"));
    CHECK(mentions(none, "rlimits"));
    KernelSupport support = everything();
    support.cgroup = "/sys/fs/cgroup/user.slice/mcpd.service";
    const std::vector<std::string> all = sandbox::describe(support);
    CHECK(mentions(all, "Landlock ABI 7"));
    CHECK(mentions(all, "TCP"));
    CHECK(mentions(all, "created as root"));
    CHECK(mentions(all, "delegated"));
}
