#include <catch2/catch.hpp>
#include <initializer_list>
#include <string>
#include <vector>

#include "daemon/reload_plan.h"

using mcpd::plan_reload;
using mcpd::ReloadPlan;
using mcpd::config::Registry;
using mcpd::config::ServerConfig;
using Names = std::vector<std::string>;

namespace {

ServerConfig server(const std::string& name) {
    ServerConfig config;
    config.name = name;
    config.command = "mcpd-" + name;
    return config;
}

Registry registry(std::initializer_list<ServerConfig> servers) {
    Registry r;
    r.path = "/etc/mcpd/mcpd.toml";
    r.servers = servers;
    return r;
}

}  // namespace

TEST_CASE("reload plan: a server only in the new registry is added", "[reload_plan]") {
    const ReloadPlan plan =
        plan_reload(registry({server("a")}), registry({server("a"), server("b")}), false);
    CHECK(plan.refusal.empty());
    CHECK(plan.added == Names{"b"});
    CHECK(plan.removed.empty());
    CHECK(plan.changed.empty());
    CHECK(plan.unchanged == Names{"a"});
}

TEST_CASE("reload plan: a server only in the old registry is removed", "[reload_plan]") {
    const ReloadPlan plan =
        plan_reload(registry({server("a"), server("b")}), registry({server("a")}), false);
    CHECK(plan.refusal.empty());
    CHECK(plan.removed == Names{"b"});
    CHECK(plan.added.empty());
    CHECK(plan.unchanged == Names{"a"});
    CHECK(plan.order == Names{"a"});
}

TEST_CASE("reload plan: a changed entry is changed, an identical one unchanged", "[reload_plan]") {
    ServerConfig edited = server("a");
    edited.args = {"--verbose"};
    const ReloadPlan plan =
        plan_reload(registry({server("a"), server("b")}), registry({edited, server("b")}), false);
    CHECK(plan.changed == Names{"a"});
    CHECK(plan.access_only.empty());
    CHECK(plan.unchanged == Names{"b"});
    CHECK(plan.added.empty());
    CHECK(plan.removed.empty());
}

TEST_CASE("reload plan: a change of allow_users/allow_groups alone is access-only",
          "[reload_plan]") {
    ServerConfig users = server("a");
    users.allow_users = {"alice"};
    ServerConfig groups = server("b");
    groups.allow_groups = {"developers"};
    ServerConfig both = server("c");
    both.allow_users = {"alice"};
    both.env = {{"DEBUG", "1"}};
    const ReloadPlan plan = plan_reload(registry({server("a"), server("b"), server("c")}),
                                        registry({users, groups, both}), false);
    // Access-only changes are still changes; the rest of an entry decides a restart.
    CHECK(plan.changed == Names{"a", "b", "c"});
    CHECK(plan.access_only == Names{"a", "b"});
}

TEST_CASE("reload plan: lists follow the registries' order", "[reload_plan]") {
    ServerConfig changed = server("c");
    changed.args = {"-v"};
    const ReloadPlan plan =
        plan_reload(registry({server("z"), server("c"), server("y"), server("m")}),
                    registry({server("m"), server("b"), changed, server("a")}), false);
    CHECK(plan.order == Names{"m", "b", "c", "a"});
    CHECK(plan.added == Names{"b", "a"});    // the new registry's order
    CHECK(plan.removed == Names{"z", "y"});  // the old registry's order
    CHECK(plan.changed == Names{"c"});
    CHECK(plan.unchanged == Names{"m"});
}

TEST_CASE("reload plan: removing every server is refused unless allowed", "[reload_plan]") {
    const Registry current = registry({server("a"), server("b")});

    const ReloadPlan empty = plan_reload(current, registry({}), false);
    CHECK_THAT(empty.refusal, Catch::StartsWith("it lists no servers, so reloading it would stop "
                                                "every server"));
    CHECK_THAT(empty.refusal, Catch::Contains("mcpctl reload --allow-remove-all"));
    CHECK(empty.removed.empty());
    CHECK(empty.order.empty());

    const ReloadPlan others = plan_reload(current, registry({server("c")}), false);
    CHECK_THAT(others.refusal, Catch::StartsWith("it lists none of the running servers"));
    CHECK(others.added.empty());

    const ReloadPlan allowed = plan_reload(current, registry({}), true);
    CHECK(allowed.refusal.empty());
    CHECK(allowed.removed == Names{"a", "b"});

    const ReloadPlan replaced = plan_reload(current, registry({server("c")}), true);
    CHECK(replaced.refusal.empty());
    CHECK(replaced.added == Names{"c"});
    CHECK(replaced.removed == Names{"a", "b"});
}

TEST_CASE("reload plan: an empty registry may become anything", "[reload_plan]") {
    CHECK(plan_reload(registry({}), registry({}), false).refusal.empty());
    const ReloadPlan plan = plan_reload(registry({}), registry({server("a")}), false);
    CHECK(plan.refusal.empty());
    CHECK(plan.added == Names{"a"});
}

TEST_CASE("reload plan: keeping one server is enough to go ahead", "[reload_plan]") {
    const ReloadPlan plan = plan_reload(registry({server("a"), server("b")}),
                                        registry({server("b"), server("c")}), false);
    CHECK(plan.refusal.empty());
    CHECK(plan.removed == Names{"a"});
    CHECK(plan.added == Names{"c"});
    CHECK(plan.unchanged == Names{"b"});
}
