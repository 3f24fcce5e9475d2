// sharing = "project": which child a session goes to, as pure rules over the server's
// children (project_placement.h): two projects two children, one project one child, the
// lobby that answers an initialize without starting a process for a guess, max_children.
#include <catch2/catch.hpp>
#include <vector>

#include "daemon/mux/project_placement.h"

using mcpd::ChildView;
using mcpd::Placement;
using mcpd::Settlement;

namespace {

ChildView child(const std::string& key, std::size_t sessions = 1, bool running = true) {
    return ChildView{key, /*live=*/true, running, /*modern=*/false, sessions};
}

}  // namespace

TEST_CASE("sessions of one project share a child; a new project gets a new one", "[project]") {
    std::vector<ChildView> children;
    // The first session of project A: nothing runs, a child starts for it.
    CHECK(mcpd::place_session(children, "A").kind == Placement::Kind::start);
    children.push_back(child("A"));
    // A second session of A: the same child.
    const Placement same = mcpd::place_session(children, "A");
    CHECK(same.kind == Placement::Kind::own);
    CHECK(same.index == 0);
    // A session from project B's directory waits on A's child (which answers its initialize)
    // until its roots are known: no process is started for a guess.
    const Placement other = mcpd::place_session(children, "B");
    CHECK(other.kind == Placement::Kind::lobby);
    CHECK(other.index == 0);
    // Its roots say B: B gets a child of its own; its roots say A: it stays.
    CHECK(mcpd::settle_session(children, "A", "B", false, false, 16) == Settlement::start);
    CHECK(mcpd::settle_session(children, "A", "A", false, false, 16) == Settlement::stay);
    children.push_back(child("B"));
    CHECK(mcpd::place_session(children, "B").kind == Placement::Kind::own);
    CHECK(mcpd::place_session(children, "B").index == 1);
    // A session of A whose roots become B's joins B's child.
    CHECK(mcpd::settle_session(children, "A", "B", false, false, 16) == Settlement::join);
    CHECK(mcpd::settle_session(children, "A", "B", true, true, 16) == Settlement::join);
}

TEST_CASE("no lobby on a child that is not running or speaks the stateless era", "[project]") {
    std::vector<ChildView> children{child("A", 1, /*running=*/false)};
    CHECK(mcpd::place_session(children, "B").kind == Placement::Kind::start);
    children[0].running = true;
    children[0].modern = true;  // its sessions have no handshake in which to report roots
    CHECK(mcpd::place_session(children, "B").kind == Placement::Kind::start);
    children.push_back(child("C"));
    const Placement lobby = mcpd::place_session(children, "B");
    CHECK(lobby.kind == Placement::Kind::lobby);
    CHECK(lobby.index == 1);
}

TEST_CASE("max_children bounds the live children; a project with one is always served",
          "[project]") {
    std::vector<ChildView> children{child("A"), child("B")};
    CHECK(mcpd::child_available(children, "A", 2));
    CHECK_FALSE(mcpd::child_available(children, "C", 2));
    CHECK(mcpd::child_available(children, "C", 3));
    CHECK(mcpd::child_available(children, "C", 0));  // 0: no limit
    CHECK(mcpd::settle_session(children, "A", "C", false, false, 2) == Settlement::refuse);
    // A child that stopped and holds nothing does not count.
    children[1].live = false;
    CHECK(mcpd::live_children(children) == 1);
    CHECK(mcpd::child_available(children, "C", 2));
    // A session alone on its child leaves it behind: the new child does not exceed the bound.
    std::vector<ChildView> one{child("A")};
    CHECK(mcpd::settle_session(one, "A", "B", true, false, 1) == Settlement::start);
    CHECK(mcpd::settle_session(one, "A", "B", false, false, 1) == Settlement::refuse);
}

TEST_CASE("a session alone on its child keeps it when only its roots change", "[project]") {
    const std::vector<ChildView> children{child("A"), child("C")};
    CHECK(mcpd::settle_session(children, "A", "B", true, true, 16) == Settlement::rekey);
    // Not alone: it moves; the others keep their project.
    CHECK(mcpd::settle_session(children, "A", "B", false, true, 16) == Settlement::start);
    // More than the roots would change (the child runs in its project): a new child.
    CHECK(mcpd::settle_session(children, "A", "B", true, false, 16) == Settlement::start);
    // The new project has a child already: it joins it rather than making a second.
    CHECK(mcpd::settle_session(children, "A", "C", true, true, 16) == Settlement::join);
}
