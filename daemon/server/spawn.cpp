#include "daemon/server/spawn.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/close_range.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <csignal>
#include <cstring>
#include <set>
#include <string_view>

#include "common/child_setup.h"
#include "common/scope_guard.h"
#include "daemon/io/descriptor_limit.h"
#include "daemon/server/keeper.h"
#include "daemon/server/server_processes.h"

namespace mcpd {
namespace {

constexpr std::string_view kDefaultPath = "/usr/local/bin:/usr/bin:/bin";

bool is_systemd_variable(std::string_view key) {
    return key == "NOTIFY_SOCKET" || key.starts_with("LISTEN_") || key.starts_with("WATCHDOG_");
}

bool is_inherited_variable(std::string_view key) {
    static const std::set<std::string_view> kInherited = {
        "HOME",
        "USER",
        "LOGNAME",
        "PATH",
        "SHELL",
        "TERM",
        "LANG",
        "LANGUAGE",
        "TZ",
        "TMPDIR",
        "XDG_RUNTIME_DIR",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_CACHE_HOME",
        "XDG_STATE_HOME",
    };
    return kInherited.contains(key) || key.starts_with("LC_");
}

std::string errno_sentence(int err) {
    return std::strerror(err);
}

// What the child reports before exec fails.
struct ExecFailure {
    int stage;  // 1: chdir, 2: exec, 3: setup, 4: identity, 5: sandbox, 6: cgroup
    int err;
    sandbox::ChildStep step;  // with stage 5
};

[[noreturn]] void child_fail(int status_fd, int stage,
                             sandbox::ChildStep step = sandbox::ChildStep::none) {
    const ExecFailure failure{stage, errno, step};
    [[maybe_unused]] const ssize_t n = ::write(status_fd, &failure, sizeof failure);
    _exit(127);
}

// Put `fd` on `target` without close-on-exec.
bool place_fd(int fd, int target) {
    if (fd == target) return ::fcntl(fd, F_SETFD, 0) == 0;
    return ::dup2(fd, target) == target;
}

// Move this process into the cgroup whose cgroup.procs is `procs`, before it starts anything.
bool join_cgroup(const std::string& procs) {
    const int fd = ::open(procs.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const bool ok = ::write(fd, "0", 1) == 1;
    const int err = errno;
    ::close(fd);
    errno = err;
    return ok;
}

[[noreturn]] void run_child(const SpawnRequest& request, char* const* argv, char* const* envp,
                            int in_fd, int out_fd, int err_fd, int status_fd, pid_t parent) {
    if (!request.cgroup_procs.empty() && !join_cgroup(request.cgroup_procs) &&
        request.cgroup_required)
        child_fail(status_fd, 6);
    ::setsid();
    // Die with the daemon (at once if it already died), from default signal handling.
    prepare_forked_child(parent);
    // mcpd's raised descriptor limit is mcpd's: servers get the one it was started with.
    restore_descriptor_limit();

    if (!place_fd(in_fd, STDIN_FILENO) || !place_fd(out_fd, STDOUT_FILENO) ||
        !place_fd(err_fd, STDERR_FILENO)) {
        child_fail(status_fd, 3);
    }
    // Belt and braces: whatever fd the daemon might have leaked without O_CLOEXEC.
    ::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);

    // Namespaces and limits need mcpd's privileges: before the identity changes.
    const sandbox::ChildSandbox* box =
        request.sandbox != nullptr && request.sandbox->active() ? request.sandbox : nullptr;
    if (box != nullptr) {
        if (const sandbox::ChildStep step = box->enter(); step != sandbox::ChildStep::none)
            child_fail(status_fd, 5, step);
    }
    if (request.identity) {
        // Groups first, then the gid, then the uid (after which neither could change).
        const config::ChildIdentity& id = *request.identity;
        if (::setgroups(id.groups.size(), id.groups.data()) != 0 || ::setgid(id.gid) != 0 ||
            ::setuid(id.uid) != 0 || ::getuid() != id.uid || ::geteuid() != id.uid) {
            child_fail(status_fd, 4);
        }
        // A change of credentials clears the parent-death signal: set it again.
        prepare_forked_child(parent);
    }
    // Entered as the user it runs as: a directory that user may not open is an error.
    if (!request.cwd.empty() && ::chdir(request.cwd.c_str()) != 0) child_fail(status_fd, 1);
    // Landlock last, as the user it runs as: its path rules open what that user may reach.
    if (box != nullptr) {
        if (const sandbox::ChildStep step = box->restrict(); step != sandbox::ChildStep::none)
            child_fail(status_fd, 5, step);
    }
    ::execve(request.path.c_str(), argv, envp);
    child_fail(status_fd, 2);
}

// `env` with the process tag last, whatever `env` said it was.
std::vector<std::string> tagged_environment(const std::vector<std::string>& env,
                                            const std::string& tag) {
    std::vector<std::string> out;
    out.reserve(env.size() + 1);
    for (const std::string& entry : env) {
        const bool is_tag = entry.size() > kProcessTagVariable.size() &&
                            entry.starts_with(kProcessTagVariable) &&
                            entry[kProcessTagVariable.size()] == '=';
        if (!is_tag) out.push_back(entry);
    }
    std::string tag_entry(kProcessTagVariable);
    tag_entry += '=';
    tag_entry += tag;
    out.push_back(std::move(tag_entry));
    return out;
}

// What the child reported before exec failed, as a sentence.
Failure exec_failure(const SpawnRequest& request, const ExecFailure& failure) {
    switch (failure.stage) {
        case 1:
            return permanent_failure("cannot change to directory '" + request.cwd +
                                     "': " + errno_sentence(failure.err));
        case 2: {
            std::string sentence =
                "cannot execute '" + request.path + "': " + errno_sentence(failure.err);
            // Out of descriptors, processes or memory: the system's state, not the server's.
            const bool transient = failure.err == EMFILE || failure.err == ENFILE ||
                                   failure.err == ENOMEM || failure.err == EAGAIN;
            return Failure{std::move(sentence), transient};
        }
        case 5:
            return permanent_failure(sandbox::describe(failure.step) + ": " +
                                     errno_sentence(failure.err));
        case 6:
            return permanent_failure("cannot join its cgroup " + request.cgroup_procs + ": " +
                                     errno_sentence(failure.err));
        case 4:
            return permanent_failure("cannot run as uid " +
                                     std::to_string(request.identity ? request.identity->uid : 0) +
                                     ": " + errno_sentence(failure.err));
        default:
            return transient_failure("cannot set up the server's stdio: " +
                                     errno_sentence(failure.err));
    }
}

bool make_pipe(UniqueFd& read_end, UniqueFd& write_end) {
    std::array<int, 2> fds{};
    if (::pipe2(fds.data(), O_CLOEXEC) != 0) return false;
    read_end.reset(fds[0]);
    write_end.reset(fds[1]);
    return true;
}

void set_nonblocking(int fd) {
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
    std::vector<char*> out;
    out.reserve(strings.size() + 1);
    for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
    out.push_back(nullptr);
    return out;
}

}  // namespace

Result<std::string> resolve_command(const std::string& command, const std::string& path_var,
                                    const std::string& base_dir) {
    if (command.empty()) return permanent_failure("the command is empty");
    auto check = [&](const std::string& candidate) {
        struct stat st {};
        if (::stat(candidate.c_str(), &st) != 0) return errno;
        if (S_ISDIR(st.st_mode)) return EISDIR;
        if (::access(candidate.c_str(), X_OK) != 0) return errno;
        return 0;
    };
    if (command.find('/') != std::string::npos) {
        const std::string candidate =
            command.front() == '/' || base_dir.empty() ? command : base_dir + "/" + command;
        const int err = check(candidate);
        if (err != 0) {
            return permanent_failure("cannot execute '" + candidate + "': " + errno_sentence(err));
        }
        return candidate;
    }
    const std::string path = path_var.empty() ? std::string(kDefaultPath) : path_var;
    int first_error = ENOENT;
    std::size_t begin = 0;
    while (begin <= path.size()) {
        std::size_t end = path.find(':', begin);
        if (end == std::string::npos) end = path.size();
        // An empty entry means the current directory. (Built whole, not assigned ".": gcc 12
        // at -O3 warns about the assignment with a false -Wrestrict.)
        const std::string dir = end > begin ? path.substr(begin, end - begin) : std::string(".");
        begin = end + 1;
        const std::string candidate = dir + "/" + command;
        const int err = check(candidate);
        if (err == 0) return candidate;
        if (err != ENOENT && err != ENOTDIR && first_error == ENOENT) first_error = err;
    }
    if (first_error == ENOENT) {
        return permanent_failure("command '" + command + "' not found in PATH (" + path +
                                 "): " + errno_sentence(ENOENT));
    }
    return permanent_failure("cannot execute '" + command + "' found in PATH (" + path +
                             "): " + errno_sentence(first_error));
}

std::vector<std::string> build_child_environment(const config::ServerConfig& server,
                                                 const char* const* parent_environ) {
    std::vector<std::pair<std::string, std::string>> vars;
    auto set = [&vars](const std::string& key, const std::string& value) {
        if (is_systemd_variable(key)) return;
        for (auto& [k, v] : vars) {
            if (k == key) {
                v = value;
                return;
            }
        }
        vars.emplace_back(key, value);
    };
    for (const char* const* p = parent_environ; p != nullptr && *p != nullptr; ++p) {
        const std::string_view entry(*p);
        const std::size_t eq = entry.find('=');
        if (eq == std::string_view::npos) continue;
        const std::string key(entry.substr(0, eq));
        if (is_inherited_variable(key)) set(key, std::string(entry.substr(eq + 1)));
    }
    if (server.run_as) {
        // Its own user's home and name; mcpd's XDG directories are not its.
        std::erase_if(vars, [](const auto& kv) { return kv.first.starts_with("XDG_"); });
        set("HOME", server.run_as->home);
        set("USER", server.run_as->user);
        set("LOGNAME", server.run_as->user);
    }
    bool has_path = false;
    for (const auto& [k, v] : vars) has_path = has_path || k == "PATH";
    if (!has_path) set("PATH", std::string(kDefaultPath));
    for (const auto& [k, v] : server.env_file_vars) set(k, v);
    for (const auto& [k, v] : server.env) set(k, v);

    std::vector<std::string> out;
    out.reserve(vars.size());
    for (const auto& [k, v] : vars) out.push_back(k + "=" + v);
    return out;
}

std::string find_env(const std::vector<std::string>& env, const std::string& key) {
    for (const std::string& entry : env) {
        if (entry.size() > key.size() && entry.compare(0, key.size(), key) == 0 &&
            entry[key.size()] == '=') {
            return entry.substr(key.size() + 1);
        }
    }
    return {};
}

Result<SpawnedProcess> spawn_process(const SpawnRequest& request) {
    UniqueFd in_read, in_write, out_read, out_write, err_read, err_write, status_read, status_write;
    if (!make_pipe(in_read, in_write) || !make_pipe(out_read, out_write) ||
        !make_pipe(err_read, err_write) || !make_pipe(status_read, status_write)) {
        const int err = errno;
        return transient_failure("cannot create pipes for the server: " + errno_sentence(err));
    }
    // A serial per server process: the tag tells this one's descendants from any other's.
    static std::uint32_t serial = 0;
    ++serial;
    const std::string tag = process_tag(::getpid(), serial);
    const std::vector<std::string> env = tagged_environment(request.env, tag);
    std::vector<char*> argv = c_strings(request.argv);
    std::vector<char*> envp = c_strings(env);

    pid_t pid = 0;
    int fork_errno = 0;
    {
        // Block every signal across fork so the child never runs the daemon's handlers before
        // it has reset them; the child clears its mask itself (run_child never returns).
        const AllSignalsBlocked blocked;
        const pid_t parent = ::getpid();
        pid = ::fork();
        if (pid == 0) {
            run_child(request, argv.data(), envp.data(), in_read.get(), out_write.get(),
                      err_write.get(), status_write.get(), parent);
        }
        fork_errno = errno;
    }
    if (pid < 0) return transient_failure("cannot fork: " + errno_sentence(fork_errno));
    // The child leads its own process group (setsid): the keeper kills it if mcpd dies.
    Keeper::instance().track(pid, serial);

    status_write.reset();
    in_read.reset();
    out_write.reset();
    err_write.reset();

    ExecFailure failure{};
    ssize_t n;
    do {
        n = ::read(status_read.get(), &failure, sizeof failure);
    } while (n < 0 && errno == EINTR);
    if (n == static_cast<ssize_t>(sizeof failure)) {
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        Keeper::instance().untrack(pid);
        return exec_failure(request, failure);
    }

    set_nonblocking(in_write.get());
    set_nonblocking(out_read.get());
    set_nonblocking(err_read.get());
    SpawnedProcess process;
    process.pid = pid;
    process.tag = tag;
    process.stdin_fd = std::move(in_write);
    process.stdout_fd = std::move(out_read);
    process.stderr_fd = std::move(err_read);
    return process;
}

}  // namespace mcpd
