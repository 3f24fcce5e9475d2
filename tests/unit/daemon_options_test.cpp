#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>
#include <vector>

#include "daemon/options.h"

using mcpd::CommandLine;
using mcpd::parse_command_line;
using Args = std::vector<std::string>;
using Mode = CommandLine::Mode;

TEST_CASE("options: no arguments runs with every default") {
    const CommandLine cl = parse_command_line({});
    CHECK(cl.mode == Mode::run);
    CHECK(cl.config_path.empty());
    CHECK(cl.socket_path.empty());
    CHECK(cl.log_level.empty());
    CHECK(cl.error.empty());
}

TEST_CASE("options: each value flag, separate and with '='") {
    const auto [args, config, socket, level] =
        GENERATE(table<Args, std::string, std::string, std::string>({
            {{"-c", "/etc/a.toml"}, "/etc/a.toml", "", ""},
            {{"--config", "/etc/a.toml"}, "/etc/a.toml", "", ""},
            {{"--config=/etc/a.toml"}, "/etc/a.toml", "", ""},
            {{"-s", "/run/m.sock"}, "", "/run/m.sock", ""},
            {{"--socket", "/run/m.sock"}, "", "/run/m.sock", ""},
            {{"--socket=/run/m.sock"}, "", "/run/m.sock", ""},
            {{"--log-level", "debug"}, "", "", "debug"},
            {{"--log-level=debug"}, "", "", "debug"},
            {{"--config=a=b.toml"}, "a=b.toml", "", ""},
            {{"-c", "x.toml", "--socket=/s", "--log-level", "error"}, "x.toml", "/s", "error"},
            {{"-c", "first.toml", "--config", "second.toml"}, "second.toml", "", ""},
        }));
    INFO(Catch::Detail::stringify(args));
    const CommandLine cl = parse_command_line(args);
    CHECK(cl.error.empty());
    CHECK(cl.mode == Mode::run);
    CHECK(cl.config_path == config);
    CHECK(cl.socket_path == socket);
    CHECK(cl.log_level == level);
}

TEST_CASE("options: --help and --version pick their mode") {
    CHECK(parse_command_line({"-h"}).mode == Mode::help);
    CHECK(parse_command_line({"--help"}).mode == Mode::help);
    CHECK(parse_command_line({"-V"}).mode == Mode::version);
    CHECK(parse_command_line({"--version"}).mode == Mode::version);
    const CommandLine cl = parse_command_line({"-c", "a.toml", "--help"});
    CHECK(cl.mode == Mode::help);
    CHECK(cl.error.empty());
}

TEST_CASE("options: --check-config takes the file to check") {
    for (const Args& args :
         {Args{"--check-config", "/tmp/r.toml"}, Args{"--check-config=/tmp/r.toml"}}) {
        INFO(Catch::Detail::stringify(args));
        const CommandLine cl = parse_command_line(args);
        CHECK(cl.error.empty());
        CHECK(cl.mode == Mode::check_config);
        CHECK(cl.config_path == "/tmp/r.toml");
    }
}

TEST_CASE("options: --check-state takes the descriptor the state is in") {
    for (const Args& args : {Args{"--check-state", "3"}, Args{"--check-state=3"}}) {
        INFO(Catch::Detail::stringify(args));
        const CommandLine cl = parse_command_line(args);
        CHECK(cl.error.empty());
        CHECK(cl.mode == Mode::check_state);
        CHECK(cl.state_fd == "3");
    }
}

TEST_CASE("options: a flag missing its value is a usage error naming the flag") {
    const std::string flag = GENERATE("-c", "--config", "-s", "--socket", "--log-level",
                                      "--check-config", "--check-state");
    const CommandLine cl = parse_command_line({flag});
    CHECK(cl.error == flag + " needs a value");
    // Also when it comes last after good options.
    CHECK(parse_command_line({"--log-level", "info", flag}).error == flag + " needs a value");
}

TEST_CASE("options: an unknown option or a stray argument is a usage error") {
    const std::string arg =
        GENERATE("--bogus", "--bogus=1", "-x", "registry.toml", "-c=a.toml", "--configs");
    const CommandLine cl = parse_command_line({"--socket", "/s", arg, "--help"});
    CHECK(cl.error == "unknown option '" + arg + "'");
}

TEST_CASE("options: a flag that takes no value refuses --flag=value") {
    const std::string arg = GENERATE("--help=yes", "--version=2");
    const CommandLine cl = parse_command_line({arg});
    CHECK_FALSE(cl.error.empty());
    CHECK_THAT(cl.error, Catch::Matchers::Contains(arg.substr(0, arg.find('='))));
}

TEST_CASE("options: the default registry path") {
    if (::getuid() == 0) {
        CHECK(mcpd::default_config_path() == "/etc/mcpd/mcpd.toml");
    } else {
        const char* xdg = std::getenv("XDG_CONFIG_HOME");
        const std::string saved = xdg != nullptr ? xdg : "";
        ::setenv("XDG_CONFIG_HOME", "/xdg/conf", 1);
        CHECK(mcpd::default_config_path() == "/xdg/conf/mcpd/mcpd.toml");
        ::setenv("XDG_CONFIG_HOME", "relative/ignored", 1);
        CHECK(mcpd::default_config_path() ==
              std::string(std::getenv("HOME")) + "/.config/mcpd/mcpd.toml");
        if (xdg != nullptr) {
            ::setenv("XDG_CONFIG_HOME", saved.c_str(), 1);
        } else {
            ::unsetenv("XDG_CONFIG_HOME");
        }
    }
}

TEST_CASE("options: usage text names every option and the default registry") {
    const std::string usage = mcpd::usage_text();
    for (const char* option : {"--config", "-c,", "--socket", "-s,", "--log-level",
                               "--check-config", "--help", "--version"}) {
        INFO(option);
        CHECK_THAT(usage, Catch::Matchers::Contains(option));
    }
    CHECK_THAT(usage, Catch::Matchers::Contains(mcpd::default_config_path()));
}
