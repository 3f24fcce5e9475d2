// mcpctl adopt for the agents whose files are not Claude's mcpServers JSON alone: Codex (TOML),
// Zed (context_servers), opencode (mcp), goose and Continue (YAML), and the mcpServers files of
// Windsurf, Kiro and LM Studio at their own paths. Each fixture (tests/fixtures/adopt_formats)
// is written as the agent's documentation shows it, with comments and other settings. Each
// test adopts, reads the rewritten file with Python's own parser (tomllib, yaml, json), checks
// what changed and what did not, and undoes, which must give back the original bytes.
#include <stdio.h>
#include <stdlib.h>
#include <toml++/toml.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "adopt_environment.h"
#include "config/registry.h"
#include "ctl/adopt.h"
#include "ctl/command.h"
#include "ctl/jsonc_edit.h"
#include "jsonc_parse.h"
#include "read_file.h"
#include "run_mcpctl.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kFormatFixtures =
    fs::path(__FILE__).parent_path().parent_path() / "fixtures" / "adopt_formats";

// The file read by Python: tomllib, yaml.safe_load or json (for "jsonc", after a scanner of its
// own drops comments and trailing commas), printed back as JSON.
json formats_python_parse(const fs::path& file, const std::string& kind) {
    const std::string script =
        "import sys, json\n"
        "kind, path = sys.argv[1], sys.argv[2]\n"
        "if kind == 'toml':\n"
        "    import tomllib\n"
        "    doc = tomllib.load(open(path, 'rb'))\n"
        "elif kind == 'yaml':\n"
        "    import yaml\n"
        "    doc = yaml.safe_load(open(path, encoding='utf-8'))\n"
        "else:\n"
        "    text = open(path, encoding='utf-8').read()\n"
        "    if kind == 'jsonc':\n"
        "        out, i, quoted = [], 0, False\n"
        "        while i < len(text):\n"
        "            c = text[i]\n"
        "            if quoted:\n"
        "                out.append(text[i:i + 2] if c == '\\\\' else c)\n"
        "                quoted = c != '\"'\n"
        "                i += 2 if c == '\\\\' else 1\n"
        "            elif text.startswith('//', i):\n"
        "                i = text.find('\\n', i) if '\\n' in text[i:] else len(text)\n"
        "            elif text.startswith('/*', i):\n"
        "                i = text.index('*/', i) + 2\n"
        "            else:\n"
        "                quoted = c == '\"'\n"
        "                out.append(c)\n"
        "                i += 1\n"
        "        import re\n"
        "        text = re.sub(r',(\\s*[}\\]])', r'\\1', ''.join(out))\n"
        "    doc = json.loads(text)\n"
        "print(json.dumps(doc, default=str))\n";
    const fs::path script_file = file.parent_path() / ".formats-parse.py";
    std::ofstream(script_file) << script;
    const std::string command =
        "python3 '" + script_file.string() + "' " + kind + " '" + file.string() + "'";
    std::string out;
    if (FILE* pipe = ::popen(command.c_str(), "r")) {
        char buffer[4096];
        std::size_t got = 0;
        while ((got = ::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, got);
        REQUIRE(::pclose(pipe) == 0);
    }
    fs::remove(script_file);
    INFO(command);
    REQUIRE_FALSE(out.empty());
    return json::parse(out);
}

// CODEX_HOME unset for a test, put back afterwards: the Codex file is then ~/.codex.
class FormatsNoCodexHome {
public:
    FormatsNoCodexHome() {
        if (const char* old = ::getenv("CODEX_HOME")) old_ = old;
        ::unsetenv("CODEX_HOME");
    }
    ~FormatsNoCodexHome() {
        if (old_) ::setenv("CODEX_HOME", old_->c_str(), 1);
    }
    FormatsNoCodexHome(const FormatsNoCodexHome&) = delete;
    FormatsNoCodexHome& operator=(const FormatsNoCodexHome&) = delete;

private:
    std::optional<std::string> old_;
};

// A copy of the fixtures with HOME and the current directory in it, and a registry to fill.
struct FormatsHome {
    TempDir dir{"mcpctl-adopt-formats"};
    fs::path root = fs::path(dir.path("t"));
    std::string registry = dir.path("conf/mcpd.toml");
    std::string socket = dir.path("nobody.sock");
    FormatsNoCodexHome no_codex_home;
    std::optional<AdoptEnvironment> environment;

    FormatsHome() {
        fs::copy(kFormatFixtures, root, fs::copy_options::recursive);
        environment.emplace((root / "home").string(), (root / "project").string(),
                            dir.path("state"));
    }
    fs::path home(const std::string& relative) const { return root / "home" / relative; }
    fs::path project(const std::string& relative) const { return root / "project" / relative; }

    Ran adopt(const std::string& agent, std::vector<std::string> more = {}) const {
        std::vector<std::string> args = {"--socket", socket,       "adopt",
                                         agent,      "--registry", registry};
        args.insert(args.end(), more.begin(), more.end());
        return run(args);
    }
    toml::table registry_table() const { return toml::parse(read_file(registry)); }
};

// What every adopt must do: no secret printed or in the registry, and --undo gives the files
// back byte for byte.
void formats_check_secrets(const FormatsHome& home, const Ran& ran,
                           const std::vector<std::string>& secrets) {
    for (const std::string& secret : secrets) {
        INFO(secret);
        CHECK(ran.out.find(secret) == std::string::npos);
        CHECK(ran.err.find(secret) == std::string::npos);
        CHECK(read_file(home.registry).find(secret) == std::string::npos);
    }
}

void formats_check_undo(const FormatsHome& home, const std::string& agent,
                        const std::map<fs::path, std::string>& originals) {
    const Ran undo = home.adopt(agent, {"--undo"});
    INFO(undo.out << undo.err);
    CHECK(undo.exit_code == 0);
    for (const auto& [path, bytes] : originals) {
        INFO(path);
        CHECK(read_file(path) == bytes);
        CHECK_FALSE(fs::exists(path.string() + ".mcpd-backup"));
    }
}

std::map<fs::path, std::string> formats_originals(const std::vector<fs::path>& files) {
    std::map<fs::path, std::string> originals;
    for (const fs::path& file : files) originals[file] = read_file(file);
    return originals;
}

json formats_connect(const std::string& name) {
    return json::array({"connect", name});
}

}  // namespace

TEST_CASE("agent_files knows the new agents' user and project files", "[adopt]") {
    const auto files = [](std::string_view agent, std::string_view codex_home = {}) {
        mcpd::Result<std::vector<std::string>> found =
            mcpctl::agent_files(agent, "/h", "/p", codex_home);
        REQUIRE(found.ok());
        return found.value();
    };
    using Files = std::vector<std::string>;
    CHECK(files("codex") == Files{"/h/.codex/config.toml", "/p/.codex/config.toml"});
    CHECK(files("codex", "/c") == Files{"/c/config.toml", "/p/.codex/config.toml"});
    CHECK(files("zed") == Files{"/h/.config/zed/settings.json", "/p/.zed/settings.json"});
    CHECK(files("opencode") ==
          Files{"/h/.config/opencode/opencode.json", "/p/opencode.json", "/p/opencode.jsonc"});
    CHECK(files("windsurf") == Files{"/h/.codeium/windsurf/mcp_config.json"});
    CHECK(files("kiro") == Files{"/h/.kiro/settings/mcp.json", "/p/.kiro/settings/mcp.json"});
    CHECK(files("goose") == Files{"/h/.config/goose/config.yaml"});
    CHECK(files("continue") == Files{"/h/.continue/config.yaml"});  // no /p/.continue here
    CHECK(files("lmstudio") == Files{"/h/.lmstudio/mcp.json"});
    CHECK(mcpctl::format_of("/h/.codex/config.toml") == mcpctl::AdoptFormat::toml);
    CHECK(mcpctl::format_of("/h/a.yml") == mcpctl::AdoptFormat::yaml);
    CHECK(mcpctl::format_of("/h/opencode.jsonc") == mcpctl::AdoptFormat::json);
}

TEST_CASE("adopt codex rewrites [mcp_servers] tables in place and undoes", "[adopt]") {
    const FormatsHome home;
    const fs::path file = home.home(".codex/config.toml");
    const auto originals = formats_originals({file});
    const json before = formats_python_parse(file, "toml");

    const Ran adopted = home.adopt("codex");
    INFO(adopted.out << adopted.err);
    REQUIRE(adopted.exit_code == 0);
    CHECK_THAT(adopted.out,
               Catch::Contains("left as it is: figma: remote server (url https://mcp.figma.com") &&
                   Catch::Contains(
                       "left as it is: paused: it is turned off in the file (enabled = false)") &&
                   Catch::Contains("left as it is: proxied: it passes variables from Codex's"));
    formats_check_secrets(home, adopted, {"ctx7-codex-secret"});
    const toml::table registry = home.registry_table();
    CHECK(registry["servers"]["context7"]["command"].value<std::string>() == "npx");
    CHECK(registry["servers"]["sqlite"]["args"][1].value<std::string>() == "--db-path");
    CHECK(registry["servers"]["time"]["command"].value<std::string>() == "mcp-server-time");
    CHECK_FALSE(registry["servers"].as_table()->contains("paused"));
    const mcpd::config::LoadResult loaded = mcpd::config::load_registry(home.registry);
    REQUIRE(loaded.registry);
    CHECK(loaded.registry->find("context7")->env_file_vars.at("CONTEXT7_API_KEY") ==
          "ctx7-codex-secret");

    const json after = formats_python_parse(file, "toml");
    json expected = before;
    for (const char* name : {"context7", "sqlite", "time"}) {
        json& entry = expected["mcp_servers"][name];
        entry["command"] = "mcpctl";
        entry["args"] = formats_connect(name);
        entry.erase("env");
    }
    CHECK(after == expected);
    // Only the adopted keys' bytes changed: the comment after startup_timeout_sec stays.
    CHECK_THAT(read_file(file), Catch::Contains("startup_timeout_sec = 20 # its first start"));

    const Ran again = home.adopt("codex");
    CHECK_THAT(again.out, Catch::Contains("nothing to change"));
    formats_check_undo(home, "codex", originals);
}

TEST_CASE("adopt zed rewrites context_servers in both forms and undoes", "[adopt]") {
    const FormatsHome home;
    const fs::path user = home.home(".config/zed/settings.json");
    const fs::path project = home.project(".zed/settings.json");
    const auto originals = formats_originals({user, project});
    const json before = formats_python_parse(user, "jsonc");
    CHECK(before == parse(read_file(user)));

    const Ran adopted = home.adopt("zed");
    INFO(adopted.out << adopted.err);
    REQUIRE(adopted.exit_code == 0);
    CHECK_THAT(adopted.out, Catch::Contains("left as it is: mcp-server-context7: a Zed extension"));
    formats_check_secrets(home, adopted, {"ghp-zed-secret"});
    const toml::table registry = home.registry_table();
    for (const char* name : {"github", "memory", "sequential-thinking"})
        CHECK(registry["servers"][name]["command"].value<std::string>() == "npx");

    json expected = before;
    expected["context_servers"]["github"]["command"] = "mcpctl";
    expected["context_servers"]["github"]["args"] = formats_connect("github");
    expected["context_servers"]["github"].erase("env");
    json& memory = expected["context_servers"]["memory"]["command"];
    memory["path"] = "mcpctl";
    memory["args"] = formats_connect("memory");
    memory.erase("env");
    CHECK(formats_python_parse(user, "jsonc") == expected);
    CHECK_THAT(read_file(user), Catch::StartsWith("// Zed settings\n"));
    CHECK(
        formats_python_parse(project, "jsonc")["context_servers"]["sequential-thinking"]["args"] ==
        formats_connect("sequential-thinking"));
    formats_check_undo(home, "zed", originals);
}

TEST_CASE("adopt opencode rewrites local mcp entries and undoes", "[adopt]") {
    const FormatsHome home;
    const fs::path file = home.home(".config/opencode/opencode.json");
    const auto originals = formats_originals({file});
    const json before = formats_python_parse(file, "json");

    const Ran adopted = home.adopt("opencode");
    INFO(adopted.out << adopted.err);
    REQUIRE(adopted.exit_code == 0);
    CHECK_THAT(
        adopted.out,
        Catch::Contains("left as it is: sentry: remote server (url https://mcp.sentry.dev/mcp)") &&
            Catch::Contains("left as it is: playwright: it is turned off in the file "
                            "(\"enabled\": false)"));
    formats_check_secrets(home, adopted, {"opencode-secret"});
    const toml::table registry = home.registry_table();
    CHECK(registry["servers"]["everything"]["args"][1].value<std::string>() ==
          "@modelcontextprotocol/server-everything");

    json expected = before;
    expected["mcp"]["everything"]["command"] = json::array({"mcpctl", "connect", "everything"});
    expected["mcp"]["everything"].erase("environment");
    CHECK(formats_python_parse(file, "json") == expected);
    formats_check_undo(home, "opencode", originals);
}

TEST_CASE("adopt windsurf, kiro and lmstudio rewrite mcpServers at their paths and undo",
          "[adopt]") {
    const FormatsHome home;
    struct Case {
        std::string agent;
        fs::path file;
        std::string adopted;
        std::string left;
    };
    const std::vector<Case> cases = {
        {"windsurf", home.home(".codeium/windsurf/mcp_config.json"), "github",
         "left as it is: figma: remote server (url https://mcp.figma.com/mcp)"},
        {"kiro", home.home(".kiro/settings/mcp.json"), "aws-docs",
         "left as it is: fetch: it is turned off"},
        {"lmstudio", home.home(".lmstudio/mcp.json"), "memory",
         "left as it is: hf-mcp-server: remote server (url https://huggingface.co/mcp)"},
    };
    for (const Case& c : cases) {
        INFO(c.agent);
        const auto originals = formats_originals({c.file});
        json expected = formats_python_parse(c.file, "json");
        const Ran adopted = home.adopt(c.agent);
        INFO(adopted.out << adopted.err);
        REQUIRE(adopted.exit_code == 0);
        CHECK_THAT(adopted.out, Catch::Contains(c.left));
        formats_check_secrets(home, adopted, {"ghp-windsurf-secret", "lmstudio-token"});
        CHECK(home.registry_table()["servers"][c.adopted]["command"].value<std::string>());
        json& entry = expected["mcpServers"][c.adopted];
        entry["command"] = "mcpctl";
        entry["args"] = formats_connect(c.adopted);
        entry.erase("env");
        CHECK(formats_python_parse(c.file, "json") == expected);
        formats_check_undo(home, c.agent, originals);
    }
}

TEST_CASE("adopt goose rewrites stdio extensions in place and undoes", "[adopt]") {
    const FormatsHome home;
    const fs::path file = home.home(".config/goose/config.yaml");
    const auto originals = formats_originals({file});
    const json before = formats_python_parse(file, "yaml");

    const Ran adopted = home.adopt("goose");
    INFO(adopted.out << adopted.err);
    REQUIRE(adopted.exit_code == 0);
    CHECK_THAT(adopted.out,
               Catch::Contains("left as it is: developer: goose's own extension (type builtin)") &&
                   Catch::Contains(
                       "left as it is: fetch: it is turned off in the file (enabled: false)") &&
                   Catch::Contains("left as it is: tavily: its env_keys are secrets"));
    formats_check_secrets(home, adopted, {"ghp-goose-secret"});
    const toml::table registry = home.registry_table();
    CHECK(registry["servers"]["github"]["args"][1].value<std::string>() ==
          "@modelcontextprotocol/server-github");
    CHECK(registry["servers"]["time"]["command"].value<std::string>() == "mcp-server-time");

    json expected = before;
    for (const char* name : {"github", "time"}) {
        json& entry = expected["extensions"][name];
        entry["cmd"] = "mcpctl";
        entry["args"] = formats_connect(name);
        entry["envs"] = json::object();
    }
    CHECK(formats_python_parse(file, "yaml") == expected);
    CHECK_THAT(read_file(file), Catch::Contains("description: GitHub repositories # added"));
    formats_check_undo(home, "goose", originals);
}

TEST_CASE("adopt continue rewrites the mcpServers list and block files and undoes", "[adopt]") {
    const FormatsHome home;
    const fs::path user = home.home(".continue/config.yaml");
    const fs::path block = home.project(".continue/mcpServers/playwright-mcp.yaml");
    const auto originals = formats_originals({user, block});
    const json before = formats_python_parse(user, "yaml");

    const Ran adopted = home.adopt("continue");
    INFO(adopted.out << adopted.err);
    REQUIRE(adopted.exit_code == 0);
    CHECK_THAT(adopted.out, Catch::Contains("left as it is: Templated: it uses ${...} variables") &&
                                Catch::Contains("left as it is: Remote: remote server (url "));
    formats_check_secrets(home, adopted, {"continue-brave-secret"});
    const toml::table registry = home.registry_table();
    CHECK(registry["servers"]["SQLite"]["args"][1].value<std::string>() == "mcp-sqlite");
    CHECK(registry["servers"]["Brave-Search"]["command"].value<std::string>() == "npx");
    CHECK(registry["servers"]["Browser-search"]["args"][0].value<std::string>() ==
          "@playwright/mcp@latest");

    json expected = before;
    expected["mcpServers"][0]["command"] = "mcpctl";
    expected["mcpServers"][0]["args"] = formats_connect("SQLite");
    expected["mcpServers"][1]["command"] = "mcpctl";
    expected["mcpServers"][1]["args"] = formats_connect("Brave-Search");
    expected["mcpServers"][1].erase("env");
    CHECK(formats_python_parse(user, "yaml") == expected);
    CHECK(formats_python_parse(block, "yaml")["mcpServers"][0]["args"] ==
          formats_connect("Browser-search"));
    formats_check_undo(home, "continue", originals);
}

TEST_CASE("adopt --list names the agents here and the servers each would move", "[adopt]") {
    const FormatsHome home;
    const auto originals = formats_originals({home.home(".codex/config.toml")});
    const Ran listed = run({"--socket", home.socket, "adopt", "--list"});
    INFO(listed.out << listed.err);
    REQUIRE(listed.exit_code == 0);
    CHECK_THAT(listed.out,
               Catch::Contains("codex:\n  " + home.home(".codex/config.toml").string() +
                               ": would move context7, sqlite, time\n") &&
                   Catch::Contains("goose:\n  " + home.home(".config/goose/config.yaml").string() +
                                   ": would move github, time\n") &&
                   Catch::Contains("claude-code: no configuration here\n"));
    const Ran as_json = run({"--socket", home.socket, "--json", "adopt", "--list"});
    const json report = json::parse(as_json.out);
    bool saw_zed = false;
    for (const json& agent : report["agents"]) {
        if (agent["agent"] != "zed") continue;
        saw_zed = true;
        CHECK(agent["present"] == true);
        CHECK(agent["files"][0]["servers"] == json::array({"github", "memory"}));
    }
    CHECK(saw_zed);
    CHECK(formats_originals({home.home(".codex/config.toml")}) == originals);
    CHECK_FALSE(fs::exists(home.registry));
}

TEST_CASE("a TOML or YAML file adopt cannot edit in place is left as it is, saying why",
          "[adopt]") {
    mcpctl::AdoptOptions toml_options;
    toml_options.format = mcpctl::AdoptFormat::toml;
    // A server written as dotted keys of [mcp_servers]: an added args line would land in the
    // wrong table, so the reread differs and the whole file stays as it is.
    const std::string dotted = "[mcp_servers]\na.command = \"x\"\n";
    mcpd::Result<mcpctl::AdoptPlan> refused = mcpctl::plan_adopt(dotted, toml_options);
    REQUIRE_FALSE(refused.ok());
    CHECK_THAT(refused.error(), Catch::Contains("cannot rewrite in place"));
    const std::string inline_env = "mcp_servers.a = { command = \"x\", env = { K = \"v\" } }\n";
    mcpd::Result<mcpctl::AdoptPlan> inlined = mcpctl::plan_adopt(inline_env, toml_options);
    REQUIRE(inlined.ok());
    CHECK_FALSE(inlined.value().changed);
    REQUIRE(inlined.value().left.size() == 1);
    CHECK_THAT(inlined.value().left[0].reason, Catch::Contains("written inline with env"));
    CHECK_FALSE(mcpctl::plan_adopt("[mcp_servers.a\n", toml_options).ok());

    mcpctl::AdoptOptions yaml_options;
    yaml_options.format = mcpctl::AdoptFormat::yaml;
    const std::string anchored = "base: &base {cmd: npx, type: stdio}\nextensions:\n  a: *base\n";
    mcpd::Result<mcpctl::AdoptPlan> aliased = mcpctl::plan_adopt(anchored, yaml_options);
    REQUIRE(aliased.ok());
    CHECK_FALSE(aliased.value().changed);
    const mcpd::Result<mcpctl::AdoptPlan> broken = mcpctl::plan_adopt("a: [\n", yaml_options);
    REQUIRE_FALSE(broken.ok());
    CHECK_THAT(broken.error(), Catch::StartsWith("not valid YAML: line"));
    yaml_options.group = "all";
    CHECK_FALSE(mcpctl::plan_adopt("extensions:\n  a: {cmd: x, type: stdio}\n", yaml_options).ok());
}

TEST_CASE("mcpctl import reads the TOML and YAML agents' files", "[adopt][import]") {
    const FormatsHome home;
    const Ran codex = run({"import", home.home(".codex/config.toml").string()});
    CHECK_THAT(codex.out, Catch::Contains("[servers.context7]") &&
                              Catch::Contains("[servers.sqlite]") &&
                              Catch::Contains("[servers.time]"));
    CHECK_THAT(codex.err, Catch::Contains("skipped figma: remote server") &&
                              Catch::Contains("[mcp_servers.context7]\ncommand = \"mcpctl\"\n"
                                              "args = [\"connect\", \"context7\"]"));
    const Ran goose = run({"import", home.home(".config/goose/config.yaml").string()});
    CHECK_THAT(goose.out, Catch::Contains("[servers.github]"));
    CHECK_THAT(goose.err, Catch::Contains("    cmd: mcpctl\n    args: [\"connect\", \"github\"]"));
    const Ran zed = run({"import", home.home(".config/zed/settings.json").string()});
    CHECK_THAT(zed.out, Catch::Contains("[servers.memory]"));
    CHECK_THAT(zed.err, Catch::Contains("\"context_servers\""));
    const Ran opencode = run({"import", home.home(".config/opencode/opencode.json").string()});
    CHECK_THAT(opencode.out, Catch::Contains("[servers.everything]"));
    CHECK_THAT(opencode.err, Catch::Contains("\"local\""));
}

TEST_CASE("adopt edits TOML and YAML with non-ASCII text at the right bytes", "[adopt]") {
    mcpctl::AdoptOptions options;
    options.format = mcpctl::AdoptFormat::toml;
    const std::string toml_text =
        "# Ünïcode\n[mcp_servers.\"café\"]\ncommand = \"naïve\" # é\nargs = [\"ü\"]\n"
        "env = { K = \"vé\" }\n";
    const mcpd::Result<mcpctl::AdoptPlan> toml_plan = mcpctl::plan_adopt(toml_text, options);
    REQUIRE(toml_plan.ok());
    CHECK(toml_plan.value().text ==
          "# Ünïcode\n[mcp_servers.\"café\"]\ncommand = \"mcpctl\" # é\n"
          "args = [\"connect\", \"caf--\"]\n");
    options.format = mcpctl::AdoptFormat::yaml;
    const std::string yaml_text =
        "# Ünïcode\nextensions:\n  é:\n    cmd: naïve # é\n    args:\n    - ü\n    type: stdio\n"
        "    envs:\n      K: vé\n";
    const mcpd::Result<mcpctl::AdoptPlan> yaml_plan = mcpctl::plan_adopt(yaml_text, options);
    REQUIRE(yaml_plan.ok());
    CHECK(yaml_plan.value().text ==
          "# Ünïcode\nextensions:\n  é:\n    cmd: mcpctl # é\n    args:\n    - connect\n"
          "    - \"--\"\n    type: stdio\n    envs: {}\n");
}
