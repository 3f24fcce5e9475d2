// mcpctl import: converting agent MCP configurations into registry TOML, and --write.
#include <stdlib.h>
#include <toml++/toml.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "ctl/command.h"
#include "config/registry.h"
#include "ctl/import_mcp_json.h"
#include "ctl/known_servers.h"
#include "read_file.h"
#include "run_mcpctl.h"
#include "temp_dir.h"

using mcpctl::ImportResult;
using mcpctl::ImportShape;

namespace {

ImportResult convert(const std::string& text) {
    mcpd::Result<ImportResult> result = mcpctl::convert_mcp_json(text);
    REQUIRE(result.ok());
    return std::move(result).value();
}

// Parse TOML text with toml++; fails the test on a syntax error.
toml::table parse_toml(const std::string& text) {
    try {
        return toml::parse(text);
    } catch (const toml::parse_error& e) {
        FAIL("TOML does not parse: " << e.description() << "\n" << text);
    }
    return {};
}

std::vector<std::string> strings(toml::node_view<const toml::node> node) {
    std::vector<std::string> out;
    const toml::array* array = node.as_array();
    REQUIRE(array != nullptr);
    for (const auto& item : *array)
        out.push_back(item.value<std::string>().value_or("<not a string>"));
    return out;
}

void write_file(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
    REQUIRE(out.good());
}

}  // namespace

TEST_CASE("import converts the mcpServers shape into registry tables", "[ctl][import]") {
    const ImportResult result = convert(R"({"mcpServers": {
        "git": {"command": "uvx", "args": ["mcp-server-git", "--repository", "/srv/repo"],
                "env": {"LC_ALL": "C"}, "cwd": "/srv"},
        "plain": {"command": "mcpd-demo-server"}}})");
    CHECK(result.shape == ImportShape::mcp_servers);
    CHECK(result.skipped.empty());
    REQUIRE(result.servers.size() == 2);

    const std::string toml = mcpctl::render_toml(result, "/home/me/.claude.json");
    CHECK(toml ==
          "# Imported by mcpctl from /home/me/.claude.json\n"
          "[servers.git]\n"
          "command = \"uvx\"\n"
          "args = [\"mcp-server-git\", \"--repository\", \"/srv/repo\"]\n"
          "env = { LC_ALL = \"C\" }\n"
          "cwd = \"/srv\"\n"
          "lazy = true\n"
          "# mcp-server-git works on the agent's project (its roots or directory): one process\n"
          "# per project, so that no agent sees another project's files.\n"
          "sharing = \"project\"\n"
          "# it needs no more than its project and its package caches: boxed in them, the\n"
          "# home's secrets hidden (docs/SANDBOX.md); sandbox = \"none\" lifts the box\n"
          "sandbox = \"project\"\n"
          "\n"
          "# Imported by mcpctl from /home/me/.claude.json\n"
          "[servers.plain]\n"
          "command = \"mcpd-demo-server\"\n"
          "lazy = true\n");

    const std::string hint = mcpctl::connect_hint(result);
    const auto hint_json = nlohmann::json::parse(hint);
    CHECK(hint_json["mcpServers"]["git"]["command"] == "mcpctl");
    CHECK(hint_json["mcpServers"]["git"]["args"] == nlohmann::json({"connect", "git"}));
    CHECK(hint_json["mcpServers"]["plain"]["args"] == nlohmann::json({"connect", "plain"}));
}

TEST_CASE("import gives roots- and directory-scoped servers sharing = project", "[ctl][import]") {
    const ImportResult result = convert(R"({"mcpServers": {
        "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/w"]},
        "fs-pinned": {"command": "npx",
                      "args": ["-y", "@modelcontextprotocol/server-filesystem@2026.1.14", "/w"]},
        "git": {"command": "/usr/local/bin/mcp-server-git", "args": ["--repository", "/w"]},
        "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]},
        "lookalike": {"command": "npx", "args": ["-y", "@someone/server-filesystem-extra"]}}})");
    REQUIRE(result.servers.size() == 5);
    CHECK(mcpctl::project_scoped_package(result.servers[0]) ==
          "@modelcontextprotocol/server-filesystem");
    CHECK(mcpctl::project_scoped_package(result.servers[1]) ==
          "@modelcontextprotocol/server-filesystem");
    CHECK(mcpctl::project_scoped_package(result.servers[2]) == "mcp-server-git");
    CHECK(mcpctl::project_scoped_package(result.servers[3]).empty());
    CHECK(mcpctl::project_scoped_package(result.servers[4]).empty());
    const std::string toml = mcpctl::render_toml(result, "f.json");
    std::size_t project_tables = 0;
    for (std::size_t at = toml.find("\nsharing = \"project\"\n"); at != std::string::npos;
         at = toml.find("\nsharing = \"project\"\n", at + 1))
        ++project_tables;
    CHECK(project_tables == 3);
}

TEST_CASE("import boxes well-known servers in the sandbox that fits them, and no other",
          "[ctl][import][sandbox]") {
    const ImportResult result = convert(R"({"mcpServers": {
        "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/w"]},
        "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory@1.0"]},
        "time": {"command": "uvx", "args": ["mcp-server-time"]},
        "lookalike": {"command": "npx", "args": ["-y", "@someone/server-filesystem-extra"]},
        "github": {"command": "docker", "args": ["run", "-i", "ghcr.io/github/github-mcp-server"]}}})");
    REQUIRE(result.servers.size() == 5);
    const auto fit = [&](const std::string& name) {
        for (const auto& server : result.servers) {
            if (server.name == name) return mcpctl::sandbox_fit(server.command, server.args).preset;
        }
        FAIL("no server " << name);
        return std::string_view();
    };
    CHECK(fit("fs") == "project");
    CHECK(fit("memory") == "project");
    CHECK(fit("time") == "project");
    CHECK(fit("lookalike").empty());
    CHECK(fit("github").empty());
    const std::string toml = mcpctl::render_toml(result, "f.json");
    std::size_t boxed = 0;
    for (std::size_t at = toml.find("\nsandbox = \"project\"\n"); at != std::string::npos;
         at = toml.find("\nsandbox = \"project\"\n", at + 1))
        ++boxed;
    CHECK(boxed == 3);
    // What import writes is a registry mcpd loads.
    const mcpd::config::LoadResult loaded = mcpd::config::parse_registry(toml, "/tmp/r.toml");
    CHECK(loaded.errors.empty());
    REQUIRE(loaded.registry);
    CHECK(loaded.registry->find("memory")->sandbox.preset == "project");
    CHECK_FALSE(loaded.registry->find("github")->sandbox.any());
}

TEST_CASE("import accepts the VS Code servers and mcp.servers shapes", "[ctl][import]") {
    const ImportResult vscode = convert(R"({
        // VS Code allows comments in mcp.json
        "servers": {"fs": {"type": "stdio", "command": "npx", "args": ["-y", "server-fs"]}}})");
    CHECK(vscode.shape == ImportShape::vscode_servers);
    REQUIRE(vscode.servers.size() == 1);
    CHECK(vscode.servers[0].name == "fs");
    CHECK(vscode.servers[0].args == std::vector<std::string>{"-y", "server-fs"});
    const auto hint = nlohmann::json::parse(mcpctl::connect_hint(vscode));
    CHECK(hint["servers"]["fs"]["type"] == "stdio");
    CHECK(hint["servers"]["fs"]["args"] == nlohmann::json({"connect", "fs"}));

    const ImportResult settings =
        convert(R"({"editor.fontSize": 12, "mcp": {"servers": {"fs": {"command": "npx"}}}})");
    CHECK(settings.shape == ImportShape::vscode_settings);
    REQUIRE(settings.servers.size() == 1);
    CHECK(settings.servers[0].command == "npx");
    CHECK(nlohmann::json::parse(
              mcpctl::connect_hint(settings))["mcp"]["servers"]["fs"]["command"] == "mcpctl");
}

TEST_CASE("import escapes quotes, backslashes and control characters", "[ctl][import]") {
    CHECK(mcpctl::toml_string("a\"b") == "\"a\\\"b\"");
    CHECK(mcpctl::toml_string("C:\\dir") == "\"C:\\\\dir\"");
    CHECK(mcpctl::toml_string("one\ntwo\tx") == "\"one\\ntwo\\tx\"");
    CHECK(mcpctl::toml_string(std::string("\x01", 1)) == "\"\\u0001\"");
    CHECK(mcpctl::toml_key("PATH_2-x") == "PATH_2-x");
    CHECK(mcpctl::toml_key("a.b") == "\"a.b\"");
    CHECK(mcpctl::toml_key("with space") == "\"with space\"");

    const ImportResult result = convert(R"({"mcpServers": {"odd": {
        "command": "/opt/my \"tools\"/run",
        "args": ["say \"hi\"", "C:\\temp", "line1\nline2", "tab\there\u0001"],
        "env": {"A B": "1", "x.y": "q\"uote", "": "empty", "NORMAL": "C:\\x", "N": 5}}}})");
    REQUIRE(result.servers.size() == 1);
    const toml::table table = parse_toml(mcpctl::render_toml(result, "odd.json"));
    const auto server = table["servers"]["odd"];
    CHECK(server["command"].value<std::string>() == "/opt/my \"tools\"/run");
    CHECK(strings(server["args"]) ==
          std::vector<std::string>{"say \"hi\"", "C:\\temp", "line1\nline2", "tab\there\x01"});
    CHECK(server["env"]["A B"].value<std::string>() == "1");
    CHECK(server["env"]["x.y"].value<std::string>() == "q\"uote");
    CHECK(server["env"][""].value<std::string>() == "empty");
    CHECK(server["env"]["NORMAL"].value<std::string>() == "C:\\x");
    CHECK(server["env"]["N"].value<std::string>() == "5");
    CHECK(server["env"].as_table()->size() == 5);
}

TEST_CASE("import skips servers mcpd cannot run, with reasons", "[ctl][import]") {
    const ImportResult result = convert(R"({"mcpServers": {
        "remote": {"url": "https://example.com/mcp"},
        "sse": {"type": "sse", "command": "ignored"},
        "http": {"type": "http"},
        "streamable": {"type": "streamable-http", "url": "https://x"},
        "nocommand": {"args": ["x"]},
        "already": {"command": "mcpctl", "args": ["connect", "git"]},
        "already-path": {"command": "/usr/local/bin/mcpctl", "args": ["connect", "git"]},
        "kept": {"command": "mcpctl-helper", "args": ["connect"]}}})");
    REQUIRE(result.servers.size() == 1);
    CHECK(result.servers[0].name == "kept");

    std::map<std::string, std::string> reasons;
    for (const auto& skipped : result.skipped) reasons[skipped.name] = skipped.reason;
    CHECK(reasons.size() == 7);
    CHECK_THAT(reasons["remote"],
               Catch::Contains("remote") && Catch::Contains("https://example.com/mcp"));
    CHECK_THAT(reasons["sse"], Catch::Contains("remote") && Catch::Contains("sse"));
    CHECK_THAT(reasons["http"], Catch::Contains("remote"));
    CHECK_THAT(reasons["streamable"], Catch::Contains("remote"));
    CHECK(reasons["nocommand"] == "it has no command");
    CHECK(reasons["already"] == "it already runs 'mcpctl connect'");
    CHECK(reasons["already-path"] == "it already runs 'mcpctl connect'");
}

TEST_CASE("import sanitises server names and says so", "[ctl][import]") {
    CHECK(mcpctl::sanitize_server_name("my server/v2") == "my-server-v2");
    CHECK(mcpctl::sanitize_server_name("ok_name.v1-x") == "ok_name.v1-x");

    const ImportResult result = convert(R"({"mcpServers": {
        "my server": {"command": "a"}, "my/server": {"command": "b"}, "v1.2": {"command": "c"}}})");
    REQUIRE(result.servers.size() == 2);
    CHECK(result.servers[0].name == "my-server");
    CHECK(result.servers[0].original_name == "my server");
    CHECK(result.servers[1].name == "v1.2");
    REQUIRE(result.renamed.size() == 1);
    CHECK_THAT(result.renamed[0], Catch::Contains("'my server'") && Catch::Contains("'my-server'"));
    REQUIRE(result.skipped.size() == 1);  // "my/server" would collide with "my server"
    CHECK(result.skipped[0].name == "my/server");

    const std::string toml = mcpctl::render_toml(result, "x.json");
    CHECK_THAT(toml, Catch::Contains("[servers.my-server]\n") &&
                         Catch::Contains("[servers.\"v1.2\"]\n") &&
                         Catch::Contains("(there named 'my server')"));
    const toml::table table = parse_toml(toml);
    CHECK(table["servers"]["my-server"]["command"].value<std::string>() == "a");
    CHECK(table["servers"]["v1.2"]["command"].value<std::string>() == "c");
    CHECK(nlohmann::json::parse(mcpctl::connect_hint(result))["mcpServers"]["my server"]["args"] ==
          nlohmann::json({"connect", "my-server"}));
}

TEST_CASE("import refuses malformed JSON and files without servers", "[ctl][import]") {
    const mcpd::Result<ImportResult> bad_json = mcpctl::convert_mcp_json("{\"mcpServers\": {");
    REQUIRE_FALSE(bad_json.ok());
    CHECK_THAT(bad_json.error(), Catch::StartsWith("not valid JSON: "));
    const mcpd::Result<ImportResult> no_map = mcpctl::convert_mcp_json("{\"other\": 1}");
    REQUIRE_FALSE(no_map.ok());
    CHECK_THAT(no_map.error(), Catch::Contains("mcpServers"));
    CHECK_FALSE(mcpctl::convert_mcp_json("{\"mcpServers\": []}").ok());
}

TEST_CASE("registry_has_server finds bare and quoted tables only", "[ctl][import]") {
    const std::string text =
        "[servers.demo]\ncommand = \"x\"\n  [servers.\"v1.2\"]\n# [servers.gone]\n";
    CHECK(mcpctl::registry_has_server(text, "demo"));
    CHECK(mcpctl::registry_has_server(text, "v1.2"));
    CHECK_FALSE(mcpctl::registry_has_server(text, "dem"));
    CHECK_FALSE(mcpctl::registry_has_server(text, "gone"));
    CHECK_FALSE(mcpctl::registry_has_server(text, "command"));
}

TEST_CASE("mcpctl import prints TOML, reports skips and exits 1 for them", "[ctl][import]") {
    TempDir dir("mcpctl-import");
    write_file(
        dir.path("agent.json"),
        R"({"mcpServers": {"demo": {"command": "mcpd-demo-server"}, "web": {"url": "https://x"}}})");
    const Ran result = run({"import", dir.path("agent.json")});
    CHECK(result.exit_code == 1);
    CHECK_THAT(result.out,
               Catch::StartsWith("# Imported by mcpctl from " + dir.path("agent.json")) &&
                   Catch::Contains("[servers.demo]\ncommand = \"mcpd-demo-server\"\n"));
    CHECK_THAT(result.err, Catch::Contains("mcpctl: skipped web: it is a remote server") &&
                               Catch::Contains("\"connect\""));

    write_file(dir.path("clean.json"), R"({"mcpServers": {"demo": {"command": "x"}}})");
    CHECK(run({"import", dir.path("clean.json")}).exit_code == 0);

    const Ran json_run = run({"--json", "import", dir.path("agent.json")});
    CHECK(json_run.exit_code == 1);
    const auto report = nlohmann::json::parse(json_run.out);
    CHECK_THAT(report["toml"].get<std::string>(), Catch::Contains("[servers.demo]"));
    CHECK(report["skipped"].size() == 1);
    CHECK(report["skipped"][0]["name"] == "web");
    CHECK(report["written"].is_null());

    write_file(dir.path("bad.json"), "{\"mcpServers\": ");
    const Ran bad = run({"import", dir.path("bad.json")});
    CHECK(bad.exit_code == 1);
    CHECK_THAT(bad.err, Catch::StartsWith("mcpctl: " + dir.path("bad.json") + ": not valid JSON"));
    const Ran missing = run({"import", dir.path("missing.json")});
    CHECK(missing.exit_code == 1);
    CHECK_THAT(missing.err,
               Catch::StartsWith("mcpctl: " + dir.path("missing.json") + ": cannot be read"));
}

TEST_CASE("mcpctl import --write appends to the registry and refuses duplicates", "[ctl][import]") {
    TempDir dir("mcpctl-import");
    const std::string registry = dir.path("conf/mcpd/mcpd.toml");  // directories created
    const std::string socket = dir.path("nobody.sock");
    write_file(dir.path("a.json"),
               R"({"mcpServers": {"demo": {"command": "mcpd-demo-server", "args": ["x\"y"]}}})");
    write_file(dir.path("b.json"), R"({"servers": {"other": {"type": "stdio", "command": "o"}}})");

    const Ran first =
        run({"--socket", socket, "import", dir.path("a.json"), "--write", "--registry", registry});
    CHECK(first.exit_code == 0);
    CHECK_THAT(first.err, Catch::Contains("wrote 1 server to " + registry) &&
                              Catch::Contains("mcpd is not running"));
    const std::string after_first = read_file(registry);
    CHECK_THAT(after_first, Catch::Contains("[servers.demo]\ncommand = \"mcpd-demo-server\"\n"
                                            "args = [\"x\\\"y\"]\n"));

    const Ran second =
        run({"--socket", socket, "import", dir.path("b.json"), "--write", "--registry", registry});
    CHECK(second.exit_code == 0);
    const std::string after_second = read_file(registry);
    CHECK(after_second.starts_with(after_first));
    CHECK_THAT(after_second, Catch::Contains("[servers.other]\ncommand = \"o\"\n"));
    const toml::table table = parse_toml(after_second);
    CHECK(table["servers"]["demo"]["command"].value<std::string>() == "mcpd-demo-server");
    CHECK(table["servers"]["other"]["command"].value<std::string>() == "o");

    const Ran duplicate =
        run({"--socket", socket, "import", dir.path("a.json"), "--write", "--registry", registry});
    CHECK(duplicate.exit_code == 1);
    CHECK_THAT(duplicate.err, Catch::Contains("already has a server named demo"));
    CHECK(read_file(registry) == after_second);

    const Ran json_run = run({"--socket", socket, "--json", "import", dir.path("a.json"), "--write",
                              "--registry", dir.path("fresh.toml")});
    CHECK(json_run.exit_code == 0);
    const auto report = nlohmann::json::parse(json_run.out);
    CHECK(report["written"] == dir.path("fresh.toml"));
    CHECK_THAT(read_file(dir.path("fresh.toml")), Catch::Contains("[servers.demo]"));
}

TEST_CASE("mcpctl import --write keeps env values out of the registry and checks each table",
          "[ctl][import]") {
    TempDir dir("mcpctl-import");
    const std::string registry = dir.path("conf/mcpd.toml");
    const std::string socket = dir.path("nobody.sock");
    write_file(dir.path("a.json"),
               R"({"mcpServers": {"db": {"command": "d", "env": {"TOKEN": " spaced secret "}}}})");
    const Ran wrote =
        run({"--socket", socket, "import", dir.path("a.json"), "--write", "--registry", registry});
    REQUIRE(wrote.exit_code == 0);
    const std::string text = read_file(registry);
    CHECK(text.find("secret") == std::string::npos);
    CHECK(wrote.out.find("secret") == std::string::npos);
    CHECK(parse_toml(text)["servers"]["db"]["env_file"].value<std::string>() ==
          dir.path("conf/db.env"));
    CHECK(read_file(dir.path("conf/db.env")) == "TOKEN=\" spaced secret \"\n");
    CHECK((std::filesystem::status(registry).permissions() & std::filesystem::perms::all) ==
          (std::filesystem::perms::owner_read | std::filesystem::perms::owner_write));
    CHECK((std::filesystem::status(dir.path("conf/db.env")).permissions() &
           std::filesystem::perms::all) ==
          (std::filesystem::perms::owner_read | std::filesystem::perms::owner_write));

    // A table the registry would not load with (a cwd that is not there): nothing written.
    write_file(dir.path("b.json"),
               R"({"mcpServers": {"far": {"command": "f", "cwd": "/no/dir"}}})");
    const Ran refused =
        run({"--socket", socket, "import", dir.path("b.json"), "--write", "--registry", registry});
    CHECK(refused.exit_code == 1);
    CHECK_THAT(refused.err, Catch::Contains("far: the registry would not load with it") &&
                                Catch::Contains("nothing was written"));
    CHECK(read_file(registry) == text);
}
