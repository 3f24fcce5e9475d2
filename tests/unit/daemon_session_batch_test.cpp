// 2025-03-26 batches: splitting a batch line, gathering the answers to its requests, and the
// two together with a real router (what the daemon does with them).
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "daemon/mux/session_batch.h"
#include "fake_router_environment.h"

using namespace mcpd;
using namespace mcpd::testing;

namespace {

// A line with the padding the scanner reads past its end (as a LineReader's lines have).
struct Padded {
    explicit Padded(std::string_view text) : storage(text) {
        storage.reserve(storage.size() + wire::kScanPadding);
    }
    wire::PaddedText view() const { return wire::PaddedText{storage}; }
    std::string storage;
};

struct Split {
    BatchSplit::Status status;
    std::vector<std::string> elements;
};

Split split(const std::string& line) {
    static BatchSplitter splitter(kTestMaxMessage);
    const Padded padded(line);
    const BatchSplit out = splitter.split(padded.view());
    return {out.status, {out.elements.begin(), out.elements.end()}};
}

std::string response(std::string_view raw_id, std::string_view result = "{}") {
    std::string out = R"({"jsonrpc":"2.0","id":)";
    out += raw_id;
    out += R"(,"result":)";
    out += result;
    out += '}';
    return out;
}

std::string request(std::string_view raw_id, std::string_view method = "tools/list") {
    std::string out = R"({"jsonrpc":"2.0","id":)";
    out += raw_id;
    out += R"(,"method":")";
    out += method;
    out += R"("})";
    return out;
}

bool offer(BatchCollector& c, std::string_view message) {
    return c.offer(std::span<const std::string_view>(&message, 1));
}

// One element routed without an answer while it was routed.
void route_unanswered(BatchCollector& c, const std::string& element) {
    c.element_started();
    c.element_routed(element);
}

// A line outside a batch routed, without an answer while it was routed.
void line(BatchCollector& c, const std::string& text) {
    c.line_started();
    c.line_routed(Padded(text).view());
}

// The raw ids of a batch reply's answers, in its order.
std::vector<std::string> reply_ids(const std::string& reply) {
    const json array = parse(reply);
    REQUIRE(array.is_array());
    std::vector<std::string> ids;
    for (const json& answer : array) ids.push_back(answer["id"].dump());
    return ids;
}

}  // namespace

TEST_CASE("batch split: each element's text is kept byte for byte", "[batch]") {
    const std::string a = R"({"jsonrpc":"2.0","id":12345678901234567890,"method":"ping"})";
    const std::string b = R"({ "id" : "a\u0062,]" , "method":"x","params":{"l":[1,{"k":"}"}]}})";
    const std::string c = R"([1, 2])";
    const Split s = split(" \t[ " + a + " ,\n" + b + "," + c + " ,\"s,\"\t, 42 ,null ] ");
    REQUIRE(s.status == BatchSplit::Status::ok);
    CHECK(s.elements == std::vector<std::string>{a, b, c, R"("s,")", "42", "null"});
    CHECK(looks_like_batch(" \t[1]"));
    CHECK_FALSE(looks_like_batch(R"({"a":[1]})"));
    CHECK_FALSE(looks_like_batch("  "));
}

TEST_CASE("batch split: empty, oversized, invalid and non-array lines", "[batch]") {
    CHECK(split("[]").status == BatchSplit::Status::empty);
    CHECK(split(" [ \n ] ").status == BatchSplit::Status::empty);
    std::string at_limit = "[0";
    for (std::size_t i = 1; i < kMaxBatchElements; ++i) at_limit += ",0";
    CHECK(split(at_limit + "]").status == BatchSplit::Status::ok);
    CHECK(split(at_limit + "]").elements.size() == kMaxBatchElements);
    CHECK(split(at_limit + ",0]").status == BatchSplit::Status::too_large);
    // Invalid JSON is answered by the router as a whole line (-32700), never split.
    for (const std::string line : {"[1,}", "[1,2", R"([{"a":1} {"b":2}])", "[1] x", "[\"\xff\"]",
                                   R"([{"a":"\q"}])", R"([{"n":01}])", R"({"id":1})", "42"}) {
        INFO(line);
        CHECK(split(line).status == BatchSplit::Status::not_array);
    }
}

TEST_CASE("batch collector: the answers leave as one array once the last is in", "[batch]") {
    BatchCollector c(kTestMaxMessage);
    c.open();
    route_unanswered(c, request("1"));
    route_unanswered(c, request(R"("1")"));
    route_unanswered(c, R"({"jsonrpc":"2.0","method":"notifications/progress","params":{}})");
    route_unanswered(c, response("9"));  // the client answering a server request
    c.close();
    CHECK(c.take_replies().empty());
    CHECK(c.awaiting() == 2);

    CHECK(offer(c, response(R"("1")", R"({"b":2})")));
    CHECK(c.take_replies().empty());
    // Not answers to the batch: written at once.
    CHECK_FALSE(offer(c, R"({"jsonrpc":"2.0","method":"notifications/message","params":{}})"));
    CHECK_FALSE(offer(c, request("1", "sampling/createMessage")));
    CHECK_FALSE(offer(c, response("2")));
    CHECK_FALSE(offer(c, response("1.0")));

    const std::string_view pieces[] = {R"({"jsonrpc":"2.0","id":)", "1", R"(,"result":{"a":1}})"};
    CHECK(c.offer(pieces));
    const std::vector<std::string> replies = c.take_replies();
    REQUIRE(replies.size() == 1);
    CHECK(
        replies[0] ==
        R"([{"jsonrpc":"2.0","id":"1","result":{"b":2}},{"jsonrpc":"2.0","id":1,"result":{"a":1}}])");
    CHECK(c.idle());
    CHECK_FALSE(offer(c, response("1")));  // a second answer is nobody's

    // Only notifications and responses: no reply at all, not even [].
    c.open();
    route_unanswered(c, R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    route_unanswered(c, response(R"("s1")"));
    c.close();
    CHECK(c.take_replies().empty());
    CHECK(c.idle());
}

TEST_CASE("batch collector: answers given while an element is routed are the batch's", "[batch]") {
    BatchCollector c(kTestMaxMessage);
    c.open();
    c.element_started();
    CHECK(offer(c, R"({"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"no"}})"));
    // A notification at that moment is not an answer.
    CHECK_FALSE(offer(c, R"({"jsonrpc":"2.0","method":"notifications/message"})"));
    c.element_routed("42");
    c.element_started();
    CHECK(offer(c, response(R"("p")")));
    c.element_routed(request(R"("p")", "ping"));  // answered: not awaited again
    c.close();
    CHECK(c.awaiting() == 0);
    const std::vector<std::string> replies = c.take_replies();
    REQUIRE(replies.size() == 1);
    CHECK(reply_ids(replies[0]) == std::vector<std::string>{"null", R"("p")"});
    CHECK(c.idle());
}

TEST_CASE("batch collector: a request that is never answered holds only its batch", "[batch]") {
    BatchCollector c(kTestMaxMessage);
    c.open();
    route_unanswered(c, request("1"));
    route_unanswered(c, request("2"));
    c.close();
    c.open();
    route_unanswered(c, request("3"));
    c.close();
    CHECK(offer(c, response("2")));
    CHECK(offer(c, response("3")));
    const std::vector<std::string> replies = c.take_replies();
    REQUIRE(replies.size() == 1);
    CHECK(reply_ids(replies[0]) == std::vector<std::string>{"3"});
    CHECK(c.awaiting() == 1);
    CHECK_FALSE(c.idle());
}

TEST_CASE("batch collector: a cancelled request no longer holds its batch", "[batch]") {
    const std::string cancel_1 =
        R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}})";
    SECTION("cancelled by a later line") {
        BatchCollector c(kTestMaxMessage);
        c.open();
        route_unanswered(c, request("1"));
        route_unanswered(c, request("2"));
        c.close();
        CHECK(offer(c, response("2")));
        // Another id, a string "1", or an invalid notification cancel nothing.
        line(c,
             R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"1"}})");
        line(c, R"({"jsonrpc":"1.0","method":"notifications/cancelled","params":{"requestId":1}})");
        CHECK(c.awaiting() == 1);
        line(c, cancel_1);
        const std::vector<std::string> replies = c.take_replies();
        REQUIRE(replies.size() == 1);
        CHECK(reply_ids(replies[0]) == std::vector<std::string>{"2"});
        CHECK(c.idle());
    }
    SECTION("cancelled in the same batch") {
        BatchCollector c(kTestMaxMessage);
        c.open();
        route_unanswered(c, request("1"));
        route_unanswered(c, cancel_1);
        c.close();
        CHECK(c.take_replies().empty());
        CHECK(c.idle());
    }
}

TEST_CASE("batch collector: an answer to a line outside the batch is never the batch's",
          "[batch]") {
    BatchCollector c(kTestMaxMessage);
    c.open();
    route_unanswered(c, request("1"));
    c.close();
    // The session reuses id 1 on a line of its own: the router refuses it at once, and that
    // refusal goes out as it is, not in the batch.
    c.line_started();
    CHECK_FALSE(offer(c, R"({"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"dup"}})"));
    c.line_routed(Padded(request("1")).view());
    CHECK(c.awaiting() == 1);
    CHECK(offer(c, response("1")));
    const std::vector<std::string> replies = c.take_replies();
    REQUIRE(replies.size() == 1);
    CHECK(parse(replies[0])[0].contains("result"));
}

TEST_CASE("batch collector: the reply stays within max_message_bytes", "[batch]") {
    BatchCollector c(300);
    c.open();
    route_unanswered(c, request("1"));
    route_unanswered(c, request(R"("big")"));
    c.close();
    CHECK(offer(c, response("1")));
    CHECK(offer(c, response(R"("big")", R"({"text":")" + std::string(400, 'x') + R"("})")));
    const std::vector<std::string> replies = c.take_replies();
    REQUIRE(replies.size() == 1);
    CHECK(replies[0].size() <= 300);
    const json array = parse(replies[0]);
    REQUIRE(array.size() == 2);
    CHECK(array[1]["id"] == "big");
    CHECK(array[1]["error"]["code"] == -32603);
}

namespace {

// A router whose session output passes SessionBatches, as in the daemon.
struct BatchEnvironment : FakeRouterEnvironment {
    void session_send(SessionId session, std::string_view line) override {
        if (!batches.hold(session, std::span<const std::string_view>(&line, 1), writer(session)))
            FakeRouterEnvironment::session_send(session, line);
    }
    SessionBatches::Write writer(SessionId session) {
        return [this, session](std::string_view line) {
            FakeRouterEnvironment::session_send(session, line);
        };
    }
    SessionBatches batches{kTestMaxMessage};
};

struct BatchHarness {
    BatchHarness() : router(router_config(), env, env), scanner(kTestMaxMessage) {
        router.on_child_ready(demo_initialize_result(), "2025-11-25");
    }
    void connect(SessionId id, const std::string& version) {
        router.attach(id);
        line(id, R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":")" +
                     version + R"(","capabilities":{}}})");
        line(id, R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
        env.clear_records();
    }
    // A line from the session, as the daemon's on_line hands it over.
    void line(SessionId id, const std::string& text) {
        const Padded padded(text);
        const bool batches = looks_like_batch(text) && router.protocol_of(id) == kBatchProtocol;
        env.batches.on_line(
            id, padded.view(), batches,
            [this, id](wire::PaddedText one) { router.on_session_line(id, one); }, env.writer(id));
    }
    void from_child(std::string text) {
        wire::Envelope e;
        REQUIRE(scanner.scan(text, e) == wire::ScanStatus::ok);
        router.on_child_message(text, e);
    }
    BatchEnvironment env;
    Router router;
    wire::EnvelopeScanner scanner;
};

}  // namespace

TEST_CASE("session batches: a 2025-03-26 batch through the router gets one array", "[batch]") {
    BatchHarness h;
    h.connect(1, "2025-03-26");
    CHECK(h.router.protocol_of(1) == "2025-03-26");
    h.line(1, "[" + request(R"("a\u0062")", "tools/list") + "," +
                  request("12345678901234567890", "ping") +
                  R"(,{"jsonrpc":"2.0","method":"notifications/roots/list_changed"},7,)" +
                  request("5", "initialize") + "]");
    // ping, the invalid element and the second initialize are answered by mcpd; tools/list waits.
    CHECK(h.env.sent_to(1).empty());
    REQUIRE(h.env.child_lines.size() == 1);
    const std::string child_request = h.env.child_lines.front();
    CHECK(parse(child_request)["method"] == "tools/list");

    // Traffic that answers nothing of the batch is not held.
    h.from_child(R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})");
    REQUIRE(h.env.sent_to(1).size() == 1);
    // The batch's id reused on a line of its own: refused at once, the batch still waits.
    h.line(1, request(R"("a\u0062")", "tools/list"));
    REQUIRE(h.env.sent_to(1).size() == 2);
    CHECK(error_code_of(h.env.sent_to(1)[1]) == -32600);

    h.from_child(response(raw_id_of(child_request), R"({"tools":[]})"));
    REQUIRE(h.env.sent_to(1).size() == 3);
    const std::string reply = h.env.sent_to(1)[2];
    INFO(reply);
    std::vector<std::string> ids = reply_ids(reply);
    std::sort(ids.begin(), ids.end());
    CHECK(ids == std::vector<std::string>{R"("ab")", "12345678901234567890", "5", "null"});
    // The ids come back byte for byte.
    CHECK(reply.find(R"("id":"a\u0062")") != std::string::npos);
    CHECK(reply.find(R"("id":12345678901234567890,)") != std::string::npos);
    for (const json& answer : parse(reply)) {
        if (answer["id"] == 5 || answer["id"].is_null()) CHECK(answer["error"]["code"] == -32600);
    }
    CHECK(h.env.batches.waiting_sessions() == 0);
}

TEST_CASE("session batches: refused whole where the session has no batches", "[batch]") {
    BatchHarness h;
    h.connect(1, "2025-06-18");
    h.router.attach(2);  // not initialized
    h.connect(3, "2025-03-26");
    const std::string batch = "[" + request("1", "ping") + "]";
    for (SessionId id : {1, 2}) {
        INFO("session " << id);
        h.line(id, id == 2 ? "[" + request("1", "initialize") + "]" : batch);
        REQUIRE(h.env.sent_to(id).size() == 1);
        const json reply = parse(h.env.sent_to(id)[0]);
        CHECK(reply.is_object());
        CHECK(reply["id"].is_null());
        CHECK(reply["error"]["code"] == -32600);
    }
    h.line(3, "[]");
    std::string large = "[" + request("1", "ping");
    for (std::size_t i = 1; i < kMaxBatchElements + 1; ++i) large += "," + request("1", "ping");
    h.line(3, large + "]");
    h.line(3, R"([{"jsonrpc":"2.0","method":"notifications/initialized"}])");  // no reply
    h.line(3, "[1,");  // not JSON: one parse error, as for any line
    const std::vector<std::string>& sent = h.env.sent_to(3);
    REQUIRE(sent.size() == 3);
    CHECK(error_code_of(sent[0]) == -32600);
    CHECK(error_code_of(sent[1]) == -32600);
    CHECK(error_code_of(sent[2]) == -32700);
    CHECK(h.env.child_lines.empty());
}

TEST_CASE("session batches: a session that leaves takes its batches with it", "[batch]") {
    BatchHarness h;
    h.connect(1, "2025-03-26");
    h.line(1, "[" + request("1") + "]");
    CHECK(h.env.batches.waiting_sessions() == 1);
    h.env.batches.forget(1);
    CHECK(h.env.batches.waiting_sessions() == 0);
    h.from_child(response(raw_id_of(h.env.child_lines.front())));
    // The answer is written as it is (the daemon drops it: the session is gone).
    REQUIRE(h.env.sent_to(1).size() == 1);
    CHECK(parse(h.env.sent_to(1)[0]).is_object());
}
