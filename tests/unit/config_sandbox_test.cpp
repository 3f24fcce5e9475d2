// sandbox: a preset or a table per server, layered on [daemon.sandbox]; presets expanded into
// path lists; sizes and CPU limits parsed; every malformed value refused where it stands.
#include <catch2/catch.hpp>

#include <algorithm>

#include "config/sandbox.h"
#include "registry_parse.h"

using namespace mcpd;
using config::NetworkAccess;

namespace {

bool has(const std::vector<std::string>& list, const std::string& item) {
    return std::find(list.begin(), list.end(), item) != list.end();
}

}  // namespace

TEST_CASE("sandbox: a preset in one line, or a table of rules", "[registry][sandbox]") {
    const config::LoadResult result = parse(R"([servers.a]
command = "x"
sandbox = "project"
[servers.b]
command = "y"
[servers.b.sandbox]
read = ["~/notes", "/srv/data"]
write = ["{cache}/out"]
hide = ["~/notes/private"]
network = "loopback"
memory = "512M"
tasks = 64
cpu = "50%"
open_files = 256
strict = true
[servers.c]
command = "z"
)");
    INFO(describe(result));
    REQUIRE(result.registry);
    const config::Sandbox& a = result.registry->find("a")->sandbox;
    CHECK(a.preset == "project");
    CHECK(a.any());
    const config::Sandbox& b = result.registry->find("b")->sandbox;
    CHECK(b.preset.empty());
    CHECK(b.read == std::vector<std::string>{"~/notes", "/srv/data"});
    CHECK(b.write == std::vector<std::string>{"{cache}/out"});
    CHECK(b.hide == std::vector<std::string>{"~/notes/private"});
    CHECK(b.network == NetworkAccess::loopback);
    CHECK(b.memory == 512ULL << 20);
    CHECK(b.tasks == 64U);
    CHECK(b.cpu == config::CpuLimit{config::CpuLimit::Kind::quota, 50});
    CHECK(b.open_files == 256U);
    CHECK(b.strict == true);
    CHECK_FALSE(result.registry->find("c")->sandbox.any());
}

TEST_CASE("sandbox: [daemon.sandbox] is every server's default, a server adds to its lists, "
          "overrides its scalars, or turns it off with \"none\"",
          "[registry][sandbox]") {
    const config::LoadResult result = parse(R"([daemon.sandbox]
preset = "readonly"
network = "none"
read = ["/srv/shared"]
memory = "1G"
[servers.plain]
command = "x"
[servers.more]
command = "y"
sandbox = { preset = "project", read = ["/srv/own"], network = "all" }
[servers.free]
command = "z"
sandbox = "none"
)");
    INFO(describe(result));
    REQUIRE(result.registry);
    const config::Sandbox& plain = result.registry->find("plain")->sandbox;
    CHECK(plain.preset == "readonly");
    CHECK(plain.network == NetworkAccess::none);
    CHECK(plain.read == std::vector<std::string>{"/srv/shared"});
    CHECK(plain.memory == 1ULL << 30);
    const config::Sandbox& more = result.registry->find("more")->sandbox;
    CHECK(more.preset == "project");
    CHECK(more.network == NetworkAccess::all);
    CHECK(more.read == std::vector<std::string>{"/srv/shared", "/srv/own"});
    CHECK(more.memory == 1ULL << 30);
    const config::Sandbox& free = result.registry->find("free")->sandbox;
    CHECK(free.off);
    CHECK_FALSE(free.any());
    CHECK(config::path_rules(free).read.empty());
}

TEST_CASE("sandbox: the presets' paths", "[registry][sandbox]") {
    config::Sandbox project;
    project.preset = "project";
    const config::PathRules p = config::path_rules(project);
    CHECK(has(p.read, "/usr"));
    CHECK(has(p.read, "{project}"));
    CHECK_FALSE(has(p.read, "~"));
    CHECK(has(p.write, "{project}"));
    CHECK(has(p.write, "{cache}"));
    CHECK(has(p.write, "~/.npm"));
    CHECK(has(p.hide, "~/.ssh"));
    CHECK(has(p.hide, "~/.aws"));
    CHECK(has(p.hide, "~/.config/mcpd"));

    config::Sandbox readonly;
    readonly.preset = "readonly";
    readonly.write = {"/srv/out"};
    const config::PathRules r = config::path_rules(readonly);
    CHECK(has(r.read, "~"));
    CHECK(has(r.read, "{project}"));
    CHECK_FALSE(has(r.write, "{project}"));
    CHECK(has(r.write, "/srv/out"));
    CHECK(has(r.hide, "~/.gnupg"));

    config::Sandbox limits_only;
    limits_only.memory = 1 << 30;
    const config::PathRules none = config::path_rules(limits_only);
    CHECK(none.read.empty());
    CHECK(none.write.empty());
    CHECK(none.hide.empty());
    CHECK(limits_only.any());
}

TEST_CASE("sandbox: sizes and CPU limits", "[registry][sandbox]") {
    CHECK(config::parse_byte_size("1048576") == 1048576U);
    CHECK(config::parse_byte_size("64K") == 65536U);
    CHECK(config::parse_byte_size("512M") == 512ULL << 20);
    CHECK(config::parse_byte_size("512MiB") == 512ULL << 20);
    CHECK(config::parse_byte_size("2G") == 2ULL << 30);
    CHECK(config::parse_byte_size("1T") == 1ULL << 40);
    CHECK_FALSE(config::parse_byte_size("1.5G"));
    CHECK_FALSE(config::parse_byte_size("G"));
    CHECK_FALSE(config::parse_byte_size("12X"));
    CHECK_FALSE(config::parse_byte_size("99999999999999999999T"));
    CHECK_FALSE(config::parse_byte_size("20000000T"));
    CHECK(config::parse_cpu_limit("50%") == config::CpuLimit{config::CpuLimit::Kind::quota, 50});
    CHECK(config::parse_cpu_limit("250%") == config::CpuLimit{config::CpuLimit::Kind::quota, 250});
    CHECK(config::parse_cpu_limit("100") == config::CpuLimit{config::CpuLimit::Kind::weight, 100});
    CHECK_FALSE(config::parse_cpu_limit("0%"));
    CHECK_FALSE(config::parse_cpu_limit("20000"));
    CHECK_FALSE(config::parse_cpu_limit("half"));
}

TEST_CASE("sandbox: malformed values are refused where they stand", "[registry][sandbox]") {
    const auto error_of = [](const std::string& sandbox) {
        return only_error(parse("[servers.a]\ncommand = \"x\"\nsandbox = " + sandbox + "\n"));
    };
    CHECK(contains(error_of("\"projekt\"").message, "did you mean 'project'"));
    CHECK(contains(error_of("42").message, "expected a preset"));
    CHECK(contains(error_of("{ read = [\"relative/path\"] }").message, "expected an absolute path"));
    CHECK(contains(error_of("{ read = [\"~user/x\"] }").message, "expected an absolute path"));
    CHECK(contains(error_of("{ write = [\"{projectx}\"] }").message, "expected an absolute path"));
    CHECK(contains(error_of("{ network = \"lan\" }").message, "\"loopback\""));
    CHECK(contains(error_of("{ memory = \"lots\" }").message, "sandbox.memory"));
    CHECK(contains(error_of("{ memory = 1000 }").message, "at least 1M"));
    CHECK(contains(error_of("{ cpu = \"fast\" }").message, "sandbox.cpu"));
    CHECK(contains(error_of("{ tasks = 0 }").message, "sandbox.tasks"));
    CHECK(contains(error_of("{ open_files = 3 }").message, "sandbox.open_files"));
    CHECK(contains(error_of("{ netwrok = \"none\" }").message, "did you mean 'network'"));
    CHECK(contains(only_error(parse("[daemon.sandbox]\nstrict = \"yes\"\n")).message,
                   "sandbox.strict"));
}

TEST_CASE("sandbox: rule paths", "[registry][sandbox]") {
    CHECK(config::is_rule_path("/srv"));
    CHECK(config::is_rule_path("~"));
    CHECK(config::is_rule_path("~/x"));
    CHECK(config::is_rule_path("{project}"));
    CHECK(config::is_rule_path("{project}/build"));
    CHECK(config::is_rule_path("{cache}"));
    CHECK(config::is_rule_path("{state}/db"));
    CHECK_FALSE(config::is_rule_path(""));
    CHECK_FALSE(config::is_rule_path("x"));
    CHECK_FALSE(config::is_rule_path("~x"));
    CHECK_FALSE(config::is_rule_path("{project}x"));
    CHECK_FALSE(config::is_rule_path(std::string("/a\0b", 4)));
}
