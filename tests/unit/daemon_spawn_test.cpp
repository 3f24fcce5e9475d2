#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/server/spawn.h"

using namespace mcpd;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
namespace fs = std::filesystem;

namespace {

// A private directory under $TMPDIR, removed with everything in it at the end of the test.
class SpawnTempDir {
public:
    SpawnTempDir() {
        std::string pattern = (fs::temp_directory_path() / "mcpd-spawn-test.XXXXXX").string();
        REQUIRE(::mkdtemp(pattern.data()) != nullptr);
        path_ = pattern;
    }
    ~SpawnTempDir() {
        std::error_code ignored;
        fs::remove_all(path_, ignored);
    }
    SpawnTempDir(const SpawnTempDir&) = delete;
    SpawnTempDir& operator=(const SpawnTempDir&) = delete;

    std::string path() const { return path_.string(); }

    // Create `name` (and its directories) with `mode`; returns its full path.
    std::string file(const std::string& name, mode_t mode) const {
        const fs::path file = path_ / name;
        fs::create_directories(file.parent_path());
        std::ofstream(file) << "#!/bin/sh\nexit 0\n";
        REQUIRE(::chmod(file.c_str(), mode) == 0);
        return file.string();
    }

    std::string dir(const std::string& name) const {
        fs::create_directories(path_ / name);
        return (path_ / name).string();
    }

private:
    fs::path path_;
};

// A spawned child that is killed and reaped however the test ends.
class Child {
public:
    explicit Child(Result<SpawnedProcess> outcome) : outcome_(std::move(outcome)) {}
    ~Child() {
        if (outcome_.ok() && !reaped_) {
            ::kill(outcome_->pid, SIGKILL);
            wait();
        }
    }
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;

    SpawnedProcess& process() { return outcome_.value(); }
    int pid() const { return outcome_.ok() ? outcome_->pid : -1; }

    // Reap it; returns the raw wait status.
    int wait() {
        int status = 0;
        while (::waitpid(pid(), &status, 0) < 0 && errno == EINTR) {
        }
        reaped_ = true;
        return status;
    }

private:
    Result<SpawnedProcess> outcome_;
    bool reaped_ = false;
};

// Everything readable from a non-blocking fd until EOF (or five seconds).
std::string read_all(int fd) {
    std::string out;
    char buf[4096];
    for (;;) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 5000) <= 0) {
            FAIL("no EOF on the pipe within 5 s; read so far: " << out);
        }
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n > 0) {
            out.append(buf, static_cast<std::size_t>(n));
        } else if (n == 0) {
            return out;
        } else if (errno != EAGAIN && errno != EINTR) {
            FAIL("read failed: " << errno);
        }
    }
}

SpawnRequest shell(const std::string& script,
                   std::vector<std::string> env = {"PATH=/usr/bin:/bin"}) {
    return SpawnRequest{"/bin/sh", {"sh", "-c", script}, std::move(env), ""};
}

// The value of a "Key:\tvalue" line in /proc/PID/status.
std::string proc_status_field(int pid, const std::string& key) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.starts_with(key + ":")) {
            const std::size_t start = line.find_first_not_of(" \t", key.size() + 1);
            return line.substr(start);
        }
    }
    FAIL("no " << key << " in /proc/" << pid << "/status");
    return {};
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

config::ServerConfig server_with(std::map<std::string, std::string> env,
                                 std::map<std::string, std::string> file_vars = {}) {
    config::ServerConfig server;
    server.name = "demo";
    server.command = "demo";
    server.env = std::move(env);
    server.env_file_vars = std::move(file_vars);
    return server;
}

bool has_key(const std::vector<std::string>& env, const std::string& key) {
    return std::any_of(env.begin(), env.end(),
                       [&](const std::string& e) { return e.starts_with(key + "="); });
}

}  // namespace

TEST_CASE("resolve_command searches PATH in order, as execvp would") {
    SpawnTempDir tmp;
    const std::string a = tmp.dir("a"), b = tmp.dir("b");
    const std::string in_b = tmp.file("b/tool", 0755);
    Result<std::string> found = resolve_command("tool", a + ":" + b, "/");
    REQUIRE(found.ok());
    CHECK(found.value() == in_b);

    const std::string in_a = tmp.file("a/tool", 0755);
    found = resolve_command("tool", a + ":" + b, "/");
    REQUIRE(found.ok());
    CHECK(found.value() == in_a);
}

TEST_CASE("resolve_command says 'not found' for a name in no PATH directory") {
    SpawnTempDir tmp;
    const std::string path = tmp.dir("a") + ":" + tmp.dir("b");
    const Result<std::string> r = resolve_command("no-such-tool", path, "/");
    CHECK_FALSE(r.ok());
    CHECK_THAT(r.error(), Contains("no-such-tool") && Contains("not found") &&
                            Contains("No such file or directory") && Contains(path));
}

TEST_CASE("resolve_command reports a file without execute permission") {
    SpawnTempDir tmp;
    const std::string a = tmp.dir("a");
    tmp.file("a/tool", 0644);
    // Even root cannot execute a file with no x bit at all.
    const Result<std::string> r = resolve_command("tool", a, "/");
    CHECK_FALSE(r.ok());
    CHECK_THAT(r.error(), Contains("tool") && Contains("Permission denied"));

    SECTION("an executable one later in PATH still wins") {
        const std::string b = tmp.dir("b");
        const std::string good = tmp.file("b/tool", 0755);
        const Result<std::string> later = resolve_command("tool", a + ":" + b, "/");
        REQUIRE(later.ok());
        CHECK(later.value() == good);
    }
    SECTION("with a slash in the name") {
        const Result<std::string> direct = resolve_command(a + "/tool", "", "/");
        CHECK_FALSE(direct.ok());
        CHECK_THAT(direct.error(), Contains("Permission denied"));
    }
}

TEST_CASE("resolve_command takes a relative path with '/' from base_dir, not PATH") {
    SpawnTempDir tmp;
    const std::string tool = tmp.file("bin/tool", 0755);
    const Result<std::string> r = resolve_command("bin/tool", "/usr/bin:/bin", tmp.path());
    REQUIRE(r.ok());
    CHECK(r.value() == tmp.path() + "/bin/tool");
    CHECK(fs::equivalent(r.value(), tool));

    const Result<std::string> dotted = resolve_command("./bin/tool", "", tmp.path());
    REQUIRE(dotted.ok());
    CHECK(fs::equivalent(dotted.value(), tool));

    const Result<std::string> missing = resolve_command("bin/other", "", tmp.path());
    CHECK_FALSE(missing.ok());
    CHECK_THAT(missing.error(),
               Contains(tmp.path() + "/bin/other") && Contains("No such file or directory"));
}

TEST_CASE("resolve_command accepts an absolute path as it is") {
    const Result<std::string> r = resolve_command("/bin/sh", "/nonexistent", "/tmp");
    REQUIRE(r.ok());
    CHECK(r.value() == "/bin/sh");
}

TEST_CASE("resolve_command refuses a directory and an empty command") {
    SpawnTempDir tmp;
    tmp.dir("bin/tool");
    const Result<std::string> by_path = resolve_command("./bin/tool", "", tmp.path());
    CHECK_FALSE(by_path.ok());
    CHECK_THAT(by_path.error(), Contains("Is a directory"));

    const Result<std::string> by_name = resolve_command("tool", tmp.path() + "/bin", "/");
    CHECK_FALSE(by_name.ok());
    CHECK_THAT(by_name.error(), Contains("Is a directory"));

    const Result<std::string> empty = resolve_command("", "/usr/bin", "/");
    CHECK_FALSE(empty.ok());
    CHECK_THAT(empty.error(), Contains("empty"));
}

TEST_CASE("build_child_environment passes only allow-listed parent variables") {
    const char* const parent[] = {"HOME=/home/ann",
                                  "USER=ann",
                                  "LOGNAME=ann",
                                  "PATH=/opt/bin:/usr/bin",
                                  "LANG=C.UTF-8",
                                  "LC_TIME=de_DE",
                                  "TZ=UTC",
                                  "XDG_RUNTIME_DIR=/run/user/1000",
                                  "AWS_SECRET_ACCESS_KEY=hunter2",
                                  "SSH_AUTH_SOCK=/tmp/agent",
                                  "LD_PRELOAD=/evil.so",
                                  "MCPD_SOCKET=/run/mcpd.sock",
                                  "NOT_A_PAIR",
                                  nullptr};
    const std::vector<std::string> env = build_child_environment(server_with({}), parent);
    CHECK(env == std::vector<std::string>{"HOME=/home/ann", "USER=ann", "LOGNAME=ann",
                                          "PATH=/opt/bin:/usr/bin", "LANG=C.UTF-8", "LC_TIME=de_DE",
                                          "TZ=UTC", "XDG_RUNTIME_DIR=/run/user/1000"});
}

TEST_CASE("build_child_environment never passes systemd's variables for the daemon") {
    const char* const parent[] = {"PATH=/usr/bin",      "NOTIFY_SOCKET=/run/systemd/notify",
                                  "LISTEN_PID=42",      "LISTEN_FDS=1",
                                  "LISTEN_FDNAMES=ctl", "WATCHDOG_USEC=30000000",
                                  "WATCHDOG_PID=42",    nullptr};
    const std::map<std::string, std::string> sneaky = {{"NOTIFY_SOCKET", "/tmp/n"},
                                                       {"LISTEN_PID", "1"},
                                                       {"LISTEN_FDS", "3"},
                                                       {"WATCHDOG_USEC", "5"}};
    const std::vector<std::string> env =
        build_child_environment(server_with(sneaky, sneaky), parent);
    for (const char* key : {"NOTIFY_SOCKET", "LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES",
                            "WATCHDOG_USEC", "WATCHDOG_PID"}) {
        INFO(key);
        CHECK_FALSE(has_key(env, key));
    }
    CHECK(env == std::vector<std::string>{"PATH=/usr/bin"});
}

TEST_CASE("build_child_environment applies env_file, then env, over the parent's") {
    const char* const parent[] = {"HOME=/home/ann", "PATH=/usr/bin", "LANG=C", nullptr};
    const std::vector<std::string> env = build_child_environment(
        server_with({{"B", "from-env"}, {"HOME", "/srv/demo"}, {"C", "c"}},
                    {{"A", "from-file"}, {"B", "from-file"}, {"LANG", "de_DE.UTF-8"}}),
        parent);
    CHECK(find_env(env, "A") == "from-file");
    CHECK(find_env(env, "B") == "from-env");
    CHECK(find_env(env, "C") == "c");
    CHECK(find_env(env, "HOME") == "/srv/demo");
    CHECK(find_env(env, "LANG") == "de_DE.UTF-8");
    // One entry per key.
    for (const char* key : {"A", "B", "C", "HOME", "LANG", "PATH"}) {
        INFO(key);
        CHECK(std::count_if(env.begin(), env.end(), [&](const std::string& e) {
                  return e.starts_with(std::string(key) + "=");
              }) == 1);
    }
}

TEST_CASE("build_child_environment defaults PATH when nothing sets it") {
    const char* const parent[] = {"HOME=/root", nullptr};
    CHECK(find_env(build_child_environment(server_with({}), parent), "PATH") ==
          "/usr/local/bin:/usr/bin:/bin");
    CHECK(find_env(build_child_environment(server_with({}), nullptr), "PATH") ==
          "/usr/local/bin:/usr/bin:/bin");
    CHECK(find_env(build_child_environment(server_with({{"PATH", "/opt/x"}}), parent), "PATH") ==
          "/opt/x");
    CHECK(find_env(build_child_environment(server_with({}, {{"PATH", "/opt/y"}}), parent),
                   "PATH") == "/opt/y");
}

TEST_CASE("find_env matches the whole key") {
    const std::vector<std::string> env = {"PATHX=1", "PATH=/bin", "EMPTY="};
    CHECK(find_env(env, "PATH") == "/bin");
    CHECK(find_env(env, "PAT").empty());
    CHECK(find_env(env, "EMPTY").empty());
    CHECK(find_env(env, "MISSING").empty());
}

TEST_CASE("spawn_process connects the child's stdin, stdout and stderr to pipes") {
    Child child(spawn_process(shell("read line; echo \"got $line\"; echo oops >&2; exit 7")));
    REQUIRE(child.pid() > 0);
    SpawnedProcess& p = child.process();
    const std::string input = "ping\n";
    REQUIRE(::write(p.stdin_fd.get(), input.data(), input.size()) ==
            static_cast<ssize_t>(input.size()));
    p.stdin_fd.reset();
    CHECK(read_all(p.stdout_fd.get()) == "got ping\n");
    CHECK(read_all(p.stderr_fd.get()) == "oops\n");
    const int status = child.wait();
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 7);
    // The parent ends are non-blocking and close-on-exec.
    CHECK((::fcntl(p.stdout_fd.get(), F_GETFL) & O_NONBLOCK) != 0);
    CHECK((::fcntl(p.stdout_fd.get(), F_GETFD) & FD_CLOEXEC) != 0);
}

TEST_CASE("spawn_process runs the command with exactly the given argv, env and cwd") {
    SpawnTempDir tmp;
    SECTION("echo hi") {
        Child child(spawn_process(shell("echo hi")));
        CHECK(read_all(child.process().stdout_fd.get()) == "hi\n");
        CHECK(child.wait() == 0);
    }
    SECTION("argv[0] as written") {
        Child child(spawn_process(SpawnRequest{"/bin/sh", {"my-server", "-c", "echo $0"}, {}, ""}));
        CHECK(read_all(child.process().stdout_fd.get()) == "my-server\n");
    }
    SECTION("environment, and the process tag last, whatever the request says") {
        Child child(spawn_process(SpawnRequest{
            "/usr/bin/env", {"env"}, {"A=1", "MCPD_PROCESS_TAG=forged", "B=two"}, ""}));
        const std::string tag = child.process().tag;
        CHECK(tag.starts_with(std::to_string(::getpid()) + "."));
        CHECK(read_all(child.process().stdout_fd.get()) ==
              "A=1\nB=two\nMCPD_PROCESS_TAG=" + tag + "\n");
    }
    SECTION("working directory") {
        Child child(spawn_process(SpawnRequest{"/bin/pwd", {"pwd"}, {}, tmp.path()}));
        CHECK(read_all(child.process().stdout_fd.get()) == tmp.path() + "\n");
    }
}

TEST_CASE("spawn_process reports a missing working directory and reaps the child") {
    SpawnRequest request = shell("echo hi");
    request.cwd = "/nonexistent/mcpd-test-dir";
    const Result<SpawnedProcess> outcome = spawn_process(request);
    CHECK_FALSE(outcome.ok());
    CHECK_FALSE(outcome.transient());
    CHECK_THAT(outcome.error(),
               Contains("/nonexistent/mcpd-test-dir") && Contains("No such file or directory"));
    errno = 0;
    CHECK(::waitpid(-1, nullptr, WNOHANG) == -1);
    CHECK(errno == ECHILD);
}

TEST_CASE("spawn_process reports an exec failure as a sentence") {
    SpawnTempDir tmp;
    SECTION("missing file") {
        const Result<SpawnedProcess> outcome =
            spawn_process(SpawnRequest{tmp.path() + "/missing", {"missing"}, {}, ""});
        CHECK_FALSE(outcome.ok());
        CHECK_FALSE(outcome.transient());
        CHECK_THAT(outcome.error(), StartsWith("cannot execute '" + tmp.path() + "/missing'") &&
                                      Contains("No such file or directory"));
    }
    SECTION("no execute permission") {
        const std::string file = tmp.file("tool", 0644);
        const Result<SpawnedProcess> outcome = spawn_process(SpawnRequest{file, {"tool"}, {}, ""});
        CHECK_FALSE(outcome.ok());
        CHECK_THAT(outcome.error(), Contains(file) && Contains("Permission denied"));
    }
    errno = 0;
    CHECK(::waitpid(-1, nullptr, WNOHANG) == -1);
    CHECK(errno == ECHILD);
}

TEST_CASE("spawn_process puts the child in its own session and process group") {
    Child child(spawn_process(SpawnRequest{"/bin/sleep", {"sleep", "5"}, {}, ""}));
    REQUIRE(child.pid() > 0);
    CHECK(::getsid(child.pid()) == child.pid());
    CHECK(::getpgid(child.pid()) == child.pid());
    CHECK(::getsid(child.pid()) != ::getsid(0));
}

TEST_CASE("spawn_process gives the child default signal dispositions and an empty mask") {
    // Make the parent's state something a careless spawn would pass on.
    struct sigaction ignore {
    }, saved_pipe{};
    ignore.sa_handler = SIG_IGN;
    REQUIRE(::sigaction(SIGPIPE, &ignore, &saved_pipe) == 0);
    REQUIRE(::sigaction(SIGHUP, &ignore, nullptr) == 0);
    sigset_t block, saved_mask;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR1);
    sigaddset(&block, SIGTERM);
    REQUIRE(::sigprocmask(SIG_BLOCK, &block, &saved_mask) == 0);

    Child child(spawn_process(SpawnRequest{"/bin/sleep", {"sleep", "5"}, {}, ""}));

    ::sigprocmask(SIG_SETMASK, &saved_mask, nullptr);
    ::sigaction(SIGPIPE, &saved_pipe, nullptr);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    ::sigaction(SIGHUP, &dfl, nullptr);

    REQUIRE(child.pid() > 0);
    CHECK(proc_status_field(child.pid(), "SigIgn") == "0000000000000000");
    CHECK(proc_status_field(child.pid(), "SigBlk") == "0000000000000000");
    ::kill(child.pid(), SIGTERM);
    const int status = child.wait();
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGTERM);
}

TEST_CASE("spawn_process leaks no other descriptor into the child") {
    // A descriptor the daemon forgot to mark close-on-exec.
    const int leaked = ::open("/dev/null", O_RDONLY);
    REQUIRE(leaked >= 0);
    Child child(spawn_process(SpawnRequest{"/bin/ls", {"ls", "/proc/self/fd"}, {}, ""}));
    ::close(leaked);
    REQUIRE(child.pid() > 0);
    // 0, 1 and 2, plus the one ls opened to read the directory.
    CHECK(lines_of(read_all(child.process().stdout_fd.get())) ==
          std::vector<std::string>{"0", "1", "2", "3"});
    CHECK(child.wait() == 0);
}

TEST_CASE("spawn_process joins the child to its cgroup first, only a required one stops it") {
    const SpawnTempDir tmp;
    const std::string procs = tmp.path() + "/cgroup.procs";
    { std::ofstream(procs) << ""; }
    SpawnRequest request = shell("echo started");
    request.cgroup_procs = procs;
    request.cgroup_required = true;
    {
        Child child(spawn_process(request));
        CHECK(read_all(child.process().stdout_fd.get()) == "started\n");
        CHECK(child.wait() == 0);
    }
    // The child wrote "0" (itself) into cgroup.procs, as the kernel wants it.
    std::ifstream in(procs);
    CHECK(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()) == "0");

    request.cgroup_procs = tmp.path() + "/missing/cgroup.procs";
    const Result<SpawnedProcess> refused = spawn_process(request);
    REQUIRE_FALSE(refused.ok());
    CHECK_FALSE(refused.transient());
    CHECK_THAT(refused.error(), Contains("cannot join its cgroup") && Contains("missing"));

    // Accounting only: the child starts where mcpd is.
    request.cgroup_required = false;
    Child child(spawn_process(request));
    CHECK(read_all(child.process().stdout_fd.get()) == "started\n");
    CHECK(child.wait() == 0);
}
