// A child that runs as another user (a project's child on a daemon running as root): its
// groups, gid and uid are the user's before it enters its directory, its environment names
// the user, and a "~/" env_file is the user's own, read with the user's rights. Run as root,
// as CI does: only root can start a process as another user.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "daemon/server/spawn.h"
#include "daemon/server/user_env_file.h"

using namespace mcpd;

namespace {

constexpr uid_t kSpawnUser = 64021;
constexpr gid_t kSpawnExtraGroup = 64022;

config::ChildIdentity spawn_identity_in(const std::string& home) {
    return config::ChildIdentity{kSpawnUser, kSpawnUser, {kSpawnExtraGroup}, "someone", home};
}

// A fresh directory, removed with everything in it.
struct IdentityScratch {
    IdentityScratch() {
        std::string pattern =
            (std::filesystem::temp_directory_path() / "mcpd-identity-XXXXXX").string();
        REQUIRE(::mkdtemp(pattern.data()) != nullptr);
        path = pattern;
        REQUIRE(::chmod(path.c_str(), 0755) == 0);
    }
    ~IdentityScratch() {
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
    }
    std::string path;
};

// Everything the process writes to stdout, and its exit status once it has ended.
std::string spawned_output(SpawnedProcess& process, int& status) {
    std::string out;
    char buffer[4096];
    for (;;) {
        const ssize_t n = ::read(process.stdout_fd.get(), buffer, sizeof buffer);
        if (n > 0) {
            out.append(buffer, static_cast<std::size_t>(n));
        } else if (n == 0 || errno != EAGAIN) {
            break;
        } else {
            ::usleep(10000);
        }
    }
    REQUIRE(::waitpid(process.pid, &status, 0) == process.pid);
    return out;
}

void write_owned_file(const std::string& path, const std::string& text, uid_t owner, mode_t mode) {
    std::ofstream(path) << text;
    REQUIRE(::chown(path.c_str(), owner, owner) == 0);
    REQUIRE(::chmod(path.c_str(), mode) == 0);
}

void require_root_for_identity() {
    INFO("these tests start processes as another user: run them as root, as CI does");
    REQUIRE(::geteuid() == 0);
}

}  // namespace

TEST_CASE("spawn_process runs a child as its user: groups, gid and uid, then its directory",
          "[spawn][identity]") {
    require_root_for_identity();
    const IdentityScratch scratch;
    SpawnRequest request{
        "/bin/sh", {"sh", "-c", "id -u; id -g; id -G; pwd"}, {}, scratch.path, spawn_identity_in("/")};
    Result<SpawnedProcess> process = spawn_process(request);
    REQUIRE(process);
    int status = 0;
    CHECK(spawned_output(process.value(), status) ==
          "64021\n64021\n64021 64022\n" + scratch.path + "\n");
    CHECK(WIFEXITED(status));

    // A directory the user may not enter is an error, though mcpd could.
    const std::string closed = scratch.path + "/closed";
    REQUIRE(::mkdir(closed.c_str(), 0700) == 0);
    request.cwd = closed;
    const Result<SpawnedProcess> refused = spawn_process(request);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().find("cannot change to directory '" + closed + "'") != std::string::npos);
    CHECK(refused.error().find("Permission denied") != std::string::npos);
}

TEST_CASE(
    "a child of another user gets its HOME, USER and LOGNAME, and none of mcpd's XDG "
    "directories",
    "[spawn][identity]") {
    config::ServerConfig server;
    server.name = "s";
    server.command = "x";
    server.run_as = spawn_identity_in("/home/someone");
    server.env = {{"EXTRA", "1"}};
    const char* const parent[] = {"HOME=/root",    "USER=root",
                                  "LOGNAME=root",  "XDG_RUNTIME_DIR=/run/user/0",
                                  "PATH=/usr/bin", nullptr};
    const std::vector<std::string> env = build_child_environment(server, parent);
    CHECK(env == std::vector<std::string>{"HOME=/home/someone", "USER=someone", "LOGNAME=someone",
                                          "PATH=/usr/bin", "EXTRA=1"});
}

TEST_CASE("a \"~/\" env_file is the user's own, read with the user's rights", "[spawn][identity]") {
    require_root_for_identity();
    const IdentityScratch scratch;
    const std::string home = scratch.path + "/home";
    REQUIRE(::mkdir(home.c_str(), 0700) == 0);
    REQUIRE(::chown(home.c_str(), kSpawnUser, kSpawnUser) == 0);
    write_owned_file(home + "/token.env", "TOKEN=the-users-own\n", kSpawnUser, 0600);
    write_owned_file(home + "/planted.env", "TOKEN=roots-secret\n", 0, 0600);
    write_owned_file(home + "/broken.env", "TOKEN=fine\nnot a line\n", kSpawnUser, 0600);
    CHECK(is_user_env_file("~/token.env"));
    CHECK_FALSE(is_user_env_file("/etc/token.env"));

    const auto vars = read_user_env_file("~/token.env", spawn_identity_in(home), "/root");
    REQUIRE(vars);
    CHECK(vars.value() == std::map<std::string, std::string>{{"TOKEN", "the-users-own"}});
    // A file in its home that only root may read is not read for it.
    const auto planted = read_user_env_file("~/planted.env", spawn_identity_in(home), "/root");
    REQUIRE_FALSE(planted);
    CHECK(planted.error().find(home + "/planted.env") != std::string::npos);
    CHECK(planted.error().find("roots-secret") == std::string::npos);
    // Malformed: the line, never a value.
    const auto broken = read_user_env_file("~/broken.env", spawn_identity_in(home), "/root");
    REQUIRE_FALSE(broken);
    CHECK(broken.error().find("line 2") != std::string::npos);
    CHECK(broken.error().find("fine") == std::string::npos);
    // Missing: named.
    CHECK(read_user_env_file("~/missing.env", spawn_identity_in(home), "/root")
              .error()
              .find(home + "/missing.env") != std::string::npos);
    // mcpd's own child: mcpd's HOME.
    const auto own = read_user_env_file("~/home/token.env", std::nullopt, scratch.path);
    REQUIRE(own);
    CHECK(own.value().at("TOKEN") == "the-users-own");
}
