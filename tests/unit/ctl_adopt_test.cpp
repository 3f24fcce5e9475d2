// mcpctl adopt: the agents' files, the rewrite of one file, and the command end to end on
// copies of real-shaped agent files (tests/fixtures/adopt) with HOME in a temp directory.
#include <stdlib.h>
#include <sys/stat.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "adopt_environment.h"
#include "config/registry.h"
#include "ctl/adopt.h"
#include "ctl/adopt_backup.h"
#include "ctl/command.h"
#include "ctl/jsonc_edit.h"
#include "jsonc_parse.h"
#include "read_file.h"
#include "run_mcpctl.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kFixtures = fs::path(__FILE__).parent_path().parent_path() / "fixtures" / "adopt";

std::string fixture(const std::string& relative) {
    return read_file(kFixtures / relative);
}

mcpctl::AdoptPlan plan(const std::string& text, const std::string& group = {}) {
    mcpd::Result<mcpctl::AdoptPlan> result =
        mcpctl::plan_adopt(text, {.group = group, .adopted_before = {}});
    REQUIRE(result.ok());
    return std::move(result).value();
}

// The document without the entries at `entries` (JSON pointers): what adopt must not touch.
json without(json doc, const std::vector<std::string>& entries) {
    for (const std::string& pointer : entries) {
        const json::json_pointer entry(pointer);
        REQUIRE(doc.contains(entry));
        doc[entry.parent_pointer()].erase(entry.back());
    }
    return doc;
}

// Whether `entry` runs `mcpctl connect NAME` with nothing of its old command, env or cwd.
void check_connects(const json& entry, const std::string& name) {
    CHECK(entry["command"] == "mcpctl");
    CHECK(entry["args"] == json({"connect", name}));
    CHECK_FALSE(entry.contains("env"));
    CHECK_FALSE(entry.contains("cwd"));
}

// Every fixture file, relative to the fixture directory.
const std::vector<std::string> kFiles = {
    "home/.claude.json",          "home/.config/Claude/claude_desktop_config.json",
    "home/.cursor/mcp.json",      "home/.config/Code/User/mcp.json",
    "home/.gemini/settings.json", "project/.mcp.json",
    "project/.cursor/mcp.json",   "project/.vscode/mcp.json",
};

// Every file under `root` by its relative path, with its bytes.
std::map<std::string, std::string> snapshot(const fs::path& root) {
    std::map<std::string, std::string> files;
    for (const auto& entry : fs::recursive_directory_iterator(root))
        if (entry.is_regular_file())
            files[fs::relative(entry.path(), root).string()] = read_file(entry.path());
    return files;
}

}  // namespace

TEST_CASE("agent_files names each agent's user and project files", "[adopt]") {
    const auto files = [](std::string_view agent) {
        mcpd::Result<std::vector<std::string>> found = mcpctl::agent_files(agent, "/h", "/p");
        REQUIRE(found.ok());
        return found.value();
    };
    CHECK(files("claude-code") == std::vector<std::string>{"/h/.claude.json", "/p/.mcp.json"});
    CHECK(files("claude-desktop") ==
          std::vector<std::string>{"/h/.config/Claude/claude_desktop_config.json"});
    CHECK(files("cursor") ==
          std::vector<std::string>{"/h/.cursor/mcp.json", "/p/.cursor/mcp.json"});
    CHECK(files("vscode") ==
          std::vector<std::string>{"/h/.config/Code/User/mcp.json", "/p/.vscode/mcp.json"});
    CHECK(files("gemini") == std::vector<std::string>{"/h/.gemini/settings.json"});
    // Run in $HOME, the user's and the project's Cursor file are one.
    const auto same = mcpctl::agent_files("cursor", "/h/", "/h");
    REQUIRE(same.ok());
    CHECK(same.value() == std::vector<std::string>{"/h/.cursor/mcp.json"});

    const auto unknown = mcpctl::agent_files("emacs", "/h", "/p");
    REQUIRE_FALSE(unknown.ok());
    CHECK(unknown.error() ==
          "unknown agent 'emacs'; the known agents are claude-code, claude-desktop, cursor, "
          "vscode, gemini, codex, zed, opencode, windsurf, kiro, goose, continue, lmstudio (or "
          "give the path of a file)");
    CHECK(mcpctl::known_agents().size() == 13);
    CHECK(mcpctl::backup_path("/h/.claude.json") == "/h/.claude.json.mcpd-backup");
}

TEST_CASE("adopt rewrites Claude Code's user and project servers, nothing else", "[adopt]") {
    const std::string before = fixture("home/.claude.json");
    const mcpctl::AdoptPlan adopted = plan(before);
    CHECK(adopted.changed);
    CHECK(adopted.has_servers);
    std::vector<std::string> names;
    for (const auto& server : adopted.servers) names.push_back(server.name);
    CHECK(names == std::vector<std::string>{"memory", "git", "postgres"});
    REQUIRE(adopted.left.size() == 1);
    CHECK(adopted.left[0].where == "linear");
    CHECK(adopted.left[0].reason == "remote server (url https://mcp.linear.app/sse)");
    CHECK(adopted.rewritten[1] == "git (project /home/me/src/app): runs 'mcpctl connect git'");

    const json old_doc = parse(before);
    const json new_doc = parse(adopted.text);
    const std::vector<std::string> entries = {"/mcpServers/memory",
                                              "/projects/~1home~1me~1src~1app/mcpServers/git",
                                              "/projects/~1home~1me~1src~1app/mcpServers/postgres"};
    CHECK(without(new_doc, entries) == without(old_doc, entries));
    check_connects(new_doc["mcpServers"]["memory"], "memory");
    CHECK(new_doc["mcpServers"]["memory"]["type"] == "stdio");
    check_connects(new_doc["projects"]["/home/me/src/app"]["mcpServers"]["postgres"], "postgres");
    // The secrets are gone from the file (the registry holds them now) and the layout stays.
    CHECK(adopted.text.find("hunter2") == std::string::npos);
    CHECK(adopted.text.find("lin_api_secret_value") != std::string::npos);
    CHECK(adopted.text.starts_with(before.substr(0, before.find("\"mcpServers\""))));
    CHECK(adopted.text.find(
              "      \"command\": \"mcpctl\",\n      \"args\": [\"connect\", \"memory\"]\n"
              "    },") != std::string::npos);

    const mcpctl::AdoptPlan again = plan(adopted.text);
    CHECK_FALSE(again.changed);
    CHECK(again.text == adopted.text);
    CHECK(again.servers.empty());
    CHECK(again.connected.size() == 3);
}

TEST_CASE("adopt keeps VS Code's comments, inputs, types and remote entries", "[adopt]") {
    const std::string before = fixture("project/.vscode/mcp.json");
    const mcpctl::AdoptPlan adopted = plan(before);
    CHECK(adopted.changed);
    REQUIRE(adopted.servers.size() == 2);
    CHECK(adopted.servers[0].name == "playwright");
    CHECK(adopted.servers[1].name == "sqlite");
    REQUIRE(adopted.left.size() == 2);
    CHECK(adopted.left[0].where == "perplexity");  // ${input:...} only VS Code fills in
    CHECK(adopted.left[1].reason == "remote server (url https://api.githubcopilot.com/mcp/)");

    for (const char* kept : {"// Servers for this workspace", "/* Local tools */",
                             "\"args\": [\"connect\", \"playwright\"], // pinned by the lock file"})
        CHECK_THAT(adopted.text, Catch::Contains(kept));
    CHECK(adopted.text.find("ghp_other_secret") != std::string::npos);
    const json old_doc = parse(before);
    const json new_doc = parse(adopted.text);
    const std::vector<std::string> entries = {"/servers/playwright", "/servers/sqlite"};
    CHECK(without(new_doc, entries) == without(old_doc, entries));
    check_connects(new_doc["servers"]["playwright"], "playwright");
    CHECK(new_doc["servers"]["playwright"]["type"] == "stdio");
    CHECK(new_doc["servers"]["sqlite"]["type"] == "stdio");
    CHECK_FALSE(plan(adopted.text).changed);
}

TEST_CASE("adopt keeps Gemini's and Cursor's other keys and entry options", "[adopt]") {
    const mcpctl::AdoptPlan gemini = plan(fixture("home/.gemini/settings.json"));
    const json doc = parse(gemini.text);
    check_connects(doc["mcpServers"]["github"], "github");
    CHECK(doc["mcpServers"]["github"]["timeout"] == 30000);
    CHECK(doc["mcpServers"]["github"]["trust"] == false);
    check_connects(doc["mcpServers"]["everything"], "everything");
    CHECK(doc["mcpServers"]["deepwiki"] == json({{"httpUrl", "https://mcp.deepwiki.com/mcp"}}));
    CHECK(doc["checkpointing"]["enabled"] == true);
    REQUIRE(gemini.left.size() == 1);
    CHECK(gemini.left[0].reason == "remote server (url https://mcp.deepwiki.com/mcp)");

    // An entry on one line stays on one line.
    const mcpctl::AdoptPlan cursor = plan(fixture("home/.cursor/mcp.json"));
    CHECK_THAT(cursor.text,
               Catch::Contains(R"("time": { "command": "mcpctl", "args": ["connect", "time"] })"));
    CHECK(parse(cursor.text)["mcpServers"]["context7"]["url"] == "https://mcp.context7.com/mcp");
}

TEST_CASE("adopt adds args when the entry had none and renames as import does", "[adopt]") {
    const mcpctl::AdoptPlan adopted = plan(
        "{\n  \"mcpServers\": {\n    \"my tool\": {\n      \"command\": \"tool\",\n"
        "      \"cwd\": \"/srv\"\n    }\n  }\n}\n");
    CHECK(adopted.text ==
          "{\n  \"mcpServers\": {\n    \"my tool\": {\n      \"command\": \"mcpctl\",\n"
          "      \"args\": [\"connect\", \"my-tool\"]\n    }\n  }\n}\n");
    REQUIRE(adopted.notes.size() == 1);
    CHECK_THAT(adopted.notes[0], Catch::StartsWith("renamed 'my tool' to 'my-tool'"));
}

TEST_CASE("adopt leaves an entry whose name another definition took", "[adopt]") {
    const mcpctl::AdoptPlan adopted = plan(R"({"mcpServers": {"git": {"command": "a"}},
        "projects": {"/p": {"mcpServers": {"git": {"command": "b"}, "same": {"command": "c"}}},
                     "/q": {"mcpServers": {"same": {"command": "c"}}}}})");
    REQUIRE(adopted.servers.size() == 2);
    REQUIRE(adopted.left.size() == 1);
    CHECK(adopted.left[0].where == "git (project /p)");
    CHECK_THAT(adopted.left[0].reason, Catch::StartsWith("another entry named 'git'"));
    const json doc = parse(adopted.text);
    CHECK(doc["projects"]["/p"]["mcpServers"]["git"]["command"] == "b");
    check_connects(doc["projects"]["/q"]["mcpServers"]["same"], "same");

    mcpctl::ImportedServer other;
    other.name = "x";
    other.command = "other";
    const auto later = mcpctl::plan_adopt(R"({"mcpServers": {"x": {"command": "mine"}}})",
                                          {.group = "", .adopted_before = {other}});
    REQUIRE(later.ok());
    CHECK_FALSE(later.value().changed);
    CHECK(later.value().left.size() == 1);
}

TEST_CASE("adopt --group replaces the stdio entries with one entry", "[adopt]") {
    const std::string before = fixture("project/.vscode/mcp.json");
    const mcpctl::AdoptPlan grouped = plan(before, "dev");
    const json doc = parse(grouped.text);
    CHECK_FALSE(doc["servers"].contains("playwright"));
    CHECK_FALSE(doc["servers"].contains("sqlite"));
    check_connects(doc["servers"]["dev"], "dev");
    CHECK(doc["servers"]["dev"]["type"] == "stdio");
    CHECK(doc["servers"].contains("perplexity"));
    CHECK(doc["inputs"] == parse(before)["inputs"]);
    CHECK_THAT(grouped.text, Catch::Contains("    \"dev\": {\n      \"type\": \"stdio\",\n"
                                             "      \"command\": \"mcpctl\",\n"));
    const mcpctl::AdoptPlan again = plan(grouped.text, "dev");
    CHECK_FALSE(again.changed);

    // A server added later joins the existing group entry.
    std::string added = grouped.text;
    added.insert(added.find("\"perplexity\""), "\"new\": {\"command\": \"n\"},\n    ");
    const mcpctl::AdoptPlan joined = plan(added, "dev");
    CHECK_FALSE(parse(joined.text)["servers"].contains("new"));
    CHECK(parse(joined.text)["servers"]["dev"] == doc["servers"]["dev"]);

    const auto taken = mcpctl::plan_adopt(before, {.group = "github", .adopted_before = {}});
    REQUIRE_FALSE(taken.ok());
    CHECK_THAT(taken.error(), Catch::Contains("already has that name"));
    const auto bad = mcpctl::plan_adopt(before, {.group = "a b", .adopted_before = {}});
    REQUIRE_FALSE(bad.ok());
}

TEST_CASE("adopt names the line of a file that is not JSON", "[adopt]") {
    const auto broken = mcpctl::plan_adopt("{\n  \"mcpServers\": {\n    \"a\": }\n}", {});
    REQUIRE_FALSE(broken.ok());
    CHECK_THAT(broken.error(), Catch::StartsWith("not valid JSON: ") && Catch::Contains("line 3"));
    const mcpctl::AdoptPlan none = plan(R"({"theme": "dark"})");
    CHECK_FALSE(none.has_servers);
    CHECK_FALSE(none.changed);
}

TEST_CASE("group tables are written and read back", "[adopt]") {
    const std::vector<std::string> servers = {"git", "my tool"};
    const std::string table = mcpctl::render_group_toml("dev", servers);
    const auto read = mcpctl::registry_group_servers(table, "dev");
    REQUIRE(read.ok());
    REQUIRE(read.value().has_value());
    CHECK(*read.value() == servers);
    const auto missing = mcpctl::registry_group_servers(table, "other");
    REQUIRE(missing.ok());
    CHECK_FALSE(missing.value().has_value());
    CHECK_FALSE(mcpctl::registry_group_servers("[groups.dev\n", "dev").ok());

    mcpctl::ImportResult result;
    result.servers.push_back({.name = "s",
                              .original_name = "s",
                              .command = "c",
                              .args = {},
                              .env = {{"KEY", "secret"}},
                              .cwd = {}});
    CHECK(mcpctl::without_env_values(result).servers[0].env[0].second == "(hidden)");
}

TEST_CASE("mcpctl adopt rewrites every agent's files, twice the same, and undoes", "[adopt]") {
    TempDir dir("mcpctl-adopt");
    const fs::path root = dir.path("t");
    fs::copy(kFixtures, root, fs::copy_options::recursive);
    ::chmod((root / "home/.claude.json").c_str(), 0640);
    const std::string registry = dir.path("conf/mcpd.toml");
    const std::string socket = dir.path("nobody.sock");
    const AdoptEnvironment environment((root / "home").string(), (root / "project").string(),
                                       dir.path("state"));
    const auto original = snapshot(root);

    const Ran dry = run({"--socket", socket, "adopt", "--dry-run", "--registry", registry});
    CHECK(dry.exit_code == 0);
    CHECK(snapshot(root) == original);
    CHECK_FALSE(fs::exists(registry));
    CHECK_THAT(dry.out,
               Catch::Contains("would add to " + registry) &&
                   Catch::Contains("env_file = \"" + dir.path("conf/postgres.env") + "\"") &&
                   Catch::Contains("dry run: nothing was written"));
    for (const char* secret : {"hunter2", "BSA-secret-key", "ghp_", "lin_api", "ctx7-secret"}) {
        CHECK(dry.out.find(secret) == std::string::npos);
        CHECK(dry.err.find(secret) == std::string::npos);
    }

    const Ran first = run({"--socket", socket, "adopt", "--registry", registry});
    CHECK(first.exit_code == 0);
    CHECK_THAT(first.err, Catch::Contains("added 12 servers to " + registry) &&
                              Catch::Contains("mcpd is not running"));
    CHECK_THAT(first.out, Catch::Contains("left as it is: linear: remote server (url "
                                          "https://mcp.linear.app/sse)"));
    // A server the registry would not load with stays the agent's; so do unapproved ones.
    CHECK_THAT(first.out, Catch::Contains("left as it is: everything: the registry would not "
                                          "load with it: cwd \"/home/me/tools\""));
    CHECK_THAT(first.out, Catch::Contains("left as it is: pending: Claude Code has not approved"));
    CHECK_THAT(first.out, Catch::Contains("left as it is: declined: Claude Code has it disabled"));
    const toml::table table = toml::parse(read_file(registry));
    CHECK(table["servers"]["postgres"]["env_file"].value<std::string>() ==
          dir.path("conf/postgres.env"));
    CHECK_FALSE(table["servers"].as_table()->contains("everything"));
    CHECK_FALSE(table["servers"].as_table()->contains("pending"));
    CHECK(table["servers"]["puppeteer"]["command"].value<std::string>() == "npx");
    CHECK(table["servers"]["sequential-thinking"]["command"].value<std::string>() == "npx");
    const mcpd::config::LoadResult loaded = mcpd::config::load_registry(registry);
    REQUIRE(loaded.registry);
    CHECK(loaded.registry->find("postgres")->env_file_vars.at("PGPASSWORD") == "hunter2-secret");

    const auto adopted = snapshot(root);
    for (const std::string& file : kFiles) {
        INFO(file);
        CHECK(adopted.at(file + ".mcpd-backup") == original.at(file));
        CHECK_NOTHROW(parse(adopted.at(file)));
    }
    CHECK((fs::status(root / "home/.claude.json").permissions() & fs::perms::all) ==
          (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read));

    const std::string registry_after = read_file(registry);
    const Ran second = run({"--socket", socket, "adopt", "--registry", registry});
    CHECK(second.exit_code == 0);
    CHECK_THAT(second.out, Catch::EndsWith("nothing to change\n"));
    CHECK(snapshot(root) == adopted);
    CHECK(read_file(registry) == registry_after);

    const Ran undo = run({"--socket", socket, "adopt", "--undo", "--registry", registry});
    CHECK(undo.exit_code == 0);
    CHECK_THAT(undo.out, Catch::Contains("restored " + (root / "home/.claude.json").string()) &&
                             Catch::Contains("the registry " + registry + " still has memory"));
    CHECK(snapshot(root) == original);
    CHECK(read_file(registry) == registry_after);
    CHECK(fs::is_empty(dir.path("state/mcpd/adopt")));
}

TEST_CASE("mcpctl adopt keeps the first backup and takes FILE arguments", "[adopt]") {
    TempDir dir("mcpctl-adopt");
    const std::string file = dir.path("mcp.json");
    const std::string registry = dir.path("mcpd.toml");
    const std::string socket = dir.path("nobody.sock");
    const AdoptEnvironment environment(dir.path(""), dir.path(""), dir.path("state"));
    const std::string original = R"({"mcpServers": {"a": {"command": "x"}}})";
    { std::ofstream(file, std::ios::binary) << original; }
    REQUIRE(run({"--socket", socket, "adopt", file, "--registry", registry}).exit_code == 0);

    std::string text = read_file(file);
    text.insert(text.find("\"a\""), "\"b\": {\"command\": \"y\"}, ");
    { std::ofstream(file, std::ios::binary) << text; }
    const Ran more = run({"--socket", socket, "--json", "adopt", file, "--registry", registry});
    CHECK(more.exit_code == 0);
    const json report = json::parse(more.out);
    CHECK(report["files"][0]["added"] == json({"b"}));
    CHECK(read_file(file + ".mcpd-backup") == original);
    CHECK(toml::parse(read_file(registry))["servers"]["b"]["command"].value<std::string>() == "y");

    // The group: one entry, a [groups] table, once.
    const std::string grouped = dir.path("grouped.json");
    {
        std::ofstream(grouped, std::ios::binary)
            << R"({"mcpServers": {"a": {"command": "x"}, "c": {"command": "z"}}})";
    }
    REQUIRE(run({"--socket", socket, "adopt", grouped, "--group", "dev", "--registry", registry})
                .exit_code == 0);
    CHECK(parse(read_file(grouped))["mcpServers"] ==
          json::parse(R"({"dev": {"command": "mcpctl", "args": ["connect", "dev"]}})"));
    const std::string registry_text = read_file(registry);
    const auto group = mcpctl::registry_group_servers(registry_text, "dev");
    REQUIRE(group.ok());
    REQUIRE(group.value().has_value());
    CHECK(*group.value() == std::vector<std::string>{"a", "c"});
    CHECK(toml::parse(registry_text)["servers"]["c"]["command"].value<std::string>() == "z");
}

TEST_CASE("mcpctl adopt explains what it cannot do", "[adopt]") {
    TempDir dir("mcpctl-adopt");
    const std::string socket = dir.path("nobody.sock");
    const std::string registry = dir.path("mcpd.toml");
    const std::string home = dir.path("home");
    fs::create_directory(home);
    const AdoptEnvironment environment(home, home, dir.path("state"));

    const Ran unknown = run({"--socket", socket, "adopt", "emacs", "--registry", registry});
    CHECK(unknown.exit_code == 1);
    CHECK_THAT(unknown.err, Catch::Contains("unknown agent 'emacs'; the known agents are "
                                            "claude-code, claude-desktop"));
    const Ran missing =
        run({"--socket", socket, "adopt", dir.path("none.json"), "--registry", registry});
    CHECK(missing.exit_code == 1);
    CHECK_THAT(missing.err, Catch::Contains(dir.path("none.json") + ": no such file"));

    const Ran absent = run({"--socket", socket, "adopt", "gemini", "--registry", registry});
    CHECK(absent.exit_code == 1);
    CHECK_THAT(absent.err,
               Catch::Contains("gemini: no " + home + "/.gemini/settings.json, skipped"));

    { std::ofstream(dir.path("bad.json")) << "{\n  \"mcpServers\": {\n    \"a\": \n}\n"; }
    const Ran bad =
        run({"--socket", socket, "adopt", dir.path("bad.json"), "--registry", registry});
    CHECK(bad.exit_code == 1);
    CHECK_THAT(bad.err, Catch::Contains(dir.path("bad.json") + ": not valid JSON") &&
                            Catch::Contains("line 4"));
    CHECK_FALSE(fs::exists(registry));

    const Ran no_backup = run({"--socket", socket, "adopt", "--undo", dir.path("bad.json")});
    CHECK(no_backup.exit_code == 1);
    CHECK_THAT(no_backup.err, Catch::Contains("no " + dir.path("bad.json") + ".mcpd-backup"));
}

TEST_CASE("mcpctl adopt boxes a well-known server in its sandbox, with the comment, and no other",
          "[adopt][sandbox]") {
    TempDir dir("mcpctl-adopt");
    const std::string file = dir.path("mcp.json");
    const std::string registry = dir.path("mcpd.toml");
    const AdoptEnvironment environment(dir.path(""), dir.path(""), dir.path("state"));
    { std::ofstream(file, std::ios::binary) << R"({"mcpServers": {
        "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/w"]},
        "other": {"command": "some-server"}}})"; }
    REQUIRE(run({"--socket", dir.path("nobody.sock"), "adopt", file, "--registry", registry})
                .exit_code == 0);
    const std::string text = read_file(registry);
    INFO(text);
    const toml::table tables = toml::parse(text);
    CHECK(tables["servers"]["fs"]["sandbox"].value<std::string>() == "project");
    CHECK_FALSE(tables["servers"]["other"]["sandbox"]);
    CHECK(text.find("# it needs no more than its project and its package caches") !=
          std::string::npos);
}
