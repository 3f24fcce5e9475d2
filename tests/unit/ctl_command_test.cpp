// The command table: name resolution and the help texts built from it.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "ctl/command.h"

using mcpctl::Command;

namespace {

const Command kLog{.name = "log"};
const Command kLogs{.name = "logs"};
const Command kStart{.name = "start"};
const Command kStatus{.name = "status"};
const Command* const kTable[] = {&kLog, &kLogs, &kStart, &kStatus};

}  // namespace

TEST_CASE("an exact name wins over a longer command it is a prefix of", "[ctl][command]") {
    std::string error;
    CHECK(mcpctl::resolve_command(kTable, "log", error) == &kLog);
    CHECK(mcpctl::resolve_command(kTable, "logs", error) == &kLogs);
}

TEST_CASE("a unique prefix resolves to its command", "[ctl][command]") {
    std::string error;
    CHECK(mcpctl::resolve_command(kTable, "star", error) == &kStart);
    CHECK(mcpctl::resolve_command(kTable, "stat", error) == &kStatus);
}

TEST_CASE("an ambiguous prefix names every candidate", "[ctl][command]") {
    std::string error;
    CHECK(mcpctl::resolve_command(kTable, "st", error) == nullptr);
    CHECK(error == "ambiguous command 'st', could be: start, status");
}

TEST_CASE("an unknown or empty name resolves to nothing", "[ctl][command]") {
    std::string error;
    CHECK(mcpctl::resolve_command(kTable, "frobnicate", error) == nullptr);
    CHECK(error == "unknown command 'frobnicate'");
    CHECK(mcpctl::resolve_command(kTable, "", error) == nullptr);
}

TEST_CASE("the real table holds every command, sorted", "[ctl][command]") {
    std::vector<std::string> names;
    for (const Command* command : mcpctl::all_commands()) {
        names.emplace_back(command->name);
        CHECK(command->exec != nullptr);
        CHECK(std::string(command->usage).starts_with(command->name));
    }
    CHECK(names == std::vector<std::string>{"connect", "dial", "help", "import", "logs", "reload",
                                            "restart", "sessions", "shutdown", "start",
                                            "status", "stop", "version"});

    std::string error;
    CHECK(mcpctl::find_command("rel", error)->name == "reload");
    CHECK(mcpctl::find_command("sh", error)->name == "shutdown");
    CHECK(mcpctl::find_command("re", error) == nullptr);
    CHECK(error == "ambiguous command 're', could be: reload, restart");
}

TEST_CASE("mcpctl --help lists every command and the exit codes", "[ctl][command]") {
    const std::string help = mcpctl::general_help();
    for (const Command* command : mcpctl::all_commands())
        CHECK(help.find("  " + std::string(command->name) + " ") != std::string::npos);
    CHECK(help.find("0  success") != std::string::npos);
    CHECK(help.find("2  usage error") != std::string::npos);
    CHECK(help.find("3  mcpd is not running") != std::string::npos);
}

TEST_CASE("a command's help shows its usage line and options", "[ctl][command]") {
    std::string error;
    const std::string help = mcpctl::command_help(*mcpctl::find_command("logs", error));
    CHECK(help.starts_with("usage: mcpctl logs [-f|--follow] [-n N|--lines N] NAME\n"));
    CHECK(help.find("-n, --lines N") != std::string::npos);
    CHECK(help.find("-f, --follow") != std::string::npos);
}
