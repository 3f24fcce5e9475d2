// The command table: name resolution and the help texts built from it.
#include <catch2/catch.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "ctl/command.h"

using mcpctl::Command;

namespace {

const Command kLog{.name = "log"};
const Command kLogs{.name = "logs"};
const Command kStart{.name = "start"};
const Command kStatus{.name = "status"};
const Command* const kTable[] = {&kLog, &kLogs, &kStart, &kStatus};

// The command a name resolves to in kTable, null when none; `error` gets the failure.
const Command* resolve(std::string_view name, std::string& error) {
    const mcpd::Result<const Command*> found = mcpctl::resolve_command(kTable, name);
    if (found) return found.value();
    error = found.error();
    return nullptr;
}

// The same in the real table.
const Command* find(std::string_view name, std::string& error) {
    const mcpd::Result<const Command*> found = mcpctl::find_command(name);
    if (found) return found.value();
    error = found.error();
    return nullptr;
}

}  // namespace

TEST_CASE("an exact name wins over a longer command it is a prefix of", "[ctl][command]") {
    std::string error;
    CHECK(resolve("log", error) == &kLog);
    CHECK(resolve("logs", error) == &kLogs);
}

TEST_CASE("a unique prefix resolves to its command", "[ctl][command]") {
    std::string error;
    CHECK(resolve("star", error) == &kStart);
    CHECK(resolve("stat", error) == &kStatus);
}

TEST_CASE("an ambiguous prefix names every candidate", "[ctl][command]") {
    std::string error;
    CHECK(resolve("st", error) == nullptr);
    CHECK(error == "ambiguous command 'st', could be: start, status");
}

TEST_CASE("an unknown or empty name resolves to nothing", "[ctl][command]") {
    std::string error;
    CHECK(resolve("frobnicate", error) == nullptr);
    CHECK(error == "unknown command 'frobnicate'");
    CHECK(resolve("", error) == nullptr);
}

TEST_CASE("the real table holds every command, sorted", "[ctl][command]") {
    std::vector<std::string> names;
    for (const Command* command : mcpctl::all_commands()) {
        names.emplace_back(command->name);
        CHECK(command->exec != nullptr);
        CHECK(std::string(command->usage).starts_with(command->name));
    }
    CHECK(names == std::vector<std::string>{"adopt", "cache", "connect", "dial", "help", "http-token", "import", "logs",
                                            "metrics", "reload", "restart", "sessions", "shutdown",
                                            "start", "stats", "status", "stop", "top", "upgrade", "version",
                                            "warm"});

    std::string error;
    CHECK(find("rel", error)->name == "reload");
    CHECK(find("sh", error)->name == "shutdown");
    CHECK(find("re", error) == nullptr);
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
    const std::string help = mcpctl::command_help(*find("logs", error));
    CHECK(help.starts_with("usage: mcpctl logs [-f|--follow] [-n N|--lines N] NAME\n"));
    CHECK(help.find("-n, --lines N") != std::string::npos);
    CHECK(help.find("-f, --follow") != std::string::npos);
}
