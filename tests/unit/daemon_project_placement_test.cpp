// sharing = "project": which child a session goes to, as pure rules over the server's
// children (project_placement.h): two projects two children, one project one child, the
// lobby that answers an initialize without starting a process for a guess, max_children.
#include <catch2/catch.hpp>
#include <vector>

#include "daemon/mux/project_placement.h"

using mcpd::ChildQuota;
using mcpd::ChildRefusal;
using mcpd::ChildView;
using mcpd::AttachChoice;
using mcpd::Settlement;

namespace {

// The limits as mcpd's own user (or root) is held to them.
ChildQuota owner_quota(unsigned max_children) {
    return ChildQuota{max_children, 0, 0, true};
}

ChildView child(const std::string& key, std::size_t sessions = 1, bool running = true) {
    return ChildView{key, /*live=*/true, running, /*modern=*/false, sessions};
}

}  // namespace

TEST_CASE("sessions of one project share a child, a new project gets a new one", "[project]") {
    std::vector<ChildView> children;
    // The first session of project A: nothing runs, a child starts for it.
    CHECK(mcpd::place_session(children, "A", 0).kind == AttachChoice::Kind::start);
    children.push_back(child("A"));
    // A second session of A: the same child.
    const AttachChoice same = mcpd::place_session(children, "A", 0);
    CHECK(same.kind == AttachChoice::Kind::own);
    CHECK(same.index == 0);
    // A session from project B's directory waits on A's child (which answers its initialize)
    // until its roots are known: no process is started for a guess.
    const AttachChoice other = mcpd::place_session(children, "B", 0);
    CHECK(other.kind == AttachChoice::Kind::lobby);
    CHECK(other.index == 0);
    // Its roots say B: B gets a child of its own; its roots say A: it stays.
    CHECK(mcpd::settle_session(children, "A", "B", false, false, owner_quota(16)) ==
          Settlement::start);
    CHECK(mcpd::settle_session(children, "A", "A", false, false, owner_quota(16)) ==
          Settlement::stay);
    children.push_back(child("B"));
    CHECK(mcpd::place_session(children, "B", 0).kind == AttachChoice::Kind::own);
    CHECK(mcpd::place_session(children, "B", 0).index == 1);
    // A session of A whose roots become B's joins B's child.
    CHECK(mcpd::settle_session(children, "A", "B", false, false, owner_quota(16)) ==
          Settlement::join);
    CHECK(mcpd::settle_session(children, "A", "B", true, true, owner_quota(16)) ==
          Settlement::join);
}

TEST_CASE("no lobby on a child that is not running or speaks the stateless era", "[project]") {
    std::vector<ChildView> children{child("A", 1, /*running=*/false)};
    CHECK(mcpd::place_session(children, "B", 0).kind == AttachChoice::Kind::start);
    children[0].running = true;
    children[0].modern = true;  // its sessions have no handshake in which to report roots
    CHECK(mcpd::place_session(children, "B", 0).kind == AttachChoice::Kind::start);
    children.push_back(child("C"));
    const AttachChoice lobby = mcpd::place_session(children, "B", 0);
    CHECK(lobby.kind == AttachChoice::Kind::lobby);
    CHECK(lobby.index == 1);
}

TEST_CASE("max_children bounds the live children, a project with one is always served",
          "[project]") {
    std::vector<ChildView> children{child("A"), child("B")};
    CHECK(mcpd::child_available(children, "A", owner_quota(2)));
    CHECK_FALSE(mcpd::child_available(children, "C", owner_quota(2)));
    CHECK(mcpd::child_available(children, "C", owner_quota(3)));
    CHECK(mcpd::child_available(children, "C", owner_quota(0)));  // 0: no limit
    CHECK(mcpd::settle_session(children, "A", "C", false, false, owner_quota(2)) ==
          Settlement::refuse);
    // A child that stopped and holds nothing does not count.
    children[1].live = false;
    CHECK(mcpd::live_children(children) == 1);
    CHECK(mcpd::child_available(children, "C", owner_quota(2)));
    // A child a session leaves alone still runs until it has stopped: a new one would exceed
    // the bound for that while, so the move is refused (or the bound raised).
    std::vector<ChildView> one{child("A")};
    CHECK(mcpd::settle_session(one, "A", "B", true, false, owner_quota(1)) == Settlement::refuse);
    CHECK(mcpd::settle_session(one, "A", "B", false, false, owner_quota(1)) == Settlement::refuse);
    CHECK(mcpd::settle_session(one, "A", "B", true, false, owner_quota(2)) == Settlement::start);
}

TEST_CASE("a session alone on its child keeps it when only its roots change", "[project]") {
    const std::vector<ChildView> children{child("A"), child("C")};
    CHECK(mcpd::settle_session(children, "A", "B", true, true, owner_quota(16)) ==
          Settlement::rekey);
    // Not alone: it moves; the others keep their project.
    CHECK(mcpd::settle_session(children, "A", "B", false, true, owner_quota(16)) ==
          Settlement::start);
    // More than the roots would change (the child runs in its project): a new child.
    CHECK(mcpd::settle_session(children, "A", "B", true, false, owner_quota(16)) ==
          Settlement::start);
    // The new project has a child already: it joins it rather than making a second.
    CHECK(mcpd::settle_session(children, "A", "C", true, true, owner_quota(16)) ==
          Settlement::join);
}

TEST_CASE(
    "a child on its way out counts until reaped, so that moving sessions never exceed "
    "max_children",
    "[project]") {
    // A session switched projects twice with max_children = 2: A stops, B runs.
    std::vector<ChildView> children{ChildView{"", true, false, false, 0}, child("B")};
    CHECK(mcpd::live_children(children) == 2);
    // Its next switch, alone on B, needs a third process while A still stops: refused.
    CHECK(mcpd::settle_session(children, "B", "C", true, false, owner_quota(2)) ==
          Settlement::refuse);
    // Nothing joins a stopping child, whatever project a session names.
    CHECK(mcpd::place_session(children, "", 0).kind != AttachChoice::Kind::own);
    // Once A is reaped, the switch goes ahead.
    children.erase(children.begin());
    CHECK(mcpd::settle_session(children, "B", "C", true, false, owner_quota(2)) ==
          Settlement::start);
}

TEST_CASE("a user of allow_users never takes the owner's last slot, nor more than its share",
          "[project]") {
    const auto user = [](uid_t uid) { return ChildQuota{4, 2, uid, false}; };
    std::vector<ChildView> children;
    // Bob (uid 1001) starts two children: his share.
    CHECK(mcpd::child_refusal(children, user(1001)) == ChildRefusal::none);
    children.push_back(child("bob-1"));
    children.back().user = 1001;
    children.push_back(child("bob-2"));
    children.back().user = 1001;
    CHECK(mcpd::child_refusal(children, user(1001)) == ChildRefusal::user_share);
    CHECK_FALSE(mcpd::child_available(children, "bob-3", user(1001)));
    // His existing projects are still served.
    CHECK(mcpd::child_available(children, "bob-1", user(1001)));
    // Carol takes the third; the fourth is kept for mcpd's user.
    CHECK(mcpd::child_refusal(children, user(1002)) == ChildRefusal::none);
    children.push_back(child("carol-1"));
    children.back().user = 1002;
    CHECK(mcpd::child_refusal(children, user(1002)) == ChildRefusal::owner_reserve);
    CHECK(mcpd::settle_session(children, "carol-1", "carol-2", false, false, user(1002)) ==
          Settlement::refuse);
    // The owner gets the last slot, and nothing past it.
    CHECK(mcpd::child_refusal(children, owner_quota(4)) == ChildRefusal::none);
    children.push_back(child("owner-1"));
    CHECK(mcpd::child_refusal(children, owner_quota(4)) == ChildRefusal::server_full);
    // The sentences say which limit, and what to do.
    const std::string reserve =
        mcpd::child_refusal_sentence("fs", user(1002), ChildRefusal::owner_reserve, "/p");
    CHECK(reserve.find("keeps the last for mcpd's own user") != std::string::npos);
    const std::string share =
        mcpd::child_refusal_sentence("fs", user(1001), ChildRefusal::user_share, "/p");
    CHECK(share.find("max_children_per_user") != std::string::npos);
    CHECK(share.find("uid 1001") != std::string::npos);
}

TEST_CASE("a session waits only in a lobby of its own user's", "[project]") {
    std::vector<ChildView> children{child("bob-A")};
    children[0].user = 1001;
    // Carol's session from project C: not on Bob's child, even for its initialize.
    CHECK(mcpd::place_session(children, "carol-C", 1002).kind == AttachChoice::Kind::start);
    // Bob's session from project B waits on his own child.
    CHECK(mcpd::place_session(children, "bob-B", 1001).kind == AttachChoice::Kind::lobby);
}
