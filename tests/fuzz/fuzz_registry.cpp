// Fuzz target: the registry loader (config/registry*, config/toml_reader, config/env_file).
//
// Any text, loaded as the registry file /nonexistent/mcpd-fuzz/mcpd.toml. Invariants: no
// crash and no exception; either a registry or errors, never both or neither; every error
// has a message and, when it is about this file, a position inside the text; loading the same
// text twice gives the same answer; an accepted registry holds only what the loader promises
// (valid unique names, a command, absolute paths, non-negative durations).
//
// Texts that mention device or kernel file systems are skipped: an env_file of /dev/zero
// would read forever, which says nothing about the parser.
#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "config/registry.h"
#include "fuzz_input.h"

namespace {

using namespace mcpd::config;

constexpr const char* kPath = "/nonexistent/mcpd-fuzz/mcpd.toml";

bool valid_name(std::string_view name) {
    if (name.empty()) return false;
    for (const char c : name) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
        if (!ok) return false;
    }
    return true;
}

// Lines in the text, and the length of the longest, for bounds on error positions.
void measure(std::string_view text, int& lines, std::size_t& longest) {
    lines = 1;
    longest = 0;
    std::size_t current = 0;
    for (const char c : text) {
        if (c == '\n') {
            ++lines;
            current = 0;
        } else {
            longest = std::max(longest, ++current);
        }
    }
}

void check_errors(const LoadResult& result, std::string_view text) {
    int lines = 0;
    std::size_t longest = 0;
    measure(text, lines, longest);
    for (const ConfigError& error : result.errors) {
        FUZZ_CHECK(!error.message.empty(), "an error without a message");
        FUZZ_CHECK(!error.to_string().empty(), "an error that prints as nothing");
        FUZZ_CHECK(error.line >= 0 && error.column >= 0,
                   "a negative error position: " + error.to_string());
        if (error.file != kPath) continue;  // an env_file's own line numbers
        FUZZ_CHECK(error.line <= lines, "an error past the last line: " + error.to_string());
        // toml++ puts an error at the end of the file one column past the last newline.
        FUZZ_CHECK(static_cast<std::size_t>(error.column) <= longest + 2,
                   "an error past the end of its line: " + error.to_string());
    }
}

void check_registry(const Registry& registry) {
    FUZZ_CHECK(registry.path == kPath, "the registry forgot its path");
    FUZZ_CHECK(registry.daemon.max_message_bytes >= 1024, "max_message_bytes below its minimum");
    std::set<std::string> names;
    for (const ServerConfig& server : registry.servers) {
        FUZZ_CHECK(valid_name(server.name), "a server with an invalid name: " + server.name);
        FUZZ_CHECK(names.insert(server.name).second, "two servers named " + server.name);
        FUZZ_CHECK(registry.find(server.name) == &server, "find() does not return the server");
        FUZZ_CHECK(!server.command.empty(), "server " + server.name + " has no command");
        FUZZ_CHECK(server.env_file.empty() || server.env_file.front() == '/',
                   "a relative env_file");
        FUZZ_CHECK(server.cwd.empty() || server.cwd.front() == '/', "a relative cwd");
        for (const auto duration :
             {server.idle_timeout, server.restart_delay, server.restart_delay_max,
              server.stable_after, server.start_limit.interval, server.start_timeout,
              server.stop_grace, server.stop_timeout, server.request_timeout,
              server.health_interval}) {
            FUZZ_CHECK(duration.count() >= 0, "a negative duration in server " + server.name);
        }
        FUZZ_CHECK(to_string(server.restart) != "?" && to_string(server.sharing) != "?" &&
                       to_string(server.era) != "?",
                   "an enum value without a name");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    for (const std::string_view special : {"dev/", "proc/", "sys/"}) {
        if (text.find(special) != std::string_view::npos) return 0;
    }
    const LoadResult result = parse_registry(text, kPath);
    FUZZ_CHECK(result.registry.has_value() != !result.errors.empty(),
               "a load gave both a registry and errors, or neither");
    check_errors(result, text);
    if (result.registry) check_registry(*result.registry);

    const LoadResult again = parse_registry(text, kPath);
    FUZZ_CHECK(again.errors.size() == result.errors.size() &&
                   again.registry.has_value() == result.registry.has_value(),
               "loading the same text twice gave different answers");
    for (std::size_t i = 0; i < again.errors.size(); ++i) {
        FUZZ_CHECK(again.errors[i].to_string() == result.errors[i].to_string(),
                   "loading the same text twice gave different errors");
    }
    if (result.registry) {
        FUZZ_CHECK(again.registry->servers == result.registry->servers &&
                       again.registry->daemon == result.registry->daemon,
                   "loading the same text twice gave different registries");
    }
    return 0;
}
