// mcpctl adopt as a careful editor: the registry it creates is private, env values go to env
// files, the registry is checked and locked, a same-named server is never re-pointed, backups
// are its own, --undo keeps later edits, owners and modes stay, links are named.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "adopt_environment.h"
#include "config/registry.h"
#include "ctl/command.h"
#include "read_file.h"
#include "run_mcpctl.h"
#include "temp_dir.h"

namespace fs = std::filesystem;

namespace {

void put_file(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
}

unsigned mode_of(const std::string& path) {
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    return st.st_mode & 07777;
}

// A run of adopt on `file` into `registry`, with a socket nobody listens on.
Ran adopt_file(const TempDir& dir, const std::string& file, const std::string& registry,
               std::vector<std::string> more = {}) {
    std::vector<std::string> args = {
        "--socket", dir.path("nobody.sock"), "adopt", file, "--registry", registry};
    args.insert(args.end(), more.begin(), more.end());
    return run(args);
}

constexpr const char* kSecretAgent =
    R"({"mcpServers": {"db": {"command": "psql-mcp", "env": {"PGPASSWORD": "s3cret value"}}}})";

}  // namespace

TEST_CASE("adopt creates the registry 0600 and keeps env values in a 0600 env file", "[adopt]") {
    TempDir dir("mcpctl-adopt");
    const AdoptEnvironment environment(dir.path(""), dir.path(""), dir.path("state"));
    const std::string file = dir.path("agent.json");
    const std::string registry = dir.path("conf/mcpd.toml");
    put_file(file, kSecretAgent);
    const mode_t old_umask = ::umask(022);
    const Ran adopted = adopt_file(dir, file, registry);
    ::umask(old_umask);
    REQUIRE(adopted.exit_code == 0);

    CHECK(mode_of(registry) == 0600);
    CHECK(mode_of(dir.path("conf")) == 0700);
    const std::string text = read_file(registry);
    CHECK(text.find("s3cret") == std::string::npos);
    CHECK_THAT(text, Catch::Contains("env_file = \"" + dir.path("conf/db.env") + "\""));
    CHECK(mode_of(dir.path("conf/db.env")) == 0600);
    CHECK(read_file(dir.path("conf/db.env")) == "PGPASSWORD=s3cret value\n");
    const mcpd::config::LoadResult loaded = mcpd::config::load_registry(registry);
    REQUIRE(loaded.registry);
    CHECK(loaded.registry->find("db")->env_file_vars.at("PGPASSWORD") == "s3cret value");
    CHECK(adopted.out.find("s3cret") == std::string::npos);
    CHECK(adopted.err.find("s3cret") == std::string::npos);
}

TEST_CASE("adopt warns about a registry others can read and writes no secret into it", "[adopt]") {
    TempDir dir("mcpctl-adopt");
    const AdoptEnvironment environment(dir.path(""), dir.path(""), dir.path("state"));
    const std::string file = dir.path("agent.json");
    const std::string registry = dir.path("mcpd.toml");
    put_file(file, kSecretAgent);
    put_file(registry, "[servers.other]\ncommand = \"x\"\n");
    ::chmod(registry.c_str(), 0644);

    const Ran adopted = adopt_file(dir, file, registry);
    REQUIRE(adopted.exit_code == 0);
    CHECK_THAT(adopted.out, Catch::Contains("note: " + registry +
                                            " can be read by other users: the env values of "
                                            "the servers added go to env files"));
    CHECK(read_file(registry).find("s3cret") == std::string::npos);
    CHECK(mode_of(registry) == 0644);
    CHECK(mode_of(dir.path("db.env")) == 0600);
}

TEST_CASE("a server the registry would not load with stays in the agent's file", "[adopt]") {
    TempDir dir("mcpctl-adopt");
    const AdoptEnvironment environment(dir.path(""), dir.path(""), dir.path("state"));
    const std::string file = dir.path("agent.json");
    const std::string registry = dir.path("mcpd.toml");
    const std::string agent =
        R"({"mcpServers": {"tools": {"command": "t", "env": {"KEY": "v"}},
                           "far": {"command": "f", "cwd": "/no/such/dir"}}})";
    put_file(file, agent);
    const std::string before =
        "[servers.x]\ncommand = \"x\"\n\n[groups.tools]\nservers = [\"x\"]\n";
    put_file(registry, before);

    const Ran adopted = adopt_file(dir, file, registry);
    CHECK(adopted.exit_code == 0);
    CHECK_THAT(adopted.out,
               Catch::Contains("left as it is: tools: the registry would not load with it") &&
                   Catch::Contains("left as it is: far: the registry would not load with it"));
    CHECK(read_file(registry) == before);
    CHECK(read_file(file) == agent);
    CHECK_FALSE(fs::exists(dir.path("tools.env")));
    CHECK(mcpd::config::load_registry(registry).registry.has_value());
}

TEST_CASE("adopt never points an entry at a same-named server that runs something else",
          "[adopt]") {
    TempDir dir("mcpctl-adopt");
    const AdoptEnvironment environment(dir.path(""), dir.path(""), dir.path("state"));
    const std::string file = dir.path("agent.json");
    const std::string registry = dir.path("mcpd.toml");
    const std::string agent = R"({"mcpServers": {"git": {"command": "my-git-server"},
                                                 "same": {"command": "s", "args": ["1"]}}})";
    put_file(file, agent);
    const std::string before =
        "[servers.git]\ncommand = \"other-git-server\"\n\n[servers.same]\ncommand = \"s\"\n"
        "args = [\"1\"]\n";
    put_file(registry, before);

    const Ran adopted = adopt_file(dir, file, registry);
    CHECK(adopted.exit_code == 0);
    CHECK_THAT(adopted.out, Catch::Contains("left as it is: git: " + registry +
                                            " has a server 'git' with another command"));
    CHECK_THAT(adopted.out, Catch::Contains("already in " + registry + ": same"));
    const nlohmann::json doc = nlohmann::json::parse(read_file(file));
    CHECK(doc["mcpServers"]["git"]["command"] == "my-git-server");
    CHECK(doc["mcpServers"]["same"]["args"] == nlohmann::json({"connect", "same"}));
    CHECK(read_file(registry) == before);
}

TEST_CASE("adopt refuses a backup it did not write, before and at --undo", "[adopt]") {
    TempDir dir("mcpctl-adopt");
    const AdoptEnvironment environment(dir.path(""), dir.path(""), dir.path("state"));
    const std::string file = dir.path("agent.json");
    const std::string registry = dir.path("mcpd.toml");
    const std::string agent = R"({"mcpServers": {"a": {"command": "x"}}})";
    put_file(file, agent);
    put_file(file + ".mcpd-backup", R"({"mcpServers": {"a": {"command": "planted"}}})");

    const Ran planted = adopt_file(dir, file, registry);
    CHECK(planted.exit_code == 1);
    CHECK_THAT(planted.err, Catch::Contains(file + " is left as it is: " + file +
                                            ".mcpd-backup was not written by mcpctl adopt"));
    CHECK(read_file(file) == agent);
    CHECK_FALSE(fs::exists(registry));

    // A link planted where the backup goes is not followed either.
    fs::remove(file + ".mcpd-backup");
    fs::create_symlink(dir.path("elsewhere"), file + ".mcpd-backup");
    CHECK(adopt_file(dir, file, registry).exit_code == 1);
    CHECK_FALSE(fs::exists(dir.path("elsewhere")));
    fs::remove(file + ".mcpd-backup");

    // Adopt's own backup, swapped for another afterwards, is not restored.
    REQUIRE(adopt_file(dir, file, registry).exit_code == 0);
    CHECK(read_file(file + ".mcpd-backup") == agent);
    const std::string adopted = read_file(file);
    put_file(file + ".mcpd-backup", R"({"mcpServers": {"a": {"command": "evil"}}})");
    const Ran undo = adopt_file(dir, file, registry, {"--undo"});
    CHECK(undo.exit_code == 1);
    CHECK_THAT(undo.err, Catch::Contains(".mcpd-backup changed since mcpctl adopt wrote it"));
    CHECK(read_file(file) == adopted);
    CHECK(adopt_file(dir, file, registry, {"--undo", "--force"}).exit_code == 1);
    CHECK(read_file(file) == adopted);
}

TEST_CASE("adopt --undo keeps edits made since, unless forced", "[adopt]") {
    TempDir dir("mcpctl-adopt");
    const AdoptEnvironment environment(dir.path(""), dir.path(""), dir.path("state"));
    const std::string file = dir.path("agent.json");
    const std::string registry = dir.path("mcpd.toml");
    const std::string agent = R"({"mcpServers": {"a": {"command": "x"}}})";
    put_file(file, agent);
    REQUIRE(adopt_file(dir, file, registry).exit_code == 0);

    std::string edited = read_file(file);
    edited.insert(edited.rfind('}'), ", \"theme\": \"dark\"");
    put_file(file, edited);
    const Ran refused = adopt_file(dir, file, registry, {"--undo"});
    CHECK(refused.exit_code == 1);
    CHECK_THAT(refused.err, Catch::Contains(file + " was not restored: it changed since mcpctl "
                                                   "adopt rewrote it") &&
                                Catch::Contains("--force"));
    CHECK(read_file(file) == edited);
    CHECK(fs::exists(file + ".mcpd-backup"));

    const Ran forced = adopt_file(dir, file, registry, {"--undo", "--force"});
    CHECK(forced.exit_code == 0);
    CHECK(read_file(file) == agent);
    CHECK_FALSE(fs::exists(file + ".mcpd-backup"));

    // Unchanged since adopt wrote it, it goes back without --force.
    REQUIRE(adopt_file(dir, file, registry).exit_code == 0);
    CHECK(adopt_file(dir, file, registry, {"--undo"}).exit_code == 0);
    CHECK(read_file(file) == agent);
}

TEST_CASE("adopt keeps a file's owner and mode and names a link's target", "[adopt]") {
    REQUIRE(::geteuid() == 0);  // the tests run as root, which may give files to any uid
    TempDir dir("mcpctl-adopt");
    const AdoptEnvironment environment(dir.path(""), dir.path(""), dir.path("state"));
    const std::string file = dir.path("agent.json");
    const std::string registry = dir.path("mcpd.toml");
    constexpr uid_t kUid = 54321;
    constexpr gid_t kGid = 54322;
    put_file(file, R"({"mcpServers": {"a": {"command": "x"}}})");
    REQUIRE(::chown(file.c_str(), kUid, kGid) == 0);
    REQUIRE(::chmod(file.c_str(), 0640) == 0);
    put_file(registry, "");
    REQUIRE(::chown(registry.c_str(), kUid, kGid) == 0);
    REQUIRE(::chmod(registry.c_str(), 0640) == 0);

    REQUIRE(adopt_file(dir, file, registry).exit_code == 0);
    struct stat st {};
    REQUIRE(::stat(file.c_str(), &st) == 0);
    CHECK(st.st_uid == kUid);
    CHECK(st.st_gid == kGid);
    CHECK((st.st_mode & 07777) == 0640);
    REQUIRE(::stat((file + ".mcpd-backup").c_str(), &st) == 0);
    CHECK(st.st_uid == kUid);
    CHECK((st.st_mode & 07777) == 0600);
    REQUIRE(::stat(registry.c_str(), &st) == 0);
    CHECK(st.st_uid == kUid);
    CHECK((st.st_mode & 07777) == 0640);
    CHECK_THAT(read_file(registry), Catch::Contains("[servers.a]"));

    // Through a link: the link stays, its target is rewritten and named.
    const std::string target = dir.path("dotfiles/mcp.json");
    fs::create_directory(dir.path("dotfiles"));
    put_file(target, R"({"mcpServers": {"b": {"command": "y"}}})");
    const std::string link = dir.path("linked.json");
    fs::create_symlink(target, link);
    const Ran linked = adopt_file(dir, link, registry);
    REQUIRE(linked.exit_code == 0);
    CHECK_THAT(linked.out, Catch::Contains("a symbolic link: written through it to " + target));
    CHECK(fs::is_symlink(link));
    CHECK_THAT(read_file(target), Catch::Contains("\"connect\", \"b\""));
}

TEST_CASE("two adopts at once give the registry one table per server", "[adopt]") {
    TempDir dir("mcpctl-adopt");
    const AdoptEnvironment environment(dir.path(""), dir.path(""), dir.path("state"));
    const std::string registry = dir.path("mcpd.toml");
    // Large files, so that each run spends a while between reading the registry and writing it.
    const std::string padding(6 << 20, 'x');
    for (const char* name : {"one.json", "two.json"})
        put_file(dir.path(name), R"({"mcpServers": {"shared": {"command": "s"}, ")" +
                                     std::string(name, 3) +
                                     R"(": {"command": "own"}}, "history": ")" + padding + "\"}");

    int go[2];
    REQUIRE(::pipe(go) == 0);
    std::vector<pid_t> children;
    for (const char* name : {"one.json", "two.json"}) {
        const pid_t pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            ::close(go[1]);
            char byte;
            (void)::read(go[0], &byte, 1);  // both start together
            std::ostringstream out, err;
            ::_exit(mcpctl::run({"--socket", dir.path("nobody.sock"), "adopt", dir.path(name),
                                 "--registry", registry},
                                out, err));
        }
        children.push_back(pid);
    }
    ::close(go[0]);
    ::close(go[1]);  // EOF releases both
    for (const pid_t pid : children) {
        int status = 0;
        REQUIRE(::waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 0);
    }
    const std::string text = read_file(registry);
    const auto count = [&](const std::string& table) {
        std::size_t n = 0;
        for (std::size_t at = text.find(table); at != std::string::npos;
             at = text.find(table, at + 1))
            ++n;
        return n;
    };
    CHECK(count("[servers.shared]") == 1);
    CHECK(count("[servers.one]") == 1);
    CHECK(count("[servers.two]") == 1);
    CHECK(mcpd::config::load_registry(registry).registry.has_value());
}
