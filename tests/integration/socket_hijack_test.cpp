// Another local user tries to take over a user's mcpd socket: by making its directory first
// (as a directory of theirs, a symbolic link, or a directory the victim owns but others may
// write), by listening where mcpctl looks, or by leaving a stale socket of theirs there. Each
// is refused, and the impostor receives nothing. Victim and attacker are two uids no account
// uses (other_user.h); the test runs as root, as CI does, and fails when it cannot.
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "harness.h"
#include "other_user.h"

using namespace integration;
namespace fs = std::filesystem;

namespace {

// A process of `user` listening on `path` that counts every byte it is sent until stopped.
class ForeignListener {
public:
    ForeignListener(const OtherUser& user, const std::string& path, bool stay_listening = true) {
        int ready[2];
        int done[2];
        REQUIRE(::pipe(ready) == 0);
        REQUIRE(::pipe(done) == 0);
        pid_ = ::fork();
        REQUIRE(pid_ >= 0);
        if (pid_ == 0) {
            ::close(ready[0]);
            ::close(done[1]);
            if (::setresgid(user.gid(), user.gid(), user.gid()) != 0 ||
                ::setgroups(0, nullptr) != 0 ||
                ::setresuid(user.uid(), user.uid(), user.uid()) != 0)
                _exit(10);
            _exit(serve(path, ready[1], done[0], stay_listening));
        }
        ::close(ready[1]);
        ::close(done[0]);
        stop_fd_ = done[1];
        char byte = 0;
        const bool up = ::read(ready[0], &byte, 1) == 1;
        ::close(ready[0]);
        REQUIRE(up);
    }
    ~ForeignListener() { stop(); }

    // Stop it and wait until it has written what it received (see bytes_received).
    void stop() {
        if (pid_ <= 0) return;
        const char go = 'q';
        if (::write(stop_fd_, &go, 1) != 1) ::kill(pid_, SIGKILL);
        ::close(stop_fd_);
        int status = 0;
        ::waitpid(pid_, &status, 0);
        pid_ = -1;
    }

private:
    static int serve(const std::string& path, int ready_fd, int stop_fd, bool stay_listening) {
        const int listener = ::socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
        ::unlink(path.c_str());
        if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return 11;
        ::chmod(path.c_str(), 0777);
        if (::listen(listener, 64) != 0) return 12;
        if (!stay_listening) ::close(listener);  // a stale socket: the file stays, nobody home
        const char byte = 'r';
        if (::write(ready_fd, &byte, 1) != 1) return 13;
        long received = 0;
        std::vector<pollfd> fds{{stop_fd, POLLIN, 0}};
        if (stay_listening) fds.push_back({listener, POLLIN, 0});
        for (;;) {
            if (::poll(fds.data(), fds.size(), -1) < 0) continue;
            if (fds[0].revents != 0) break;
            for (std::size_t i = 1; i < fds.size(); ++i) {
                if (fds[i].revents == 0) continue;
                if (fds[i].fd == listener) {
                    const int c = ::accept(listener, nullptr, nullptr);
                    if (c >= 0) fds.push_back({c, POLLIN, 0});
                    continue;
                }
                char buf[4096];
                const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
                if (n > 0) {
                    received += n;
                } else {
                    ::close(fds[i].fd);
                    fds[i].fd = -1;  // poll ignores it from now on
                }
            }
        }
        // Report through a file next to the socket, readable by the test (root).
        const std::string report = path + ".received";
        const int out = ::open(report.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (out >= 0) {
            const std::string text = std::to_string(received);
            if (::write(out, text.data(), text.size()) < 0) return 14;
            ::close(out);
        }
        return 0;
    }

    pid_t pid_ = -1;
    int stop_fd_ = -1;
};

// The bytes a stopped ForeignListener on `path` received, from its report file.
long bytes_received(const std::string& path) {
    std::ifstream in(path + ".received");
    long received = -1;
    in >> received;
    return received;
}

// The per-user default directory of `user` when XDG_RUNTIME_DIR is unset (no /run/user/UID
// exists for a uid no account uses).
std::string tmp_dir_of(const OtherUser& user) { return "/tmp/mcpd-" + user.id(); }

// argv for `user` without XDG_RUNTIME_DIR or MCPD_SOCKET, as an agent's minimal environment.
std::vector<std::string> as_user(const OtherUser& user, std::vector<std::string> argv) {
    std::vector<std::string> wrapped{"/usr/bin/env", "-u", "XDG_RUNTIME_DIR", "-u", "MCPD_SOCKET",
                                     "-u", "MCPD_SOCKET_OWNER"};
    wrapped.insert(wrapped.end(), argv.begin(), argv.end());
    return user.command(wrapped);
}

// Removes the victim's /tmp/mcpd-UID whatever the test left there.
struct RemoveAfter {
    std::string path;
    ~RemoveAfter() {
        std::error_code ignored;
        fs::remove_all(path, ignored);
        fs::remove(path, ignored);
    }
};

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// A registry the victim can read.
std::string victim_registry(TestEnv& env) {
    env.write_registry(server_toml("demo"));
    open_directory(env.dir());
    ::chmod(env.registry().c_str(), 0644);
    return env.registry();
}

}  // namespace

TEST_CASE("mcpd refuses a socket directory another user made first", "[socket][hijack]") {
    TestEnv env("hijack-foreign-dir");
    const OtherUser victim(0), attacker(1);
    const std::string registry = victim_registry(env);
    const std::string dir = tmp_dir_of(victim);
    RemoveAfter cleanup{dir};

    for (const mode_t mode : {mode_t{0700}, mode_t{0777}}) {
        fs::remove_all(dir);
        REQUIRE(::mkdir(dir.c_str(), mode) == 0);
        REQUIRE(::chmod(dir.c_str(), mode) == 0);
        REQUIRE(::chown(dir.c_str(), attacker.uid(), attacker.gid()) == 0);
        const RunResult started = run_process(as_user(victim, {bin("mcpd"), "--config", registry}), 15s);
        INFO(started.describe());
        CHECK_FALSE(started.timed_out);
        CHECK(started.exit_code == 1);
        CHECK(contains(started.err, "'" + dir + "' belongs to uid " + attacker.id()));
        CHECK(contains(started.err, "rm -r '" + dir + "'"));
        CHECK(fs::is_empty(dir));  // mcpd put nothing in it
    }
}

TEST_CASE("mcpd refuses a symbolic link as its socket directory", "[socket][hijack]") {
    TestEnv env("hijack-symlink");
    const OtherUser victim(0), attacker(1);
    const std::string registry = victim_registry(env);
    const std::string dir = tmp_dir_of(victim);
    RemoveAfter cleanup{dir};
    const std::string target = env.path("attackers");
    REQUIRE(::mkdir(target.c_str(), 0777) == 0);
    REQUIRE(::chmod(target.c_str(), 0777) == 0);
    REQUIRE(::chown(target.c_str(), attacker.uid(), attacker.gid()) == 0);
    fs::remove_all(dir);
    REQUIRE(::symlink(target.c_str(), dir.c_str()) == 0);
    REQUIRE(::lchown(dir.c_str(), attacker.uid(), attacker.gid()) == 0);

    const RunResult started = run_process(as_user(victim, {bin("mcpd"), "--config", registry}), 15s);
    INFO(started.describe());
    CHECK(started.exit_code == 1);
    CHECK(contains(started.err, "'" + dir + "' is a symbolic link"));
    CHECK(fs::is_empty(target));
}

TEST_CASE("mcpd refuses its own socket directory when others may write to it", "[socket][hijack]") {
    TestEnv env("hijack-group-writable");
    const OtherUser victim(0);
    const std::string registry = victim_registry(env);
    const std::string dir = tmp_dir_of(victim);
    RemoveAfter cleanup{dir};
    fs::remove_all(dir);
    REQUIRE(::mkdir(dir.c_str(), 0770) == 0);
    REQUIRE(::chmod(dir.c_str(), 0770) == 0);
    REQUIRE(::chown(dir.c_str(), victim.uid(), victim.gid()) == 0);

    const RunResult started = run_process(as_user(victim, {bin("mcpd"), "--config", registry}), 15s);
    INFO(started.describe());
    CHECK(started.exit_code == 1);
    CHECK(contains(started.err, "'" + dir + "' is writable by other users (mode 0770)"));
    CHECK(fs::is_empty(dir));

    // Only readable by others: tightened, and mcpd starts (the test's set-up is sound).
    REQUIRE(::chmod(dir.c_str(), 0755) == 0);
    BackgroundProcess daemon(as_user(victim, {bin("mcpd"), "--config", registry}));
    REQUIRE(daemon.wait_for_output("listening on " + dir + "/mcpd.sock", 20s));
    struct stat st {};
    REQUIRE(::lstat(dir.c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0700);
    const RunResult status = run_process(as_user(victim, {bin("mcpctl"), "status"}), 20s);
    INFO(status.describe());
    CHECK(status.exit_code == 0);
    CHECK(contains(status.out, "demo"));
    // Which socket the client took, and why, for anyone wondering where it looked.
    const RunResult version = run_process(as_user(victim, {bin("mcpctl"), "--json", "version"}), 20s);
    INFO(version.describe());
    REQUIRE(version.exit_code == 0);
    const nlohmann::json client = nlohmann::json::parse(version.out)["client"];
    CHECK(client["socket"] == dir + "/mcpd.sock");
    CHECK(contains(client["reason"].get<std::string>(), "XDG_RUNTIME_DIR is unset"));
    CHECK(daemon.stop(SIGTERM) == 0);
}

TEST_CASE("mcpctl sends nothing to a listener of another user", "[socket][hijack]") {
    TestEnv env("hijack-listener");
    const OtherUser victim(0), attacker(1);
    const std::string dir = tmp_dir_of(victim);
    RemoveAfter cleanup{dir};
    fs::remove_all(dir);
    REQUIRE(::mkdir(dir.c_str(), 0777) == 0);
    REQUIRE(::chmod(dir.c_str(), 0777) == 0);
    REQUIRE(::chown(dir.c_str(), attacker.uid(), attacker.gid()) == 0);
    const std::string socket = dir + "/mcpd.sock";
    {
        ForeignListener impostor(attacker, socket);
        // A command, an agent's session, and the ssh channel's end (dial): each refused.
        const std::string initialize =
            R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"agent","version":"1"}}})";
        const std::vector<std::vector<std::string>> commands{
            {bin("mcpctl"), "status"},
            {"/bin/sh", "-c", "printf '%s\\n' '" + initialize + "' | " + bin("mcpctl") + " connect demo"},
            {"/bin/sh", "-c", "printf '%s\\n' '" + initialize + "' | " + bin("mcpctl") + " dial"},
        };
        for (const auto& command : commands) {
            const RunResult result = run_process(as_user(victim, command), 20s);
            INFO(result.describe());
            CHECK_FALSE(result.timed_out);
            CHECK(result.exit_code == 1);
            CHECK(contains(result.err, "refusing to talk to " + socket));
            CHECK(contains(result.err, "runs as uid " + attacker.id()));
            CHECK(contains(result.err, "not as you (uid " + victim.id()));
        }
        impostor.stop();
    }
    CHECK(bytes_received(socket) == 0);

    // The victim's own daemon is not started over it either: the directory is not theirs.
    const std::string registry = victim_registry(env);
    const RunResult started = run_process(as_user(victim, {bin("mcpd"), "--config", registry}), 15s);
    CHECK(started.exit_code == 1);
}

TEST_CASE("mcpd names a foreign listener and keeps a foreign stale socket", "[socket][hijack]") {
    // A socket the victim names in a shared sticky directory, as /tmp is: others can put a
    // socket there first but cannot remove the victim's.
    TestEnv env("hijack-named");
    const OtherUser victim(0), attacker(1);
    const std::string registry = victim_registry(env);
    const std::string shared = env.path("shared");
    REQUIRE(::mkdir(shared.c_str(), 01777) == 0);
    REQUIRE(::chmod(shared.c_str(), 01777) == 0);
    const std::string socket = shared + "/mcpd.sock";

    {
        ForeignListener impostor(attacker, socket);
        const RunResult started = run_process(
            as_user(victim, {bin("mcpd"), "--config", registry, "--socket", socket}), 15s);
        INFO(started.describe());
        CHECK(started.exit_code == 1);
        CHECK(contains(started.err, "a process of uid " + attacker.id() +
                                        ", not of mcpd's user (uid " + victim.id() +
                                        "), is listening on " + socket));
        impostor.stop();
    }
    CHECK(bytes_received(socket) == 0);  // mcpd's probe connected, and said nothing

    ForeignListener stale(attacker, socket, false);
    const RunResult started = run_process(
        as_user(victim, {bin("mcpd"), "--config", registry, "--socket", socket}), 15s);
    INFO(started.describe());
    CHECK(started.exit_code == 1);
    CHECK(contains(started.err, "a stale socket of uid " + attacker.id() + " is at " + socket));
    struct stat st {};
    REQUIRE(::lstat(socket.c_str(), &st) == 0);  // still there, still the attacker's
    CHECK(st.st_uid == attacker.uid());
}

TEST_CASE("socket_group lets that group's allowed users in, and nobody else", "[socket][access]") {
    // allow_groups on a daemon whose socket is otherwise private: the group reaches the socket
    // (0660, its group), mcpd's own check still decides; others cannot even connect.
    TestEnv env("socket-group");
    const OtherUser member(0), stranger(1);
    env.write_registry("[daemon]\nsocket_group = \"nogroup\"\n\n" +
                       server_toml("demo", {}, {{"allow_groups", "[\"nogroup\"]"}}));
    env.start_daemon();
    env.wait_state("demo", "running");
    open_directory(env.dir());
    struct stat st {};
    REQUIRE(::lstat(env.socket().c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0660);
    CHECK(st.st_gid == 65534);

    // The member runs with nogroup as a supplementary group, as a login in that group would.
    const std::vector<std::string> as_member{"/usr/bin/setpriv", "--reuid=" + member.id(),
                                             "--regid=" + member.id(), "--groups=65534", "--"};
    std::vector<std::string> status = as_member;
    for (const std::string& word : {bin("mcpctl"), std::string("--socket"), env.socket(),
                                    std::string("--json"), std::string("status")})
        status.push_back(word);
    // The daemon runs as root, whom mcpctl always trusts.
    const RunResult allowed = run_process(status, 20s);
    INFO(allowed.describe());
    CHECK(allowed.exit_code == 0);
    CHECK(allowed.out.find("\"demo\"") != std::string::npos);

    const RunResult refused = run_process(
        stranger.command({bin("mcpctl"), "--socket", env.socket(), "status"}), 20s);
    INFO(refused.describe());
    CHECK(refused.exit_code == 1);
    CHECK(refused.err.find("Permission denied") != std::string::npos);
}
