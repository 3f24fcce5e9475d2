#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "config/env_file.h"
#include "config/registry.h"
#include "registry_parse.h"

using namespace mcpd::config;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

// A private directory under $TMPDIR, removed with everything in it at the end of the test.
class TempDir {
public:
    TempDir() {
        std::string pattern = (fs::temp_directory_path() / "mcpd-registry-test.XXXXXX").string();
        REQUIRE(::mkdtemp(pattern.data()) != nullptr);
        path_ = pattern;
    }
    ~TempDir() {
        std::error_code ignored;
        fs::permissions(path_, fs::perms::owner_all, ignored);
        fs::remove_all(path_, ignored);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const fs::path& path() const { return path_; }

    // Write `text` to `name` inside the directory; returns its full path.
    std::string write(const std::string& name, const std::string& text) const {
        const fs::path file = path_ / name;
        fs::create_directories(file.parent_path());
        std::ofstream out(file, std::ios::binary);
        out << text;
        REQUIRE(out.good());
        return file.string();
    }

private:
    fs::path path_;
};

// The one server of a registry that must have loaded cleanly (a copy, as above).
ServerConfig only_server(const LoadResult& result) {
    INFO(describe(result));
    REQUIRE(result.errors.empty());
    REQUIRE(result.registry.has_value());
    REQUIRE(result.registry->servers.size() == 1);
    return result.registry->servers.front();
}

}  // namespace

TEST_CASE("a registry with every key sets every field", "[registry]") {
    const std::string data_dir = fs::canonical(MCPD_TEST_DATA_DIR).string();
    const std::string path = data_dir + "/registry_full.toml";
    const LoadResult result = load_registry(path);
    INFO(describe(result));
    REQUIRE(result.errors.empty());
    REQUIRE(result.registry.has_value());
    const Registry& registry = *result.registry;

    CHECK(registry.path == path);
    CHECK(registry.daemon.socket == "/tmp/mcpd-test/mcpd.sock");
    CHECK(registry.daemon.log_level == mcpd::log::Level::debug);
    CHECK(registry.daemon.max_message_bytes == 65536);
    CHECK(registry.daemon.max_session_queue_bytes == 131072);

    REQUIRE(registry.servers.size() == 2);
    const ServerConfig& s = registry.servers[0];
    CHECK(s.name == "full");
    CHECK(s.command == "/usr/bin/env");
    CHECK(s.args == std::vector<std::string>{"--flag", "value with spaces", ""});
    CHECK(s.env == std::map<std::string, std::string>{{"LOG_LEVEL", "trace"}, {"_UNDER", "x"}});
    CHECK(s.env_file == data_dir + "/registry_full.env");
    CHECK(s.env_file_vars == std::map<std::string, std::string>{{"API_TOKEN", "not-a-real-token"},
                                                                {"REGION", "eu-west-1"},
                                                                {"QUOTED", "two words"},
                                                                {"SINGLE", "say \"hi\""},
                                                                {"EMPTY", ""}});
    CHECK(s.cwd == data_dir);
    CHECK(s.sharing == Sharing::exclusive);
    CHECK(s.era == Era::legacy);
    CHECK(s.autostart == false);
    CHECK(s.idle_timeout == 5min);
    CHECK(s.restart == RestartPolicy::always);
    CHECK(s.restart_delay == 500ms);
    CHECK(s.restart_delay_max == 90s);
    CHECK(s.stable_after == 45s);
    CHECK(s.start_limit.burst == 3);
    CHECK(s.start_limit.interval == 2min);
    CHECK(s.start_timeout == 10s);
    CHECK(s.stop_grace == 1s);
    CHECK(s.stop_timeout == 3s);
    CHECK(s.request_timeout == 1h);
    CHECK(s.health_interval == 0ms);
    CHECK(s.max_sessions == 4);
    CHECK(s.roots == std::vector<std::string>{"/home/me/project", "file:///srv/data"});
    CHECK(s.allow_users == std::vector<std::string>{"alice", "1001"});
    CHECK(s.allow_groups == std::vector<std::string>{"devs"});

    CHECK(registry.servers[1].name == "minimal");
    CHECK(registry.find("minimal") == &registry.servers[1]);
    CHECK(registry.find("full") == &registry.servers[0]);
    CHECK(registry.find("absent") == nullptr);
}

TEST_CASE("absent keys take their defaults", "[registry]") {
    const LoadResult result = parse("[servers.plain]\ncommand = \"srv\"\n");
    const ServerConfig s = only_server(result);
    CHECK(s.name == "plain");
    CHECK(s.command == "srv");
    CHECK(s.args.empty());
    CHECK(s.env.empty());
    CHECK(s.env_file.empty());
    CHECK(s.env_file_vars.empty());
    CHECK(s.cwd.empty());
    CHECK(s.sharing == Sharing::shared);
    CHECK(s.era == Era::auto_detect);
    CHECK(s.autostart == true);
    CHECK(s.idle_timeout == 0ms);
    CHECK(s.restart == RestartPolicy::on_failure);
    CHECK(s.restart_delay == 1s);
    CHECK(s.restart_delay_max == 60s);
    CHECK(s.stable_after == 30s);
    CHECK(s.start_limit.burst == 5);
    CHECK(s.start_limit.interval == 60s);
    CHECK(s.start_timeout == 30s);
    CHECK(s.stop_grace == 2s);
    CHECK(s.stop_timeout == 2s);
    CHECK(s.request_timeout == 0ms);
    CHECK(s.health_interval == 30s);
    CHECK(s.max_sessions == 0);
    CHECK(s.max_children == 16);
    CHECK(s.roots.empty());
    CHECK(s.allow_users.empty());
    CHECK(s.allow_groups.empty());

    const DaemonConfig& daemon = result.registry->daemon;
    CHECK(daemon.socket.empty());
    CHECK(daemon.log_level == mcpd::log::Level::info);
    CHECK(daemon.max_message_bytes == 16u * 1024 * 1024);
    CHECK(daemon.max_session_queue_bytes == 4u * 1024 * 1024);
    CHECK(result.registry->path == "/virtual/mcpd.toml");
}

TEST_CASE("start_limit keeps the default for a key it omits", "[registry]") {
    const ServerConfig s =
        only_server(parse("[servers.a]\ncommand = \"x\"\nstart_limit = { burst = 9 }\n"));
    CHECK(s.start_limit.burst == 9);
    CHECK(s.start_limit.interval == 60s);
}

TEST_CASE("an empty registry is valid", "[registry]") {
    for (const char* text : {"", "# nothing yet\n", "[daemon]\n", "[servers]\n"}) {
        INFO("text: " << text);
        const LoadResult result = parse(text);
        INFO(describe(result));
        CHECK(result.errors.empty());
        REQUIRE(result.registry.has_value());
        CHECK(result.registry->servers.empty());
    }
}

TEST_CASE("servers keep the order of the file", "[registry]") {
    const LoadResult result = parse(R"([servers.zeta]
command = "z"
[servers.alpha]
command = "a"
[servers.mid]
command = "m"
)");
    INFO(describe(result));
    REQUIRE(result.registry.has_value());
    const auto& servers = result.registry->servers;
    REQUIRE(servers.size() == 3);
    CHECK(servers[0].name == "zeta");
    CHECK(servers[1].name == "alpha");
    CHECK(servers[2].name == "mid");
}

TEST_CASE("a TOML syntax error gives the parser's position", "[registry]") {
    const ConfigError error =
        only_error(parse("[servers.a]\ncommand = \"x\"\nargs = [\"a\",, ]\n"));
    CHECK(error.file == "/virtual/mcpd.toml");
    CHECK(error.line == 3);
    CHECK(error.column == 13);
    CHECK(contains(error.message, "invalid TOML"));

    const ConfigError duplicate =
        only_error(parse("[servers.a]\ncommand = \"x\"\ncommand = \"y\"\n"));
    CHECK(duplicate.line == 3);
    CHECK(contains(duplicate.message, "command"));
}

TEST_CASE("unknown keys name the closest known key", "[registry]") {
    const LoadResult result = parse(R"([daemon]
sockett = "/x"
[servers.demo]
command = "x"
restart_dealy = "1s"
start_limit = { brust = 2 }
stop = "1s"
[deamon]
)");
    INFO(describe(result));
    REQUIRE(result.errors.size() == 5);
    CHECK(result.errors[0].line == 2);
    CHECK(result.errors[0].column == 1);
    CHECK(result.errors[0].message == "unknown key 'sockett' in [daemon]; did you mean 'socket'?");
    CHECK(result.errors[1].line == 5);
    CHECK(result.errors[1].column == 1);
    CHECK(result.errors[1].message ==
          "unknown key 'restart_dealy' in server 'demo'; did you mean 'restart_delay'?");
    CHECK(result.errors[2].line == 6);
    CHECK(result.errors[2].column == 17);
    CHECK(result.errors[2].message ==
          "unknown key 'brust' in 'start_limit' of server 'demo'; did you mean 'burst'?");
    CHECK(result.errors[3].line == 7);
    CHECK(result.errors[3].column == 1);
    CHECK(result.errors[3].message ==
          "unknown key 'stop' in server 'demo'; did you mean 'stop_grace'?");
    CHECK(result.errors[4].line == 8);
    CHECK(result.errors[4].column == 2);
    CHECK(result.errors[4].message == "unknown top-level table 'deamon'; did you mean 'daemon'?");
}

TEST_CASE("a misspelt command is reported along with the missing one", "[registry]") {
    const LoadResult result = parse("[servers.demo]\ncomand = \"x\"\n");
    INFO(describe(result));
    REQUIRE(result.errors.size() == 2);
    CHECK(result.errors[0].line == 1);
    CHECK(result.errors[0].column == 1);
    CHECK(contains(result.errors[0].message, "server 'demo' has no 'command'"));
    CHECK(result.errors[1].line == 2);
    CHECK(result.errors[1].column == 1);
    CHECK(result.errors[1].message ==
          "unknown key 'comand' in server 'demo'; did you mean 'command'?");
}

TEST_CASE("unknown keys with nothing close list what is expected", "[registry]") {
    const LoadResult result = parse(R"(color = "red"
[daemon]
pidfile = "/x"
[servers.demo]
command = "x"
zzz = 1
start_limit = { qq = 1 }
)");
    INFO(describe(result));
    REQUIRE(result.errors.size() == 4);
    CHECK(result.errors[0].line == 1);
    CHECK(result.errors[0].column == 1);
    CHECK(result.errors[0].message ==
          "unknown top-level key 'color'; expected [daemon], [servers.<name>] or [groups.<name>] "
          "tables");
    CHECK(result.errors[1].line == 3);
    CHECK(result.errors[1].message ==
          "unknown key 'pidfile' in [daemon]; expected 'socket', 'socket_group', "
          "'socket_mode', 'log_level', 'max_message_bytes', 'max_session_queue_bytes', "
          "'max_queued_output', 'metrics_listen', 'metrics_token_file', 'request_log', "
          "'lazy', 'control_idle_timeout', 'max_owner_connections', 'http_listen', "
          "'http_max_sessions_per_user', 'http_session_idle_timeout', "
          "'http_request_timeout', 'http_keepalive_interval', 'http_replay_bytes' or 'sandbox'");
    CHECK(result.errors[2].line == 6);
    CHECK(contains(result.errors[2].message,
                   "unknown key 'zzz' in server 'demo'; a server takes "
                   "command, args, env, env_file, cwd"));
    CHECK_FALSE(contains(result.errors[2].message, "did you mean"));
    CHECK(result.errors[3].line == 7);
    CHECK(result.errors[3].column == 17);
    CHECK(result.errors[3].message ==
          "unknown key 'qq' in 'start_limit' of server 'demo'; expected 'burst' or 'interval'");
}

TEST_CASE("values of the wrong type name the expected type", "[registry]") {
    const LoadResult result = parse(R"([servers.demo]
command = 42
stop_grace = 2
args = ["a", 1, "b", true]
env = { A = 1 }
autostart = "yes"
start_limit = "5/60s"
max_sessions = "4"
roots = "/x"
allow_groups = [1]
)");
    INFO(describe(result));
    REQUIRE(result.errors.size() == 10);
    const auto check = [&](std::size_t i, int line, int column, const std::string& message) {
        INFO("error " << i);
        CHECK(result.errors[i].line == line);
        CHECK(result.errors[i].column == column);
        CHECK(result.errors[i].message == message);
    };
    check(0, 2, 11, "expected a string for 'command', got integer");
    check(1, 3, 14,
          "expected a duration string like \"500ms\", \"2s\" or \"5m\" for 'stop_grace', got "
          "integer");
    check(2, 4, 14, "expected a string for each element of 'args', got integer");
    check(3, 4, 22, "expected a string for each element of 'args', got boolean");
    check(4, 5, 13, "expected a string for 'env.A', got integer");
    check(5, 6, 13, "expected true or false for 'autostart', got string");
    check(6, 7, 15,
          "expected a table like { burst = 5, interval = \"60s\" } for 'start_limit', got string");
    check(7, 8, 16, "expected an integer for 'max_sessions', got string");
    check(8, 9, 9, "expected an array of strings for 'roots', got string");
    check(9, 10, 17, "expected a string for each element of 'allow_groups', got integer");
}

TEST_CASE("every TOML type has a name in messages", "[registry]") {
    const std::pair<const char*, const char*> cases[] = {
        {"1.5", "float"},     {"1979-05-27", "date"},
        {"07:32:00", "time"}, {"[]", "array"},
        {"{}", "table"},      {"true", "boolean"},
        {"1", "integer"},     {"1979-05-27T07:32:00Z", "date-time"},
    };
    for (const auto& [value, type] : cases) {
        const ConfigError& error =
            only_error(parse(std::string("[servers.a]\ncommand = ") + value + "\n"));
        CHECK(error.message == std::string("expected a string for 'command', got ") + type);
    }
}

TEST_CASE("[daemon] values are checked", "[registry]") {
    const LoadResult result = parse(R"([daemon]
socket = 1
log_level = 3
max_message_bytes = "16M"
)");
    INFO(describe(result));
    REQUIRE(result.errors.size() == 3);
    CHECK(result.errors[0].line == 2);
    CHECK(result.errors[0].column == 10);
    CHECK(result.errors[0].message == "expected a string for 'socket', got integer");
    CHECK(result.errors[1].column == 13);
    CHECK(result.errors[1].message == "expected a string for 'log_level', got integer");
    CHECK(result.errors[2].column == 21);
    CHECK(result.errors[2].message == "expected an integer for 'max_message_bytes', got string");

    const LoadResult small = parse("[daemon]\nmax_message_bytes = 100\n");
    const ConfigError error = only_error(small);
    CHECK(error.line == 2);
    CHECK(error.column == 21);
    CHECK(error.message == "expected an integer of at least 1024 for 'max_message_bytes', got 100");

    const LoadResult smallest = parse("[daemon]\nmax_message_bytes = 1024\n");
    REQUIRE(smallest.registry.has_value());
    CHECK(smallest.registry->daemon.max_message_bytes == 1024);
}

TEST_CASE("a bad duration string says what a duration looks like", "[registry]") {
    const LoadResult result = parse(R"([servers.demo]
command = "x"
idle_timeout = "5 minutes"
restart_delay = "1.5s"
start_limit = { interval = "-1s" }
)");
    INFO(describe(result));
    REQUIRE(result.errors.size() == 3);
    CHECK(result.errors[0].line == 3);
    CHECK(result.errors[0].column == 16);
    CHECK(contains(result.errors[0].message,
                   "invalid duration \"5 minutes\" for 'idle_timeout': expected"));
    CHECK(contains(result.errors[0].message, "like \"500ms\", \"2s\", \"5m\""));
    CHECK(result.errors[1].line == 4);
    CHECK(result.errors[1].column == 17);
    CHECK(contains(result.errors[1].message, "invalid duration \"1.5s\" for 'restart_delay'"));
    CHECK(result.errors[2].line == 5);
    CHECK(result.errors[2].column == 28);
    CHECK(
        contains(result.errors[2].message, "invalid duration \"-1s\" for 'start_limit.interval'"));
}

TEST_CASE("durations and counts that must be positive refuse zero", "[registry]") {
    const LoadResult result = parse(R"([servers.demo]
command = "x"
restart_delay = "0s"
start_timeout = "0ms"
start_limit = { burst = 0, interval = "0s" }
stop_grace = "0s"
idle_timeout = "0s"
health_interval = "0s"
request_timeout = "0s"
stable_after = "0s"
stop_timeout = "0s"
)");
    INFO(describe(result));
    REQUIRE(result.errors.size() == 4);
    CHECK(result.errors[0].line == 3);
    CHECK(result.errors[0].column == 17);
    CHECK(result.errors[0].message ==
          "expected a duration greater than 0 for 'restart_delay', got \"0s\"");
    CHECK(result.errors[1].line == 4);
    CHECK(result.errors[1].message ==
          "expected a duration greater than 0 for 'start_timeout', got \"0ms\"");
    CHECK(result.errors[2].line == 5);
    CHECK(result.errors[2].column == 25);
    CHECK(result.errors[2].message ==
          "expected an integer of at least 1 for 'start_limit.burst', got 0");
    CHECK(result.errors[3].line == 5);
    CHECK(result.errors[3].column == 39);
    CHECK(result.errors[3].message ==
          "expected a duration greater than 0 for 'start_limit.interval', got \"0s\"");

    const ServerConfig zeros = only_server(parse(R"([servers.demo]
command = "x"
stop_grace = "0s"
stop_timeout = "0s"
stable_after = "0s"
health_interval = "0s"
idle_timeout = "0s"
request_timeout = "0s"
)"));
    CHECK(zeros.stop_grace == 0ms);
    CHECK(zeros.stop_timeout == 0ms);
    CHECK(zeros.stable_after == 0ms);
    CHECK(zeros.health_interval == 0ms);
    CHECK(zeros.idle_timeout == 0ms);
    CHECK(zeros.request_timeout == 0ms);
}

TEST_CASE("restart_delay_max may not be below restart_delay", "[registry]") {
    const ConfigError error = only_error(parse(R"([servers.demo]
command = "x"
restart_delay = "10s"
restart_delay_max = "5s"
)"));
    CHECK(error.line == 4);
    CHECK(error.column == 21);
    CHECK(error.message == "'restart_delay_max' (5s) must be at least 'restart_delay' (10s)");

    const ServerConfig equal = only_server(parse(
        "[servers.demo]\ncommand = \"x\"\nrestart_delay = \"5s\"\nrestart_delay_max = \"5s\"\n"));
    CHECK(equal.restart_delay_max == 5s);

    // Without an explicit cap, a long first delay raises the default cap instead of failing.
    const ServerConfig raised =
        only_server(parse("[servers.demo]\ncommand = \"x\"\nrestart_delay = \"2m\"\n"));
    CHECK(raised.restart_delay == 2min);
    CHECK(raised.restart_delay_max == 2min);
}

TEST_CASE("an enum value outside its set lists the allowed values", "[registry]") {
    const LoadResult result = parse(R"([daemon]
log_level = "verbose"
[servers.demo]
command = "x"
sharing = "private"
era = "new"
restart = "on_failure"
)");
    INFO(describe(result));
    REQUIRE(result.errors.size() == 4);
    CHECK(result.errors[0].line == 2);
    CHECK(result.errors[0].column == 13);
    CHECK(result.errors[0].message ==
          "invalid value \"verbose\" for 'log_level': expected one of "
          "\"debug\", \"info\", \"warning\", \"error\"");
    CHECK(result.errors[1].line == 5);
    CHECK(result.errors[1].column == 11);
    CHECK(result.errors[1].message ==
          "invalid value \"private\" for 'sharing': expected one of "
          "\"shared\", \"exclusive\", \"serialized\", \"project\", \"user\"");
    CHECK(result.errors[2].line == 6);
    CHECK(result.errors[2].column == 7);
    CHECK(result.errors[2].message ==
          "invalid value \"new\" for 'era': expected one of \"auto\", \"legacy\", \"modern\"");
    CHECK(result.errors[3].line == 7);
    CHECK(result.errors[3].column == 11);
    CHECK(result.errors[3].message ==
          "invalid value \"on_failure\" for 'restart': expected one of \"always\", "
          "\"on-failure\", \"never\"; did you mean 'on-failure'?");
}

TEST_CASE("every enum word is accepted", "[registry]") {
    const std::pair<const char*, Sharing> sharings[] = {{"shared", Sharing::shared},
                                                        {"exclusive", Sharing::exclusive},
                                                        {"serialized", Sharing::serialized},
                                                        {"project", Sharing::project},
                                                        {"user", Sharing::user}};
    for (const auto& [word, value] : sharings) {
        CHECK(only_server(
                  parse(std::string("[servers.a]\ncommand = \"x\"\nsharing = \"") + word + "\"\n"))
                  .sharing == value);
        CHECK(to_string(value) == word);
    }
    const std::pair<const char*, Era> eras[] = {
        {"auto", Era::auto_detect}, {"legacy", Era::legacy}, {"modern", Era::modern}};
    for (const auto& [word, value] : eras) {
        CHECK(only_server(
                  parse(std::string("[servers.a]\ncommand = \"x\"\nera = \"") + word + "\"\n"))
                  .era == value);
        CHECK(to_string(value) == word);
    }
    const std::pair<const char*, RestartPolicy> policies[] = {
        {"always", RestartPolicy::always},
        {"on-failure", RestartPolicy::on_failure},
        {"never", RestartPolicy::never}};
    for (const auto& [word, value] : policies) {
        CHECK(only_server(
                  parse(std::string("[servers.a]\ncommand = \"x\"\nrestart = \"") + word + "\"\n"))
                  .restart == value);
        CHECK(to_string(value) == word);
    }
    using mcpd::log::Level;
    const std::pair<const char*, Level> levels[] = {{"debug", Level::debug},
                                                    {"info", Level::info},
                                                    {"warning", Level::warning},
                                                    {"error", Level::error}};
    for (const auto& [word, value] : levels) {
        const LoadResult result = parse(std::string("[daemon]\nlog_level = \"") + word + "\"\n");
        REQUIRE(result.registry.has_value());
        CHECK(result.registry->daemon.log_level == value);
        CHECK(mcpd::log::level_name(value) == word);
    }
}

TEST_CASE("a server without a command is reported at its header", "[registry]") {
    const LoadResult result = parse(R"(# servers
[servers.first]
command = "x"

[servers.second]
args = ["--x"]
)");
    const ConfigError error = only_error(result);
    CHECK(error.line == 5);
    CHECK(error.column == 1);
    CHECK(error.message == "server 'second' has no 'command': add command = \"<program to run>\"");

    const ConfigError inline_table = only_error(parse("servers = { third = { args = [] } }\n"));
    CHECK(inline_table.line == 1);
    CHECK(inline_table.column == 21);
    CHECK(contains(inline_table.message, "server 'third' has no 'command'"));

    const ConfigError empty = only_error(parse("[servers.a]\ncommand = \"\"\n"));
    CHECK(empty.line == 2);
    CHECK(empty.column == 11);
    CHECK(empty.message == "expected a program name or path for 'command', got an empty string");
}

TEST_CASE("server names are restricted to [A-Za-z0-9_.-]", "[registry]") {
    const LoadResult result = parse(R"([servers."my server"]
command = "x"
restart = "sometimes"
)");
    INFO(describe(result));
    REQUIRE(result.errors.size() == 2);
    CHECK(result.errors[0].line == 1);
    CHECK(result.errors[0].column == 10);
    CHECK(result.errors[0].message ==
          "invalid server name \"my server\": use only letters, digits, '_', '.' and '-'");
    // The table is still checked, so one pass shows everything.
    CHECK(result.errors[1].line == 3);
    CHECK(contains(result.errors[1].message, "invalid value \"sometimes\" for 'restart'"));

    CHECK(contains(only_error(parse("[servers.\"\"]\ncommand = \"x\"\n")).message,
                   "invalid server name \"\""));
    CHECK(contains(only_error(parse("[servers.\"caf\xc3\xa9\"]\ncommand = \"x\"\n")).message,
                   "invalid server name"));
    CHECK(only_server(parse("[servers.\"A-z_0.9\"]\ncommand = \"x\"\n")).name == "A-z_0.9");
}

TEST_CASE("servers, daemon and each server must be tables", "[registry]") {
    const ConfigError server = only_error(parse("[servers]\ndemo = \"mcpd-demo-server\"\n"));
    CHECK(server.line == 2);
    CHECK(server.column == 8);
    CHECK(server.message == "expected a table for 'servers.demo', got string");

    const ConfigError servers = only_error(parse("servers = [\"a\"]\n"));
    CHECK(servers.line == 1);
    CHECK(servers.column == 11);
    CHECK(servers.message == "expected a table for 'servers', got array");

    const ConfigError daemon = only_error(parse("daemon = \"x\"\n"));
    CHECK(daemon.line == 1);
    CHECK(daemon.column == 10);
    CHECK(daemon.message == "expected a table for 'daemon', got string");
}

TEST_CASE("env names must be valid environment variable names", "[registry]") {
    const LoadResult result = parse(R"([servers.demo]
command = "x"
env = { "MY-VAR" = "1", 9LIVES = "2", OK_1 = "3" }
)");
    INFO(describe(result));
    REQUIRE(result.errors.size() == 2);
    CHECK(result.errors[0].line == 3);
    CHECK(result.errors[0].column == 9);
    CHECK(result.errors[0].message ==
          "invalid environment variable name \"MY-VAR\" in 'env': use letters, digits and '_', "
          "not starting with a digit");
    CHECK(result.errors[1].line == 3);
    CHECK(result.errors[1].column == 25);
    CHECK(contains(result.errors[1].message, "\"9LIVES\""));

    const ConfigError not_table =
        only_error(parse("[servers.a]\ncommand = \"x\"\nenv = [\"A=1\"]\n"));
    CHECK(not_table.column == 7);
    CHECK(not_table.message == "expected a table of strings for 'env', got array");
}

TEST_CASE("integers out of range say which range", "[registry]") {
    const LoadResult result = parse(R"([servers.demo]
command = "x"
max_sessions = -1
start_limit = { burst = 4294967296 }
)");
    INFO(describe(result));
    REQUIRE(result.errors.size() == 2);
    CHECK(result.errors[0].line == 3);
    CHECK(result.errors[0].column == 16);
    CHECK(result.errors[0].message == "expected a non-negative integer for 'max_sessions', got -1");
    CHECK(result.errors[1].line == 4);
    CHECK(result.errors[1].column == 25);
    CHECK(result.errors[1].message ==
          "expected an integer of at most 4294967295 for 'start_limit.burst', got 4294967296");
}

TEST_CASE("roots must be absolute paths or file URIs", "[registry]") {
    const LoadResult result = parse(R"([servers.demo]
command = "x"
roots = ["/ok", "relative/dir", "file:///ok", "http://x"]
)");
    INFO(describe(result));
    REQUIRE(result.errors.size() == 2);
    CHECK(result.errors[0].line == 3);
    CHECK(result.errors[0].column == 17);
    CHECK(result.errors[0].message ==
          "expected an absolute path or a file:// URI in 'roots', got \"relative/dir\"");
    CHECK(result.errors[1].column == 47);
    CHECK(contains(result.errors[1].message, "got \"http://x\""));
}

TEST_CASE("allow_users and allow_groups refuse empty names", "[registry]") {
    const LoadResult result = parse(R"([servers.demo]
command = "x"
allow_users = ["alice", ""]
allow_groups = [""]
)");
    INFO(describe(result));
    REQUIRE(result.errors.size() == 2);
    CHECK(result.errors[0].line == 3);
    CHECK(result.errors[0].column == 25);
    CHECK(result.errors[0].message ==
          "expected a name or a numeric id in 'allow_users', got an empty string");
    CHECK(result.errors[1].line == 4);
    CHECK(result.errors[1].column == 17);
    CHECK(contains(result.errors[1].message, "'allow_groups'"));
}

TEST_CASE("all errors of a file are reported in one pass, in file order", "[registry]") {
    const LoadResult result = parse(R"([daemon]
log_level = "loud"

[servers.a]
command = "x"
stop_grace = "forever"

[servers.b]
args = 3

[servers.c]
command = "y"
max_sesions = 2
)");
    INFO(describe(result));
    REQUIRE(result.errors.size() == 5);
    CHECK_FALSE(result.registry.has_value());
    const int lines[] = {2, 6, 8, 9, 13};
    for (std::size_t i = 0; i < 5; ++i) {
        CHECK(result.errors[i].file == "/virtual/mcpd.toml");
        CHECK(result.errors[i].line == lines[i]);
    }
    CHECK(contains(result.errors[0].message, "'log_level'"));
    CHECK(contains(result.errors[1].message, "invalid duration \"forever\""));
    CHECK(contains(result.errors[2].message, "server 'b' has no 'command'"));
    CHECK(contains(result.errors[3].message, "expected an array of strings for 'args'"));
    CHECK(contains(result.errors[4].message, "did you mean 'max_sessions'?"));
}

TEST_CASE("parse_env_file reads KEY=VALUE lines", "[registry][env_file]") {
    const EnvFileResult result = parse_env_file(
        "# comment\n"
        "\n"
        "   \t\n"
        "  # indented comment\n"
        "PLAIN=value\n"
        "SPACED = padded value  \n"
        "export EXPORTED=yes\n"
        "DQ=\"double quoted # not a comment\"\n"
        "SQ='single \"quoted\"'\n"
        "EMPTY=\n"
        "EMPTY_QUOTES=\"\"\n"
        "URL=https://x/?a=b&c=d\n"
        "CRLF=windows\r\n"
        "export=not a prefix\n"
        "TWICE=first\n"
        "TWICE=second\n"
        "LAST=no newline");
    CHECK(result.errors.empty());
    const std::map<std::string, std::string> expected = {
        {"PLAIN", "value"},          {"SPACED", "padded value"},
        {"EXPORTED", "yes"},         {"DQ", "double quoted # not a comment"},
        {"SQ", "single \"quoted\""}, {"EMPTY", ""},
        {"EMPTY_QUOTES", ""},        {"URL", "https://x/?a=b&c=d"},
        {"CRLF", "windows"},         {"export", "not a prefix"},
        {"TWICE", "second"},         {"LAST", "no newline"},
    };
    CHECK(result.vars == expected);
}

TEST_CASE("parse_env_file reports malformed lines without their content", "[registry][env_file]") {
    const EnvFileResult result = parse_env_file(
        "GOOD=1\n"
        "s3cr3t-token-pasted-alone\n"
        "BAD-NAME=s3cr3t-2\n"
        "QUOTE=\"s3cr3t-3\n"
        "  export 9X=s3cr3t-4\n"
        "MIXED='s3cr3t-5\"\n");
    REQUIRE(result.errors.size() == 5);
    const int lines[] = {2, 3, 4, 5, 6};
    const int columns[] = {1, 1, 7, 10, 7};
    for (std::size_t i = 0; i < 5; ++i) {
        INFO("error " << i << ": " << result.errors[i].message);
        CHECK(result.errors[i].line == lines[i]);
        CHECK(result.errors[i].column == columns[i]);
        CHECK_FALSE(contains(result.errors[i].message, "s3cr3t"));
        CHECK_FALSE(contains(result.errors[i].message, "BAD-NAME"));
    }
    CHECK(result.errors[0].message == "expected KEY=VALUE, a '#' comment or a blank line");
    CHECK(contains(result.errors[1].message, "invalid variable name"));
    CHECK(contains(result.errors[2].message, "unterminated quote"));
    CHECK(result.vars == std::map<std::string, std::string>{{"GOOD", "1"}});
    CHECK(is_env_name("_A1"));
    CHECK_FALSE(is_env_name("1A"));
    CHECK_FALSE(is_env_name(""));
}

TEST_CASE("env_file and cwd are resolved against the registry's directory", "[registry]") {
    const TempDir dir;
    dir.write("secrets/app.env", "TOKEN=abc\n");
    fs::create_directories(dir.path() / "work");
    const std::string registry = dir.write("conf/../mcpd.toml", R"([servers.rel]
command = "x"
env_file = "secrets/app.env"
cwd = "./work/"

[servers.abs]
command = "x"
env_file = ")" + (dir.path() / "secrets/app.env").string() + R"("
cwd = ")" + (dir.path() / "work/../work").string() + R"("
)");
    const LoadResult result = load_registry((dir.path() / "mcpd.toml").string());
    INFO(describe(result));
    REQUIRE(result.registry.has_value());
    for (const ServerConfig& server : result.registry->servers) {
        INFO("server " << server.name);
        CHECK(server.env_file == (dir.path() / "secrets/app.env").string());
        CHECK(server.env_file_vars == std::map<std::string, std::string>{{"TOKEN", "abc"}});
        CHECK(server.cwd == (dir.path() / "work").string());
    }
    CHECK(registry == (dir.path() / "conf/../mcpd.toml").string());
}

TEST_CASE("a relative registry path resolves against the current directory", "[registry]") {
    const ServerConfig server =
        only_server(parse_registry("[servers.a]\ncommand = \"x\"\ncwd = \".\"\n", "mcpd.toml"));
    CHECK(server.cwd == fs::current_path().lexically_normal().string());
}

TEST_CASE("an env_file that cannot be read names the file and the reason", "[registry]") {
    const TempDir dir;
    fs::create_directories(dir.path() / "a-directory.env");
    const std::string text = R"([servers.missing]
command = "x"
env_file = "nope.env"
[servers.directory]
command = "x"
env_file = "a-directory.env"
[servers.empty]
command = "x"
env_file = ""
)";
    const std::string path = dir.write("mcpd.toml", text);
    const LoadResult result = load_registry(path);
    INFO(describe(result));
    REQUIRE(result.errors.size() == 3);
    CHECK(result.errors[0].file == path);
    CHECK(result.errors[0].line == 3);
    CHECK(result.errors[0].column == 12);
    CHECK(result.errors[0].message == "cannot read env_file \"" +
                                          (dir.path() / "nope.env").string() +
                                          "\": " + std::strerror(ENOENT));
    CHECK(result.errors[1].line == 6);
    CHECK(result.errors[1].message == "cannot read env_file \"" +
                                          (dir.path() / "a-directory.env").string() +
                                          "\": " + std::strerror(EISDIR));
    CHECK(result.errors[2].line == 9);
    CHECK(result.errors[2].message == "expected a file path for 'env_file', got an empty string");

    if (::geteuid() != 0) {  // root reads anything
        const std::string locked = dir.write("locked.env", "A=1\n");
        fs::permissions(locked, fs::perms::none);
        const ConfigError error = only_error(
            parse_registry("[servers.a]\ncommand = \"x\"\nenv_file = \"locked.env\"\n", path));
        CHECK(contains(error.message, std::strerror(EACCES)));
    }
}

TEST_CASE("an env_file or registry that is a FIFO or a device is refused without blocking",
          "[registry]") {
    // Reading a FIFO nobody writes would block the daemon (on reload, every session with it);
    // a device like /dev/zero would never end.
    const TempDir dir;
    const std::string fifo = (dir.path() / "vars.env").string();
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    const std::string path = dir.write("mcpd.toml",
                                       "[servers.a]\ncommand = \"x\"\nenv_file = \"vars.env\"\n"
                                       "[servers.b]\ncommand = \"x\"\nenv_file = \"/dev/zero\"\n");
    const LoadResult result = load_registry(path);
    INFO(describe(result));
    REQUIRE(result.errors.size() == 2);
    CHECK(contains(result.errors[0].message, "vars.env\": not a regular file"));
    CHECK(contains(result.errors[1].message, "/dev/zero\": not a regular file"));
    const LoadResult registry_fifo = load_registry(fifo);
    REQUIRE(registry_fifo.errors.size() == 1);
    CHECK(contains(registry_fifo.errors[0].message, "not a regular file"));
}

TEST_CASE("a malformed env_file line names the env file and line, never a value", "[registry]") {
    const TempDir dir;
    const std::string env_path = dir.write("app.env",
                                           "# app secrets\n"
                                           "GOOD=visible-s3cr3t-0\n"
                                           "s3cr3t-1-pasted-alone\n"
                                           "QUOTE=\"s3cr3t-2\n");
    const std::string path = dir.write("mcpd.toml", R"([servers.demo]
command = "x"
env_file = "app.env"
env = { PUBLIC = "s3cr3t-looking-but-public" }
restart = "sometimes"
)");
    const LoadResult result = load_registry(path);
    INFO(describe(result));
    REQUIRE(result.errors.size() == 3);
    CHECK(result.errors[0].file == env_path);
    CHECK(result.errors[0].line == 3);
    CHECK(result.errors[0].column == 1);
    CHECK(result.errors[0].message ==
          "malformed line in env_file of server 'demo': expected KEY=VALUE, a '#' comment or "
          "a blank line");
    CHECK(result.errors[0].to_string() == env_path + ":3:1: " + result.errors[0].message);
    CHECK(result.errors[1].file == env_path);
    CHECK(result.errors[1].line == 4);
    CHECK(result.errors[1].column == 7);
    CHECK(result.errors[2].file == path);
    for (const ConfigError& error : result.errors) {
        CHECK_FALSE(contains(error.to_string(), "s3cr3t"));
    }
}

TEST_CASE("cwd must be an existing directory", "[registry]") {
    const TempDir dir;
    const std::string file = dir.write("plain-file", "");
    const std::string path = dir.write("mcpd.toml", R"([servers.a]
command = "x"
cwd = "does/not/exist"
[servers.b]
command = "x"
cwd = "plain-file"
[servers.c]
command = "x"
cwd = ""
)");
    const LoadResult result = load_registry(path);
    INFO(describe(result));
    REQUIRE(result.errors.size() == 3);
    CHECK(result.errors[0].line == 3);
    CHECK(result.errors[0].column == 7);
    CHECK(result.errors[0].message ==
          "cwd \"" + (dir.path() / "does/not/exist").string() +
              "\" is not an existing directory: " + std::strerror(ENOENT));
    CHECK(result.errors[1].line == 6);
    CHECK(result.errors[1].message == "cwd \"" + file + "\" is not a directory");
    CHECK(result.errors[2].line == 9);
    CHECK(result.errors[2].message == "expected a directory path for 'cwd', got an empty string");
}

TEST_CASE("a registry file that cannot be read is one error without a position", "[registry]") {
    const TempDir dir;
    const std::string missing = (dir.path() / "absent.toml").string();
    const ConfigError error = only_error(load_registry(missing));
    CHECK(error.file == missing);
    CHECK(error.line == 0);
    CHECK(error.column == 0);
    CHECK(contains(error.message, missing));
    CHECK(contains(error.message, std::strerror(ENOENT)));
    CHECK(error.to_string() == missing + ": " + error.message);

    const ConfigError directory = only_error(load_registry(dir.path().string()));
    CHECK(directory.line == 0);
    CHECK(contains(directory.message, std::strerror(EISDIR)));
}

TEST_CASE("parse_registry never throws", "[registry]") {
    const std::string garbage[] = {
        std::string("\0\x01\x02[[[", 6), "\xff\xfe invalid utf-8", "[servers.a]\ncommand = \"x\n",
        "a = 99999999999999999999\n",    std::string(10000, '['),
    };
    for (const std::string& text : garbage) {
        LoadResult result;
        CHECK_NOTHROW(result = parse(text));
        CHECK_FALSE(result.errors.empty());
        CHECK_FALSE(result.registry.has_value());
    }
}

TEST_CASE("ConfigError::to_string omits what it does not know", "[registry]") {
    CHECK(ConfigError{"f.toml", 3, 7, "bad"}.to_string() == "f.toml:3:7: bad");
    CHECK(ConfigError{"f.toml", 3, 0, "bad"}.to_string() == "f.toml:3: bad");
    CHECK(ConfigError{"f.toml", 0, 0, "bad"}.to_string() == "f.toml: bad");
}

TEST_CASE("the session keys parse", "[registry]") {
    const ServerConfig s = only_server(parse(R"([servers.a]
command = "x"
sharing = "serialized"
era = "modern"
idle_timeout = "10m"
request_timeout = "30s"
max_sessions = 2
max_children = 3
roots = ["/r"]
)"));
    CHECK(s.sharing == Sharing::serialized);
    CHECK(s.max_sessions == 2);
    CHECK(s.max_children == 3);
    CHECK(s.replay == Replay::safe);  // the default
}

TEST_CASE("replay takes off, safe or annotated, and nothing else", "[registry]") {
    CHECK(only_server(parse("[servers.a]\ncommand = \"x\"\nreplay = \"annotated\"\n")).replay ==
          Replay::annotated);
    CHECK(only_server(parse("[servers.a]\ncommand = \"x\"\nreplay = \"off\"\n")).replay ==
          Replay::off);
    const LoadResult bad = parse("[servers.a]\ncommand = \"x\"\nreplay = \"always\"\n");
    REQUIRE(bad.errors.size() == 1);
    CHECK_THAT(bad.errors[0].message, Contains("annotated"));
    CHECK(to_string(Replay::annotated) == "annotated");
}

namespace {

// example.toml with its commented-out [servers.*] blocks switched on.
std::string uncomment_server_blocks(const std::string& text) {
    std::istringstream in(text);
    std::string out;
    std::string line;
    bool in_block = false;
    while (std::getline(in, line)) {
        if (line.rfind("# [servers.", 0) == 0) in_block = true;
        if (line.empty()) in_block = false;
        if (in_block && line.rfind("# ", 0) == 0) line.erase(0, 2);
        out += line + "\n";
    }
    return out;
}

}  // namespace

TEST_CASE("config/example.toml loads cleanly", "[registry][example]") {
    const std::string path = MCPD_TEST_DATA_DIR "/../../../config/example.toml";
    const LoadResult result = load_registry(path);
    INFO(describe(result));
    REQUIRE(result.errors.empty());
    REQUIRE(result.registry.has_value());
    const Registry& registry = *result.registry;
    CHECK(registry.daemon.socket.empty());
    REQUIRE(registry.servers.size() == 1);
    CHECK(registry.servers[0].name == "demo");
    CHECK(registry.servers[0].command == "mcpd-demo-server");
    CHECK(registry.servers[0].env_file.empty());
    CHECK(registry.servers[0].cwd.empty());

    // The commented-out examples are valid too once switched on.
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    const LoadResult all = parse_registry(uncomment_server_blocks(text.str()), path);
    INFO(describe(all));
    REQUIRE(all.registry.has_value());
    REQUIRE(all.registry->servers.size() == 7);
    CHECK(all.registry->find("everything")->command == "npx");
    // One example of each sharing mode.
    CHECK(all.registry->find("memory")->sharing == Sharing::shared);
    CHECK(all.registry->find("browser")->sharing == Sharing::serialized);
    CHECK(all.registry->find("scratch")->sharing == Sharing::exclusive);
    CHECK(all.registry->find("filesystem")->sharing == Sharing::project);
    CHECK(all.registry->find("filesystem")->args.back() == "{project}");
    CHECK(all.registry->find("git")->command == "uvx");
    CHECK(all.registry->find("git")->sharing == Sharing::project);
}

TEST_CASE("socket_group and socket_mode open the socket to others, within bounds", "[registry]") {
    const LoadResult ok = parse("[daemon]\nsocket_group = \"root\"\nsocket_mode = \"0660\"\n");
    INFO(describe(ok));
    REQUIRE(ok.registry);
    CHECK(ok.registry->daemon.socket_group == "root");
    CHECK(ok.registry->daemon.socket_mode == 0660U);
    CHECK(parse("[daemon]\nsocket_mode = \"0666\"\n").registry->daemon.socket_mode == 0666U);
    CHECK(parse("").registry->daemon.socket_mode == 0U);

    for (const char* bad : {"\"0755\"", "\"0060\"", "\"660x\"", "\"\"", "\"4666\"", "660"}) {
        const LoadResult result = parse(std::string("[daemon]\nsocket_mode = ") + bad + "\n");
        INFO(bad);
        REQUIRE(result.errors.size() == 1);
        CHECK(result.errors[0].line == 2);
    }
    const LoadResult no_group = parse("[daemon]\nsocket_group = \"no-such-group-here\"\n");
    REQUIRE(no_group.errors.size() == 1);
    CHECK(contains(no_group.errors[0].message, "names no group on this machine"));
}

TEST_CASE("{project} is the directory of each project, for sharing = \"project\" only",
          "[registry]") {
    const ServerConfig s = only_server(
        parse("[servers.fs]\ncommand = \"x\"\nsharing = \"project\"\ncwd = \"{project}/src\"\n"
              "args = [\"--root\", \"{project}\"]\nenv = { DIR = \"{project}\" }\n"));
    // Kept as written (the directory exists only once a session names its project).
    CHECK(s.cwd == "{project}/src");
    CHECK(s.args == std::vector<std::string>{"--root", "{project}"});
    CHECK(s.env.at("DIR") == "{project}");

    // A cwd with the placeholder must still be a path.
    const LoadResult relative =
        parse("[servers.fs]\ncommand = \"x\"\nsharing = \"project\"\ncwd = \"src/{project}\"\n");
    REQUIRE(relative.errors.size() == 1);
    CHECK(relative.errors[0].line == 4);
    CHECK(relative.errors[0].message == "cwd \"src/{project}\" must start with {project} or '/'");

    // Anywhere but a project server the placeholder would reach the server as it is.
    const LoadResult shared =
        parse("[servers.fs]\ncommand = \"x\"\nsharing = \"shared\"\nargs = [\"{project}\"]\n");
    REQUIRE(shared.errors.size() == 1);
    CHECK(shared.errors[0].line == 3);
    CHECK(shared.errors[0].column == 11);
    CHECK(shared.errors[0].message ==
          "server 'fs' uses {project} in 'args', which only sharing = \"project\" fills in: set "
          "sharing = \"project\" or write the directory itself");
    const LoadResult by_default =
        parse("[servers.fs]\ncommand = \"x\"\nenv = { D = \"{project}\" }\n");
    REQUIRE(by_default.errors.size() == 1);
    CHECK(by_default.errors[0].line == 1);
    CHECK(by_default.errors[0].message.find("'env.D'") != std::string::npos);
}

TEST_CASE("an env_file under ~/ is the user's own, read when its process starts", "[registry]") {
    // Not read at load (whose home it is depends on who the process runs as), so a file that
    // does not exist for mcpd's user is no load error.
    const ServerConfig s =
        only_server(parse("[servers.a]\ncommand = \"x\"\nsharing = \"user\"\nenv_file = "
                          "\"~/.config/mcpd-none.env\"\n"));
    CHECK(s.env_file == "~/.config/mcpd-none.env");
    CHECK(s.env_file_vars.empty());
    CHECK_FALSE(s.run_as.has_value());
}
