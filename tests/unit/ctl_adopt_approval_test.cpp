// Which servers adopt and import take: only those the agent has turned on (Claude Code's
// approvals of a project's .mcp.json, its disabled project servers, Gemini's lists, and
// "disabled": true).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "adopt_environment.h"
#include "ctl/adopt.h"
#include "ctl/server_approval.h"
#include "read_file.h"
#include "run_mcpctl.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

void put_approval_file(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << text;
}

// The names `plan_adopt` takes from `text`, and the reasons of those it leaves.
std::vector<std::string> adopted_names(const std::string& text,
                                       const mcpctl::ServerApproval& approval = {}) {
    mcpd::Result<mcpctl::AdoptPlan> plan = mcpctl::plan_adopt(
        text, {.group = "", .adopted_before = {}, .approval = approval, .refused = {}});
    REQUIRE(plan.ok());
    std::vector<std::string> names;
    for (const auto& server : plan.value().servers) names.push_back(server.name);
    return names;
}

}  // namespace

TEST_CASE("Claude Code's approvals decide which .mcp.json servers are on", "[adopt]") {
    const std::vector<mcpctl::ApprovalSource> sources = {
        {"/h/.claude.json",
         R"({"projects": {"/p": {"enabledMcpjsonServers": ["a", "b"],
                                  "disabledMcpjsonServers": ["b"]},
                           "/other": {"enableAllProjectMcpServers": true}}})",
         true},
        {"/p/.claude/settings.local.json", R"({"enabledMcpjsonServers": ["c"]})", false},
    };
    const mcpctl::ServerApproval approval = mcpctl::claude_project_approval("/p", sources);
    CHECK(approval.refusal("a").empty());
    CHECK(approval.refusal("c").empty());
    CHECK_THAT(approval.refusal("b"),
               Catch::StartsWith("Claude Code has it disabled (disabledMcpjsonServers in "
                                 "/h/.claude.json)"));
    CHECK_THAT(approval.refusal("d"),
               Catch::StartsWith("Claude Code has not approved it for project /p"));
    // Another project's "approve all" is not this one's.
    const mcpctl::ServerApproval all = mcpctl::claude_project_approval("/other", sources);
    CHECK(all.refusal("d").empty());
    const mcpctl::ServerApproval settings_all = mcpctl::claude_project_approval(
        "/q", {{"/q/.claude/settings.json", R"({"enableAllProjectMcpServers": true,
                                                "disabledMcpjsonServers": ["x"]})",
                false}});
    CHECK(settings_all.refusal("d").empty());
    CHECK_FALSE(settings_all.refusal("x").empty());
    // Nothing said at all: nothing approved.
    CHECK_FALSE(mcpctl::claude_project_approval("/p", {}).refusal("a").empty());
}

TEST_CASE("adopt leaves servers turned off in the file itself", "[adopt]") {
    CHECK(adopted_names(R"({"mcpServers": {"on": {"command": "a"},
                                           "off": {"command": "b", "disabled": true}}})") ==
          std::vector<std::string>{"on"});
    CHECK(adopted_names(R"({"mcp": {"excluded": ["b"]},
                           "mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}}})") ==
          std::vector<std::string>{"a"});
    CHECK(adopted_names(R"({"mcp": {"allowed": ["b"]},
                           "mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}}})") ==
          std::vector<std::string>{"b"});
    CHECK(adopted_names(R"({"excludeMCPServers": ["a"],
                           "mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}}})") ==
          std::vector<std::string>{"b"});
    // A project's servers that Claude Code has disabled there.
    CHECK(adopted_names(R"({"projects": {"/p": {"disabledMcpServers": ["a"],
                           "mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}}}}})") ==
          std::vector<std::string>{"b"});
    mcpctl::ServerApproval approval;
    approval.allow_only({"b"}, "not approved");
    CHECK(adopted_names(R"({"mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}}})",
                        approval) == std::vector<std::string>{"b"});
}

TEST_CASE("mcpctl adopt and import take only the .mcp.json servers Claude Code approved",
          "[adopt]") {
    TempDir dir("mcpctl-adopt");
    const std::string home = dir.path("home");
    const std::string project = dir.path("project");
    const std::string canonical = fs::weakly_canonical(project).string();
    put_approval_file(fs::path(home) / ".claude.json",
                      json{{"projects",
                            {{canonical,
                              {{"enabledMcpjsonServers", {"approved"}},
                               {"disabledMcpjsonServers", {"declined"}}}}}}}
                          .dump());
    const std::string agent = R"({"mcpServers": {"approved": {"command": "a"},
                                                 "declined": {"command": "d"},
                                                 "pending": {"command": "p"}}})";
    put_approval_file(fs::path(project) / ".mcp.json", agent);
    const AdoptEnvironment environment(home, project, dir.path("state"));
    const std::string registry = dir.path("mcpd.toml");
    const std::string socket = dir.path("nobody.sock");

    const Ran imported = run({"import", ".mcp.json"});
    CHECK(imported.exit_code == 1);
    CHECK_THAT(imported.out, Catch::Contains("[servers.approved]"));
    CHECK(imported.out.find("[servers.declined]") == std::string::npos);
    CHECK(imported.out.find("[servers.pending]") == std::string::npos);
    CHECK_THAT(imported.err, Catch::Contains("skipped declined: Claude Code has it disabled") &&
                                 Catch::Contains("skipped pending: Claude Code has not approved"));

    const Ran adopted = run({"--socket", socket, "adopt", "claude-code", "--registry", registry});
    CHECK(adopted.exit_code == 0);
    const std::string text = read_file(registry);
    CHECK_THAT(text, Catch::Contains("[servers.approved]"));
    CHECK(text.find("[servers.declined]") == std::string::npos);
    CHECK(text.find("[servers.pending]") == std::string::npos);
    const json doc = json::parse(read_file(fs::path(project) / ".mcp.json"));
    CHECK(doc["mcpServers"]["approved"]["command"] == "mcpctl");
    CHECK(doc["mcpServers"]["declined"]["command"] == "d");
    CHECK(doc["mcpServers"]["pending"]["command"] == "p");
}
