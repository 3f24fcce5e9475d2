// Each server in its own box (docs/SANDBOX.md), with the real daemon and the demo server's
// probe tools: paths outside the rules are denied and hidden paths are not there, a network
// of "none" reaches nothing, limits stop an allocation, too many files and a fork bomb, each
// project's child writes its own project only, and strict refuses a rule this machine cannot
// enforce. mcpd says in status what it enforced; where this machine cannot enforce a rule the
// test prints mcpd's reason and checks what mcpd does instead.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "call_text.h"
#include "harness.h"
#include "loopback_listener.h"
#include "mcp_session.h"
#include "other_user.h"

using namespace integration;
using nlohmann::json;

namespace {

void write_text(const std::string& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
    REQUIRE(out.good());
}

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

bool holds(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// Whether one of status's sandbox sentences (`which`: "enforced" or "unenforced") holds `part`.
bool says(const json& server, const char* which, const std::string& part) {
    const json& box = server.at("sandbox");
    if (!box.at(which).is_array()) return false;
    for (const json& sentence : box.at(which)) {
        if (holds(sentence.get<std::string>(), part)) return true;
    }
    return false;
}

// The demo server to run under a memory limit: under the sanitizers, the copy built without
// them (ASan's shadow memory alone is past any such limit).
std::string plain_demo_server() {
#if defined(__SANITIZE_ADDRESS__)
    return bin("mcpd-demo-server-plain");
#else
    return bin("mcpd-demo-server");
#endif
}

std::string sandbox_table(const std::string& body) {
    return "{ " + body + " }";
}

}  // namespace

TEST_CASE("a boxed server reads and writes only what its rules allow, and never a hidden path",
          "[sandbox]") {
    TestEnv env("sandbox-paths");
    for (const char* dir : {"proj", "shared", "shared/secret", "outside"})
        REQUIRE(::mkdir(env.path(dir).c_str(), 0755) == 0);
    write_text(env.path("shared/notes.txt"), "notes");
    write_text(env.path("shared/secret/key"), "key");
    write_text(env.path("outside/other.txt"), "other");
    env.write_registry(server_toml(
        "demo", {"--probe-tools"},
        {{"cwd", toml_string(env.path("proj"))},
         {"sandbox", sandbox_table("preset = \"project\", read = [" +
                                   toml_string(env.path("shared")) + "], hide = [" +
                                   toml_string(env.path("shared/secret")) + "]")}}));
    env.start_daemon();
    McpSession session(env.socket(), "demo");
    session.initialize("boxed");
    const auto read = [&](const std::string& path) {
        return call_text(session, "read_path", {{"path", path}});
    };
    const auto write = [&](const std::string& path) {
        return call_text(session, "write_path", {{"path", path}, {"text", "ok"}});
    };

    const json server = env.server("demo");
    INFO(server.dump());
    REQUIRE(server.at("sandbox").at("preset") == "project");
    if (!says(server, "enforced", "Landlock")) {
        // A kernel without Landlock: mcpd says the path rules cannot hold, and starts it.
        WARN("no Landlock on this kernel: " << server.at("sandbox").dump());
        CHECK(says(server, "unenforced", "no Landlock"));
        CHECK(read(env.path("shared/notes.txt")) == "notes");
    } else {
        CHECK(holds(env.daemon_log(), "[demo] sandbox: paths: Landlock"));

        // What its rules grant.
        CHECK(read(env.path("shared/notes.txt")) == "notes");
        CHECK(write(env.path("proj/made.txt")) == "wrote 2 bytes");
        CHECK(read_text(env.path("proj/made.txt")) == "ok");
        // Libraries and configuration of the system are there.
        CHECK_FALSE(holds(read("/etc/passwd"), "cannot"));
        // Nothing else: not the test's other files, not mcpd's registry.
        CHECK(holds(read(env.path("outside/other.txt")), "Permission denied"));
        CHECK(holds(read(env.registry()), "Permission denied"));
        CHECK(holds(write(env.path("shared/new.txt")), "Permission denied"));
        CHECK(holds(write(env.path("outside/new.txt")), "Permission denied"));
        CHECK(holds(write(env.path("new.txt")), "Permission denied"));
        CHECK_FALSE(std::filesystem::exists(env.path("shared/new.txt")));
        // The hidden path under the readable tree: not there at all where a mount namespace
        // covers it, denied where only Landlock can.
        const std::string secret = read(env.path("shared/secret/key"));
        CHECK(holds(secret, "cannot open"));
        CHECK(secret.find("cannot open") == 0);
        if (says(server, "enforced", "tmpfs")) {
            CHECK(holds(secret, "No such file"));
            CHECK(holds(read(env.path("shared")), "notes.txt"));
        } else {
            WARN("no mount namespace here: the hidden path is cut out by Landlock alone");
            CHECK(holds(secret, "Permission denied"));
        }
    }
}

TEST_CASE("a sandbox's {cache} that another user made, or that others may write, is refused",
          "[sandbox]") {
    const OtherUser user;
    TestEnv env("sandbox-cache-dir");
    // As systemd's CacheDirectory= gives it (the harness sets CACHE_DIRECTORY): {cache} is
    // cache/servers/NAME, and another user got there first.
    const std::string cache = env.path("cache/servers/demo");
    std::filesystem::create_directories(cache);
    REQUIRE(::chown(cache.c_str(), user.uid(), user.gid()) == 0);
    REQUIRE(::chmod(cache.c_str(), 0777) == 0);
    env.write_registry(server_toml("demo", {"--probe-tools"},
                                   {{"restart", "\"never\""},
                                    {"sandbox", sandbox_table("preset = \"project\"")}}));
    env.start_daemon();
    env.wait_state("demo", "failed");
    const std::string error = env.server("demo").at("error").get<std::string>();
    INFO(error);
    CHECK(holds(error, "the sandbox's directory " + cache + " cannot be used"));
    CHECK(env.marked_processes().empty());

    // Its own, private one (made by mcpd) is used, with TMPDIR inside it.
    std::filesystem::remove_all(env.path("cache"));
    REQUIRE(env.ctl({"start", "demo", "--wait"}).exit_code == 0);
    struct stat st {};
    REQUIRE(::stat(cache.c_str(), &st) == 0);
    CHECK(st.st_uid == ::geteuid());
    CHECK((st.st_mode & 0777) == 0700);
    CHECK(std::filesystem::is_directory(cache + "/tmp"));
}

TEST_CASE("a server with network = \"none\" reaches nothing, one without a sandbox does",
          "[sandbox]") {
    TestEnv env("sandbox-network");
    const LoopbackListener listener;
    env.write_registry(
        server_toml("boxed", {"--probe-tools"}, {{"sandbox", sandbox_table("network = \"none\"")}}) +
        server_toml("lo", {"--probe-tools"}, {{"sandbox", sandbox_table("network = \"loopback\"")}}) +
        server_toml("open", {"--probe-tools"}));
    env.start_daemon();
    const json target = {{"host", "127.0.0.1"}, {"port", listener.port}};

    McpSession open(env.socket(), "open");
    open.initialize("open");
    CHECK(call_text(open, "connect_tcp", target) == "connected");

    McpSession boxed(env.socket(), "boxed");
    boxed.initialize("boxed");
    const std::string refused = call_text(boxed, "connect_tcp", target);
    INFO(refused);
    const json server = env.server("boxed");
    INFO(server.dump());
    CHECK(server.at("sandbox").at("network") == "none");
    if (says(server, "enforced", "network namespace") || says(server, "enforced", "TCP")) {
        CHECK(holds(refused, "cannot connect"));
    } else {
        WARN("network none cannot be enforced here: " << server.at("sandbox").dump());
        CHECK(says(server, "unenforced", "network none"));
    }
    // It still reads and writes where it likes: no path rule was asked for.
    CHECK_FALSE(holds(call_text(boxed, "read_path", {{"path", env.registry()}}), "cannot"));

    // loopback: a private network of its own, where the host's listeners are not.
    const json lo_server = env.server("lo");
    McpSession lo(env.socket(), "lo");
    lo.initialize("lo");
    const std::string lo_reply = call_text(lo, "connect_tcp", target);
    if (says(lo_server, "enforced", "network namespace")) {
        CHECK(holds(lo_reply, "cannot connect"));
    } else {
        WARN("network loopback not enforced here: " + lo_server.at("sandbox").dump());
        CHECK(says(lo_server, "unenforced", "network loopback"));
    }
}

TEST_CASE("limits stop a server's allocation past its memory and its files past open_files",
          "[sandbox]") {
    TestEnv env("sandbox-limits");
    env.write_registry(server_toml(
        "demo", {"--probe-tools"},
        {{"sandbox", sandbox_table("memory = \"96M\", open_files = 64")}}, plain_demo_server()));
    env.start_daemon();
    McpSession session(env.socket(), "demo");
    session.initialize("limits");
    const json server = env.server("demo");
    INFO(server.dump());
    CHECK(server.at("sandbox").at("memory_bytes") == 96 << 20);
    CHECK(server.at("sandbox").at("open_files") == 64);
    REQUIRE(says(server, "enforced", "RLIMIT_NOFILE"));
    const std::string files = call_text(session, "open_files", {{"count", 500}});
    INFO(files);
    CHECK(holds(files, "of 500 files; open failed: Too many open files"));
    CHECK_FALSE(holds(files, "opened 500"));
    CHECK(call_text(session, "allocate", {{"megabytes", 16}}) == "allocated 16 MiB");

    if (says(server, "enforced", "memory.max")) {
        // A delegated cgroup: past memory.max the kernel's OOM killer ends the server, and
        // mcpd says so as the restart's reason and counts it.
        session.call_tool("allocate", {{"megabytes", 200}});
        wait_until("the OOM kill to be counted", 20s, [&] {
            const json stats = json::parse(env.ctl({"--json", "stats", "demo"}).out);
            return stats.at("servers").at(0).at("oom_kills") == 1;
        });
        const json stats = json::parse(env.ctl({"--json", "stats", "demo"}).out);
        CHECK(stats.at("servers").at(0).at("restart_reasons").value("oom-kill", 0) == 1);
        CHECK(holds(env.daemon_log(), "the kernel's OOM killer ended it"));
        CHECK(env.server("demo").at("oom_kills") == 1);
        CHECK(env.server("demo").at("cgroup").at("memory_bytes").is_number());
    } else {
        // No cgroup delegated to mcpd here (mcpd --check-config says "cgroup: none delegated"):
        // RLIMIT_DATA holds the memory, and an allocation past it fails in the server instead of
        // ending it, so there is no OOM kill to count.
        const RunResult check = run_process({bin("mcpd"), "--check-config", env.registry()}, 20s);
        WARN("no OOM kill to see on this machine: " << check.out.substr(check.out.find("cgroup:")));
        REQUIRE(says(server, "enforced", "RLIMIT_DATA"));
        CHECK(call_text(session, "allocate", {{"megabytes", 200}}) ==
              "cannot allocate 200 MiB: Cannot allocate memory");
        // The server lives on, and answers.
        CHECK(call_text(session, "echo", {{"text", "alive"}}) == "alive");
        CHECK(env.server("demo").at("restarts") == 0);
        // Its peak memory holds the 16 MiB it touched; OOM kills are counted only in a cgroup.
        const json stats = json::parse(env.ctl({"--json", "stats", "demo"}).out);
        const json& figures = stats.at("servers").at(0);
        INFO(figures.dump());
        REQUIRE(figures.at("peak_rss_bytes").is_number_unsigned());
        CHECK(figures.at("peak_rss_bytes").get<std::uint64_t>() >= 16ULL << 20);
        CHECK(figures.at("oom_kills").is_null());
        CHECK(env.server("demo").at("oom_kills").is_null());
        CHECK(env.server("demo").at("cgroup").is_null());
        CHECK(holds(env.ctl({"stats", "demo"}).out, "demo: peak memory "));
        CHECK(holds(env.ctl({"metrics"}).out, "mcpd_server_peak_resident_bytes{server=\"demo\"} "));
    }
}

TEST_CASE("each project's child writes its own project only, and tasks stops a fork bomb",
          "[sandbox]") {
    const OtherUser user;
    TestEnv env("sandbox-projects");
    env.write_registry(kOpenSocket +
                       server_toml("proj", {"--probe-tools"},
                                   {{"sharing", "\"project\""},
                                    {"allow_users", "[\"" + user.id() + "\"]"},
                                    {"sandbox", sandbox_table("preset = \"project\", tasks = 16")}}));
    env.start_daemon();
    open_directory(env.dir());
    std::vector<std::string> projects;
    for (const char* name : {"alpha", "beta"}) {
        const std::string path = env.path(name);
        REQUIRE(::mkdir(path.c_str(), 0700) == 0);
        write_text(path + "/README", name);
        REQUIRE(::chown(path.c_str(), user.uid(), user.gid()) == 0);
        REQUIRE(::chown((path + "/README").c_str(), user.uid(), user.gid()) == 0);
        projects.push_back(std::filesystem::canonical(path).string());
    }
    const auto connect = [&](const std::string& directory, const std::string& err) {
        return std::make_unique<PipedProcess>(
            user.command({"/bin/sh", "-c",
                          "cd '" + directory + "' && exec '" + bin("mcpctl") + "' --socket '" +
                              env.socket() + "' connect proj"}),
            env.path(err));
    };
    auto alpha = connect(projects[0], "alpha.err");
    alpha->session().initialize("alpha");
    auto beta = connect(projects[1], "beta.err");
    beta->session().initialize("beta");
    const auto call = [](PipedProcess& agent, const std::string& tool, const json& arguments) {
        return call_text(agent.session(), tool, arguments);
    };

    // Each child reads and writes its own project; the other's is out of its box, though its
    // user owns both.
    const bool landlock = holds(env.daemon_log(), "[proj] sandbox: paths: Landlock");
    if (!landlock) {
        WARN("no Landlock on this kernel: " << env.daemon_log());
        CHECK(holds(env.daemon_log(), "[proj] sandbox not enforced: read, write and hide"));
    }
    CHECK(call(*alpha, "read_path", {{"path", projects[0] + "/README"}}) == "alpha");
    CHECK(call(*alpha, "write_path", {{"path", projects[0] + "/out"}, {"text", "a"}}) ==
          "wrote 1 bytes");
    CHECK(call(*beta, "read_path", {{"path", projects[1] + "/README"}}) == "beta");
    if (landlock) {
        CHECK(holds(call(*alpha, "read_path", {{"path", projects[1] + "/README"}}),
                    "Permission denied"));
        CHECK(holds(call(*alpha, "write_path", {{"path", projects[1] + "/out"}, {"text", "a"}}),
                    "Permission denied"));
        CHECK(holds(call(*beta, "read_path", {{"path", projects[0] + "/out"}}),
                    "Permission denied"));
    }

    // A fork bomb ends at its limit, and the server goes on answering. (The children's
    // sandboxes are told in the log: the entry's status stands for no process of its own.)
    const std::string bomb = call(*alpha, "spawn_processes", {{"count", 200}});
    INFO(bomb);
    const std::string log = env.daemon_log();
    if (holds(log, "tasks 16: RLIMIT_NPROC") || holds(log, "tasks 16: pids.max")) {
        CHECK(holds(bomb, "of 200 processes; fork failed: Resource temporarily unavailable"));
        CHECK_FALSE(holds(bomb, "started 200"));
    } else {
        WARN("tasks is not enforced on this machine: " + log);
        CHECK(holds(log, "[proj] sandbox not enforced: tasks"));
    }
    CHECK(call(*alpha, "echo", {{"text", "still here"}}) == "still here");
}

TEST_CASE("strict refuses to start a server whose rules this machine cannot enforce, and "
          "--check-config says so",
          "[sandbox]") {
    TestEnv env("sandbox-strict");
    // mcpd limits CPU only through a delegated cgroup, which it does not use yet.
    const std::string rules = "cpu = \"50%\", strict = true";
    env.write_registry(server_toml("strict", {}, {{"sandbox", sandbox_table(rules)}}) +
                       server_toml("lenient", {}, {{"sandbox", sandbox_table("cpu = \"50%\"")}}));
    const RunResult check = run_process({bin("mcpd"), "--check-config", env.registry()}, 20s);
    INFO(check.describe());
    CHECK(check.exit_code == 1);
    CHECK(holds(check.out, "refused (strict): cpu 50%"));
    CHECK(holds(check.out, "not enforced: cpu 50%"));
    CHECK(holds(check.err, "would not start"));

    env.start_daemon();
    env.wait_state("lenient", "running");
    env.wait_state("strict", "failed");
    const json strict = env.server("strict");
    INFO(strict.dump());
    CHECK(holds(strict.at("error").get<std::string>(), "strict = true: cpu 50%"));
    CHECK(env.server("strict").at("pid").is_null());
    CHECK(holds(env.daemon_log(), "[lenient] sandbox not enforced: cpu 50%"));
    const json lenient = env.server("lenient");
    CHECK(says(lenient, "unenforced", "delegated cgroup"));
}

TEST_CASE("a server that exits before it is ready under network = \"none\" is told why it may "
          "have failed",
          "[sandbox]") {
    TestEnv env("sandbox-offline");
    // As `npx -y` does when the registry is out of reach: it gives up before any answer.
    env.write_registry(server_toml("offline", {"-c", "echo 'npm error network' >&2; exit 3"},
                                   {{"restart", "\"never\""},
                                    {"sandbox", sandbox_table("network = \"none\"")}},
                                   "/bin/sh"));
    env.start_daemon();
    env.wait_state("offline", "failed");
    const std::string error = env.server("offline").at("error").get<std::string>();
    INFO(error);
    CHECK(holds(error, "exited with status 3 before it was ready"));
    CHECK(holds(error, "network = \"none\""));
    CHECK(holds(error, "npx -y"));
}

namespace {

// A line of /proc/PID/status ("Uid:\t61000\t..."), without its name; empty when absent.
std::string status_line(pid_t pid, const std::string& name) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(status, line);) {
        if (line.starts_with(name + ":")) return line.substr(name.size() + 1);
    }
    return {};
}

}  // namespace

TEST_CASE("a daemon that is not root boxes each server in user, mount and network namespaces "
          "of its own",
          "[sandbox]") {
    // As `systemctl --user` runs it: mcpd is the user, and every namespace is made through a
    // user namespace that maps the user onto itself.
    const OtherUser user;
    TestEnv env("sandbox-userns");
    open_directory(env.dir());
    const std::string base = env.path("user");
    for (const char* dir : {"", "/home", "/run", "/proj", "/shared", "/shared/secret"}) {
        const std::string path = base + dir;
        REQUIRE(::mkdir(path.c_str(), 0755) == 0);
        REQUIRE(::chown(path.c_str(), user.uid(), user.gid()) == 0);
    }
    REQUIRE(::chmod((base + "/run").c_str(), 0700) == 0);
    write_text(base + "/shared/notes", "notes");
    write_text(base + "/shared/secret/key", "key");
    const std::string registry = base + "/registry.toml";
    write_text(registry,
               "[servers.demo]\ncommand = " + toml_string(bin("mcpd-demo-server")) +
                   "\nargs = [\"--probe-tools\"]\ncwd = " + toml_string(base + "/proj") +
                   "\nsandbox = { preset = \"project\", read = [" + toml_string(base + "/shared") +
                   "], hide = [" + toml_string(base + "/shared/secret") +
                   "], network = \"none\", tasks = 10 }\n");
    for (const std::string& file : {registry, base + "/shared/notes", base + "/shared/secret/key"}) {
        REQUIRE(::chown(file.c_str(), user.uid(), user.gid()) == 0);
        REQUIRE(::chmod(file.c_str(), 0600) == 0);
    }
    // What this machine lets a daemon that is not root do.
    const RunResult check = run_process(user.command(
        {"/usr/bin/env", "HOME=" + base + "/home", bin("mcpd"), "--check-config", registry}));
    INFO(check.describe());
    if (!holds(check.out, "namespaces: through a user namespace per child") ||
        !holds(check.out, "Landlock ABI")) {
        // Unprivileged user namespaces restricted, or no Landlock: mcpd says which rules it
        // cannot enforce for such a daemon.
        WARN("a daemon that is not root cannot box fully here: " << check.out);
        CHECK(holds(check.out, "not enforced: "));
    } else {
        const std::string socket = base + "/run/mcpd.sock";
        BackgroundProcess daemon(user.command({"/usr/bin/env", "HOME=" + base + "/home", bin("mcpd"),
                                               "--config", registry, "--socket", socket}));
        wait_until("the user's mcpd to listen", 20s,
                   [&] { return std::filesystem::exists(socket); });
        McpSession session(socket, "demo");
        session.initialize("user daemon");
        const auto read = [&](const std::string& path) {
            return call_text(session, "read_path", {{"path", path}});
        };
        INFO(daemon.output());

        // The user's own files, which its rights alone would let it read: only its rules do.
        CHECK(read(base + "/shared/notes") == "notes");
        CHECK(holds(read(registry), "Permission denied"));
        const std::string secret = read(base + "/shared/secret/key");
        CHECK(secret.find("cannot open") == 0);
        CHECK(call_text(session, "write_path", {{"path", base + "/proj/out"}, {"text", "x"}}) ==
              "wrote 1 bytes");
        const LoopbackListener listener;
        CHECK(holds(call_text(session, "connect_tcp", {{"host", "127.0.0.1"}, {"port", listener.port}}),
                    "cannot connect"));
        // RLIMIT_NPROC in its own user namespace counts the box's processes only.
        const std::string bomb = call_text(session, "spawn_processes", {{"count", 50}});
        INFO(bomb);
        CHECK(holds(bomb, "of 50 processes; fork failed: Resource temporarily unavailable"));

        // The server runs as the user, in namespaces of its own.
        const RunResult status =
            run_process(user.command({bin("mcpctl"), "--socket", socket, "--json", "status"}));
        REQUIRE(status.exit_code == 0);
        const json server = json::parse(status.out).at("servers").at(0);
        INFO(server.dump());
        const pid_t pid = server.at("pid").get<pid_t>();
        CHECK(status_line(pid, "Uid").starts_with("\t" + user.id() + "\t"));
        CHECK(holds(status_line(pid, "NoNewPrivs"), "1"));
        for (const char* ns : {"user", "mnt", "net"}) {
            CHECK(std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/ns/" + ns) !=
                  std::filesystem::read_symlink(std::string("/proc/self/ns/") + ns));
        }
        CHECK(says(server, "enforced", "tasks 10: RLIMIT_NPROC in a user namespace"));
        CHECK(says(server, "enforced", "tmpfs"));
    }
}
