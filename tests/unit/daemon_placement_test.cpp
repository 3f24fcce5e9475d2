// Placement: admission as a pure decision, and the route table over a real ServerPool whose
// host is a fake (no daemon, no sessions' transports). Servers here run `cat`: a process that
// is started waits for its stdin, which closes when its instance is freed (the loop never
// runs, so nothing is read from it).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "daemon/io/event_loop.h"
#include "daemon/placement.h"
#include "daemon/server/reaper.h"

using namespace mcpd;

namespace {

struct PlacementHost : ServerHost, SessionSink {
    EventLoop event_loop;
    Reaper reaper_{event_loop.base()};
    std::string directory = "/";
    std::vector<const ManagedServer*> drained;

    EventLoop& loop() override { return event_loop; }
    Reaper& reaper() override { return reaper_; }
    std::size_t max_message_bytes() const override { return 1 << 20; }
    bool request_log_default() const override { return false; }
    const std::string& registry_dir() const override { return directory; }
    SessionSink& session_sink() override { return *this; }
    void pause_sessions(ManagedServer&, bool) override {}
    void server_state_changed(ManagedServer&, ServerState, ServerState) override {}
    void server_drained(ManagedServer& server) override { drained.push_back(&server); }
    bool pass_to_legacy(ManagedServer&, SessionId, std::string_view) override { return false; }
    void project_reported(ManagedServer&, SessionId, const nlohmann::json*,
                          std::string_view) override {}
    void departed_session_gone(ManagedServer&) override {}
    void cancel_elsewhere(ManagedServer&, SessionId, std::string_view) override {}
    void send(SessionId, std::string_view) override {}
    void close(SessionId, const std::string&) override {}
};

config::ServerConfig placement_entry(const std::string& name, config::Sharing sharing) {
    config::ServerConfig config;
    config.name = name;
    config.command = "cat";
    config.sharing = sharing;
    return config;
}

Project project_in(const std::string& directory, uid_t user) {
    Project project;
    project.directory = directory;
    project.roots = {"file://" + directory};
    project.user = user;
    return project;
}

struct PlacementRig {
    PlacementHost host;
    ServerPool pool{host, [] {}};
    Placement placement{pool};
};

}  // namespace

TEST_CASE("admission: max_sessions, and max_children for private processes", "[placement]") {
    AdmissionView view{"demo", config::Sharing::shared, 2, 0, 1};
    CHECK_FALSE(admission_refusal(view));
    view.attached = 2;
    const auto full = admission_refusal(view);
    REQUIRE(full);
    CHECK_THAT(*full, Catch::Contains("already has 2 sessions (max_sessions)"));

    AdmissionView exclusive{"solo", config::Sharing::exclusive, 0, 3, 2};
    CHECK_FALSE(admission_refusal(exclusive));
    exclusive.attached = 3;
    const auto busy = admission_refusal(exclusive);
    REQUIRE(busy);
    CHECK_THAT(*busy, Catch::Contains("already runs 3 private processes"));
    // max_children bounds private processes only under "exclusive".
    exclusive.sharing = config::Sharing::shared;
    CHECK_FALSE(admission_refusal(exclusive));
}

TEST_CASE("placement: a shared server's sessions are routed to its one instance",
          "[placement]") {
    PlacementRig rig;
    ManagedServer& entry = rig.pool.add(placement_entry("demo", config::Sharing::shared));
    CHECK(&rig.placement.place(entry, 7, std::nullopt) == &entry);
    REQUIRE(rig.placement.route_of(7) != nullptr);
    CHECK(*rig.placement.route_of(7) == InstanceKey::shared_of("demo"));
    CHECK(rig.placement.server_of(7, "demo") == &entry);
    entry.router().attach(7);
    rig.placement.session_left(7, "demo");
    CHECK(rig.placement.route_of(7) == nullptr);
    CHECK_FALSE(entry.router().has_session(7));
}

TEST_CASE("placement: a route remembers its instance only while the pool is unchanged",
          "[placement]") {
    PlacementRig rig;
    ManagedServer& entry = rig.pool.add(placement_entry("demo", config::Sharing::shared));
    rig.placement.place(entry, 7, std::nullopt);
    const std::uint64_t before = rig.pool.generation();
    CHECK(rig.placement.server_of(7, "demo") == &entry);
    CHECK(rig.placement.server_of(7, "demo") == &entry);  // from the route, no pool lookup
    CHECK(rig.pool.generation() == before);
    // A reload replaces the entry's instance: the route finds the new one, never the old.
    ManagedServer& replaced = rig.pool.add(placement_entry("demo", config::Sharing::shared));
    CHECK(rig.pool.generation() != before);
    CHECK(rig.placement.server_of(7, "demo") == &replaced);

    // An instance that goes and is made again under the same key is found anew too.
    ManagedServer& solo = rig.pool.add(placement_entry("solo", config::Sharing::exclusive));
    ManagedServer& first = rig.placement.place(solo, 1, std::nullopt);
    CHECK(rig.placement.server_of(1, "solo") == &first);
    rig.pool.retire(InstanceKey::exclusive_of("solo", 1), StopReason::stopped);
    CHECK(rig.placement.server_of(1, "solo") != &first);
}

TEST_CASE("placement: each session of an exclusive server has a process of its own, which "
          "goes with it",
          "[placement]") {
    PlacementRig rig;
    ManagedServer& entry = rig.pool.add(placement_entry("solo", config::Sharing::exclusive));
    ManagedServer& first = rig.placement.place(entry, 1, std::nullopt);
    ManagedServer& second = rig.placement.place(entry, 2, std::nullopt);
    CHECK(&first != &entry);
    CHECK(&first != &second);
    CHECK(rig.placement.server_of(1, "solo") == &first);
    CHECK(rig.placement.server_of(2, "solo") == &second);
    CHECK(rig.placement.exclusive_count("solo") == 2);
    CHECK(rig.pool.find(InstanceKey::exclusive_of("solo", 1)) == &first);

    first.router().attach(1);
    rig.placement.session_left(1, "solo");
    CHECK(rig.placement.exclusive_count("solo") == 1);
    CHECK(rig.pool.find(InstanceKey::exclusive_of("solo", 1)) == nullptr);
    // The other session keeps its own.
    CHECK(rig.placement.server_of(2, "solo") == &second);
}

TEST_CASE("placement: sessions of one project share its child, another project or user gets "
          "its own",
          "[placement]") {
    PlacementRig rig;
    ManagedServer& entry = rig.pool.add(placement_entry("fs", config::Sharing::user));
    const Project alice = project_in("/", 1001);
    const Project bob = project_in("/tmp", 1002);
    // Each session is attached to its instance as it is placed, as the daemon does.
    ManagedServer& a1 = rig.placement.place(entry, 1, alice);
    a1.router().attach(1);
    ManagedServer& a2 = rig.placement.place(entry, 2, alice);
    a2.router().attach(2);
    ManagedServer& b1 = rig.placement.place(entry, 3, bob);
    b1.router().attach(3);
    CHECK(&a1 == &a2);
    CHECK(&a1 != &b1);
    CHECK(&a1 != &entry);
    REQUIRE(rig.placement.project_of_session(1) != nullptr);
    CHECK(rig.placement.project_of_session(1)->directory == "/");
    CHECK(rig.placement.project_of_session(3)->user == 1002);
    // The child runs the entry in its user's directory.
    CHECK(a1.config().cwd == "/");
    CHECK(b1.config().cwd == "/tmp");
    CHECK(rig.pool.child_views("fs").size() == 2);

    // The project's child stops with its last session (idle_timeout = 0).
    rig.placement.session_left(1, "fs");
    CHECK(rig.pool.find(InstanceKey::project_of("fs", alice)) == &a1);
    rig.placement.session_left(2, "fs");
    CHECK(rig.pool.find(InstanceKey::project_of("fs", alice)) == nullptr);
    CHECK(rig.placement.server_of(3, "fs") == &b1);
}

TEST_CASE("placement: a child whose roots change is keyed by its new project, routes included",
          "[placement]") {
    PlacementRig rig;
    ManagedServer& entry = rig.pool.add(placement_entry("fs", config::Sharing::project));
    const Project first = project_in("/tmp", 0);
    const Project second = project_in("/", 0);
    ManagedServer& child = rig.placement.place_in_project(entry, 5, first);
    rig.placement.rekey_project_child(5, second);
    CHECK(rig.pool.find(InstanceKey::project_of("fs", first)) == nullptr);
    CHECK(rig.pool.find(InstanceKey::project_of("fs", second)) == &child);
    REQUIRE(rig.placement.route_of(5) != nullptr);
    CHECK(*rig.placement.route_of(5) == InstanceKey::project_of("fs", second));
    CHECK(rig.placement.server_of(5, "fs") == &child);
    CHECK(child.config().roots == second.roots);
}

TEST_CASE("placement: a legacy client is routed to the legacy process of its instance, which "
          "stops with its last client",
          "[placement]") {
    PlacementRig rig;
    ManagedServer& entry = rig.pool.add(placement_entry("dual", config::Sharing::shared));
    rig.placement.place(entry, 1, std::nullopt);
    rig.placement.place(entry, 2, std::nullopt);
    ManagedServer& legacy = rig.placement.route_to_legacy(entry, 1);
    CHECK(&rig.placement.route_to_legacy(entry, 2) == &legacy);
    CHECK(&legacy != &entry);
    CHECK(legacy.config().era == config::Era::legacy);
    CHECK(rig.placement.on_legacy(1));
    CHECK(rig.placement.server_of(1, "dual") == &legacy);
    CHECK(rig.placement.legacy_process("dual") == &legacy);

    legacy.router().attach(1);
    legacy.router().attach(2);
    rig.placement.session_left(1, "dual");
    CHECK(rig.placement.legacy_process("dual") == &legacy);
    rig.placement.session_left(2, "dual");
    CHECK(rig.placement.legacy_process("dual") == nullptr);
    CHECK(rig.pool.find("dual") == &entry);
}

TEST_CASE("placement: a project child's legacy clients get a process of that project",
          "[placement]") {
    PlacementRig rig;
    ManagedServer& entry = rig.pool.add(placement_entry("dual", config::Sharing::project));
    const Project mine = project_in("/tmp", 0);
    ManagedServer& child = rig.placement.place_in_project(entry, 1, mine);
    ManagedServer& legacy = rig.placement.route_to_legacy(child, 1);
    CHECK(rig.pool.find(InstanceKey::legacy_of(InstanceKey::project_of("dual", mine))) ==
          &legacy);
    // Not the entry's own legacy process, and run in the project.
    CHECK(rig.placement.legacy_process("dual") == nullptr);
    CHECK(legacy.config().roots == mine.roots);
    CHECK(legacy.config().sharing == config::Sharing::shared);
}
