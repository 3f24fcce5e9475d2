// InFlight: a Router's requests at its child, their progress routes, tombstones and names.
#include <catch2/catch.hpp>

#include "daemon/mux/in_flight.h"

using mcpd::InFlight;
using mcpd::routing::Pending;

namespace {

Pending request_of(mcpd::SessionId session, std::string raw_id) {
    Pending p;
    p.session = session;
    p.original_id = std::move(raw_id);
    return p;
}

}  // namespace

TEST_CASE("in flight: a request is found by its child id until it is taken, once") {
    InFlight table;
    table.add(7, request_of(3, "\"a\""));
    table.add(8, request_of(4, "1"));
    REQUIRE(table.size() == 2);
    REQUIRE(table.find(7) != nullptr);
    CHECK(table.find(7)->original_id == "\"a\"");
    CHECK(table.find(9) == nullptr);

    const auto taken = table.take(7);
    REQUIRE(taken.has_value());
    CHECK(taken->session == 3);
    CHECK_FALSE(table.contains(7));
    CHECK_FALSE(table.take(7).has_value());
    CHECK(table.size() == 1);
}

TEST_CASE("in flight: a record is built where it is kept and taken out with its node") {
    InFlight table;
    Pending& record = table.emplace(5);
    record.session = 2;
    record.original_id = "\"x\"";
    REQUIRE(table.find(5) == &record);  // filled in place, not copied in
    auto node = table.extract(5);
    REQUIRE_FALSE(node.empty());
    CHECK(&node.mapped() == &record);  // the same record, never moved
    CHECK(node.mapped().original_id == "\"x\"");
    CHECK_FALSE(table.contains(5));
    CHECK(table.extract(5).empty());
}

TEST_CASE("in flight: progress tokens are mcpd's own, unique, and routed to their session") {
    InFlight table;
    const std::string first = table.route_progress(3, "\"tok\"", 7);
    const std::string second = table.route_progress(4, "\"tok\"", 8);
    CHECK(first != second);
    CHECK(first.starts_with("\"mcpd-p"));
    REQUIRE(table.progress_route(first) != nullptr);
    CHECK(table.progress_route(first)->session == 3);
    CHECK(table.progress_route(first)->original_token == "\"tok\"");
    CHECK(table.progress_route(second)->child_id == 8);

    table.drop_progress_of(3);
    CHECK(table.progress_route(first) == nullptr);
    CHECK(table.progress_route(second) != nullptr);
    table.drop_progress(second);
    CHECK(table.progress_route(second) == nullptr);
}

TEST_CASE("in flight: tombstones are bounded, the oldest forgotten first") {
    InFlight table;
    for (std::uint64_t id = 1; id <= InFlight::kMaxTombstones + 10; ++id) table.tombstone(id);
    CHECK_FALSE(table.tombstoned(1));
    CHECK_FALSE(table.tombstoned(10));
    CHECK(table.tombstoned(11));
    CHECK(table.tombstoned(InFlight::kMaxTombstones + 10));
}

TEST_CASE("in flight: a request's logged names are taken once, and a child's end forgets everything") {
    InFlight table;
    table.add(5, request_of(1, "2"));
    CHECK_FALSE(table.take_names(5).has_value());  // logged before the log was on: none
    table.log_names(5, "tools/call", "echo");
    const auto names = table.take_names(5);
    REQUIRE(names.has_value());
    CHECK(names->first == "tools/call");
    CHECK(names->second == "echo");
    CHECK_FALSE(table.take_names(5).has_value());

    const std::string token = table.route_progress(1, "3", 5);
    table.tombstone(4);
    table.log_names(5, "ping", "");
    table.child_gone();
    CHECK(table.empty());
    CHECK(table.progress_route(token) == nullptr);
    CHECK_FALSE(table.tombstoned(4));
    CHECK_FALSE(table.take_names(5).has_value());
    // Tokens stay unique across children: a late progress of the old child cannot reach a
    // request of the new one.
    CHECK(table.route_progress(1, "3", 6) != token);
}
