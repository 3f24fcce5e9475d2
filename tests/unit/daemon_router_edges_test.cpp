// Router: edges of the protocol that real servers and clients reach — strings with lone
// UTF-16 surrogates, a client's unusable answer to a server's request, URL-mode elicitation
// completions (routed by elicitationId) and server requests tied to a task that has ended or
// has no owner any more.
//
// Lines holding a lone surrogate are compared as bytes: nlohmann refuses to parse them.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "fake_router_environment.h"
#include "router_clients.h"
#include "router_lines.h"

using namespace mcpd;
using namespace mcpd::testing;

namespace {

using Pair = ClientPair;
const std::string& kSampling = kSamplingParams;

std::string url_elicitation(const std::string& raw_id, const std::string& elicitation_id) {
    return child_request(raw_id, "elicitation/create",
                         R"({"mode":"url","elicitationId":")" + elicitation_id +
                             R"(","url":"https://example.com/auth","message":"sign in"})");
}

std::string elicitation_complete(const std::string& elicitation_id) {
    return R"({"jsonrpc":"2.0","method":"notifications/elicitation/complete","params":{"elicitationId":")" +
           elicitation_id + R"("}})";
}

std::string create_task_result(const std::string& task_id_json) {
    return R"({"task":{"taskId":)" + task_id_json +
           R"(,"status":"working","createdAt":"2025-11-25T10:00:00Z","lastUpdatedAt":"2025-11-25T10:00:00Z","ttl":60000}})";
}

std::string task_status(const std::string& task_id, const std::string& status) {
    return R"({"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":")" +
           task_id + R"(","status":")" + status +
           R"(","createdAt":"2025-11-25T10:00:00Z","lastUpdatedAt":"2025-11-25T10:01:00Z","ttl":60000}})";
}

// Session 1 creates task `task_id_json` (it is then idle at the child).
void create_task(Pair& h, const std::string& task_id_json) {
    const std::string created = h.forward(
        1,
        R"({"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"long","task":{"ttl":60000}}})");
    h.answer(created, create_task_result(task_id_json));
    REQUIRE(h.env.sent_to(1).size() == 1);
    h.env.clear_records();
}

// The child was told no, the spec's way for its method, with its own id.
void check_sampling_or_elicitation_declined(RouterHarness& h, const std::string& raw_id,
                                            const std::string& method) {
    const std::string reply = h.only_child_line();
    INFO(reply);
    CHECK(raw_id_of(reply) == raw_id);
    const json j = parse(reply);
    if (method == "elicitation/create") {
        CHECK(j["result"] == json{{"action", "cancel"}});
    } else {
        CHECK(j["error"]["code"] == -1);
    }
    CHECK_FALSE(h.env.notes.empty());
}

// The child was told its request got no usable answer.
void check_unusable(RouterHarness& h, const std::string& raw_id) {
    const std::string reply = h.only_child_line();
    INFO(reply);
    CHECK(raw_id_of(reply) == raw_id);
    CHECK(error_code_of(reply) == -32603);
    CHECK(parse(reply)["error"]["message"].get<std::string>().find("unusable") !=
          std::string::npos);
}

}  // namespace

// ----- 1. lone surrogates pass both ways, unchanged -----

TEST_CASE("router edges: a result with a lone surrogate reaches the session byte for byte",
          "[router]") {
    for (const std::string& text : {std::string(R"(cut \ud83d)"), std::string(R"(\udc00 tail)"),
                                    std::string(R"(\ud83d\u0041\ude00)")}) {
        DYNAMIC_SECTION("text " << text) {
            Pair h;
            const std::string at_child = h.busy(1);
            const std::string result =
                R"({"content":[{"type":"text","text":")" + text + R"("}],"isError":false})";
            h.answer(at_child, result);
            CHECK(h.only_line_to(1) == R"({"jsonrpc":"2.0","id":"busy","result":)" + result + "}");
            CHECK(h.env.sent_to(2).empty());
        }
    }
}

TEST_CASE("router edges: a session's request with a lone surrogate reaches the child unchanged",
          "[router]") {
    Pair h;
    const std::string tail =
        R"(,"method":"tools/call","params":{"name":"echo","arguments":{"text":"\ud83d","k\udc00":"x\udbff"}}})";
    const std::string at_child = h.forward(1, R"({"jsonrpc":"2.0","id":7)" + tail);
    CHECK(at_child == R"({"jsonrpc":"2.0","id":)" + raw_id_of(at_child) + tail);
    CHECK(h.env.sent_to(1).empty());
}

TEST_CASE("router edges: a child request with a lone surrogate reaches the session unchanged",
          "[router]") {
    Pair h;
    h.busy(2);
    const std::string params =
        R"({"messages":[{"role":"user","content":{"type":"text","text":"half \ud83d"}}],"maxTokens":10})";
    h.from_child(child_request(R"("s1")", "sampling/createMessage", params));
    const std::string at_session = h.only_line_to(2);
    CHECK(at_session == child_request(raw_id_of(at_session), "sampling/createMessage", params));
    CHECK(h.env.child_lines.empty());
}

TEST_CASE("router edges: initialize with a lone surrogate keeps the session's capabilities",
          "[router]") {
    // Read with nlohmann, which refuses lone surrogates: the capabilities must not be lost.
    RouterHarness h;
    h.child_ready();
    h.router.attach(1);
    h.send(
        1,
        R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"sampling":{}},"clientInfo":{"name":"agent \ud83d","version":"1"}}})");
    const std::string reply = h.only_line_to(1);
    CHECK(parse(reply)["result"]["protocolVersion"] == "2025-06-18");
    h.send(1, R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    h.forward(1, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}})");
    h.from_child(child_request("9", "sampling/createMessage", kSampling));
    CHECK(h.env.child_lines.empty());
    CHECK(h.env.sent_to(1).size() == 1);
}

TEST_CASE("router edges: a URL elicitation with a lone surrogate is still seen as URL mode",
          "[router]") {
    // The mode is read with nlohmann; a failed parse must not make it a form.
    Pair h(json{{"elicitation", {{"form", json::object()}}}});
    h.busy(1);
    h.from_child(child_request(
        "5", "elicitation/create",
        R"({"mode":"url","elicitationId":"e\ud83d","url":"https://example.com/x","message":"go \udc00"})"));
    CHECK(h.env.sent_to(1).empty());
    const std::string reply = h.only_child_line();
    CHECK(raw_id_of(reply) == "5");
    CHECK(error_code_of(reply) == -32602);
}

TEST_CASE("router edges: a task id with a lone surrogate still links a request to its owner",
          "[router]") {
    Pair h;
    create_task(h, R"("t\ud83d")");
    h.busy(1);
    h.busy(2);
    h.env.clear_records();
    const std::string request =
        child_request(R"("s")", "sampling/createMessage",
                      R"({"messages":[],"maxTokens":1,)" + related(R"("t\ud83d")") + "}");
    h.from_child(request);
    CHECK(h.env.child_lines.empty());
    CHECK(h.env.sent_to(2).empty());
    const std::string at_session = h.only_line_to(1);
    CHECK(at_session ==
          child_request(raw_id_of(at_session), "sampling/createMessage",
                        R"({"messages":[],"maxTokens":1,)" + related(R"("t\ud83d")") + "}"));
    // Its status notification goes to the owner too.
    const std::string status =
        R"({"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"t\ud83d","status":"working"}})";
    h.from_child(status);
    CHECK(h.only_line_to(1) == status);
}

// ----- 2. a session's unusable answer to a server request -----

TEST_CASE("router edges: an unusable answer to a server request answers the child", "[router]") {
    const std::vector<std::pair<std::string, std::string>> kinds = {
        {"not JSON", R"({"jsonrpc":"2.0","id":@ID,"result":{"role":"assistant")"},
        {"not UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":@ID,\"result\":{\"text\":\"\xff\"}}"},
        {"jsonrpc 1.0", R"({"jsonrpc":"1.0","id":@ID,"result":{}})"},
        {"both result and error",
         R"({"jsonrpc":"2.0","id":@ID,"result":{},"error":{"code":1,"message":"m"}})"},
        {"a result that is not an object", R"({"jsonrpc":"2.0","id":@ID,"result":[1]})"},
        {"an id and nothing else", R"({"jsonrpc":"2.0","id":@ID})"},
        {"an error that is a string", R"({"jsonrpc":"2.0","id":@ID,"error":"boom"})"},
        {"an error code that is a string",
         R"({"jsonrpc":"2.0","id":@ID,"error":{"code":"-1","message":"m"}})"},
        {"an error code that is a fraction",
         R"({"jsonrpc":"2.0","id":@ID,"error":{"code":-1.5,"message":"m"}})"},
        {"an error without a message", R"({"jsonrpc":"2.0","id":@ID,"error":{"code":-1}})"},
        {"an error message that is not a string",
         R"({"jsonrpc":"2.0","id":@ID,"error":{"code":-1,"message":{}}})"},
    };
    for (const auto& [kind, pattern] : kinds) {
        for (const std::string& method :
             {std::string("sampling/createMessage"), std::string("elicitation/create"),
              std::string("roots/list")}) {
            DYNAMIC_SECTION(kind << " to " << method) {
                Pair h;
                h.busy(1);
                const std::string params =
                    method == "sampling/createMessage" ? kSampling
                    : method == "elicitation/create"
                        ? std::string(R"({"message":"m","requestedSchema":{"type":"object"}})")
                        : std::string("{}");
                const std::string session_id =
                    h.ask(1, child_request(R"("srv\"1")", method, params));
                std::string answer = pattern;
                answer.replace(answer.find("@ID"), 3, session_id);
                h.env.clear_records();
                h.send(1, answer);
                check_unusable(h, R"("srv\"1")");
                // Answered once: a good answer now goes nowhere.
                h.send(1, R"({"jsonrpc":"2.0","id":)" + session_id + R"(,"result":{}})");
                CHECK(h.env.child_lines.empty());
            }
        }
    }
}

TEST_CASE("router edges: another session's unusable answer does not settle a server request",
          "[router]") {
    Pair h;
    h.busy(1);
    const std::string session_id = h.ask(1, child_request("4", "roots/list", "{}"));
    h.send(2, R"({"jsonrpc":"2.0","id":)" + session_id + R"(,"error":"boom"})");
    h.send(2, R"({"jsonrpc":"2.0","id":)" + session_id + R"(,"result":{)");
    CHECK(h.env.child_lines.empty());
    h.send(1, R"({"jsonrpc":"2.0","id":)" + session_id + R"(,"result":{"roots":[]}})");
    CHECK(h.only_child_line() == R"({"jsonrpc":"2.0","id":4,"result":{"roots":[]}})");
}

TEST_CASE("router edges: a well-formed error answer is still relayed as it is", "[router]") {
    Pair h;
    h.busy(1);
    const std::string session_id =
        h.ask(1, child_request("4", "sampling/createMessage", kSampling));
    h.send(
        1,
        R"({"jsonrpc":"2.0","id":)" + session_id +
            R"(,"error":{"code":-1,"message":"User rejected sampling request","data":{"x":1}}})");
    CHECK(
        h.only_child_line() ==
        R"({"jsonrpc":"2.0","id":4,"error":{"code":-1,"message":"User rejected sampling request","data":{"x":1}}})");
}

TEST_CASE("router edges: an oversized answer to a server request answers the child", "[router]") {
    // The session's transport discards the line and reports the id its edges showed.
    Pair h;
    h.busy(1);
    const std::string session_id =
        h.ask(1, child_request("12", "sampling/createMessage", kSampling));
    CHECK_FALSE(h.router.on_session_reply_lost(2, session_id, "message too large"));
    CHECK(h.env.child_lines.empty());
    CHECK(h.router.on_session_reply_lost(1, session_id, "message too large"));
    check_unusable(h, "12");
    CHECK_FALSE(h.router.on_session_reply_lost(1, session_id, "message too large"));
    CHECK(h.env.child_lines.empty());
}

// ----- 3. URL elicitation completions go to their session only -----

TEST_CASE("router edges: an elicitation completion goes to the session that was asked",
          "[router]") {
    Pair h;
    h.busy(2);
    const std::string session_id = h.ask(2, url_elicitation(R"("u1")", "el-1"));
    h.send(2, R"({"jsonrpc":"2.0","id":)" + session_id + R"(,"result":{"action":"accept"}})");
    CHECK(h.only_child_line() == R"({"jsonrpc":"2.0","id":"u1","result":{"action":"accept"}})");
    h.from_child(elicitation_complete("el-1"));
    CHECK(h.only_line_to(2) == elicitation_complete("el-1"));
    CHECK(h.env.sent_to(1).empty());
    // Completed once: a repeat has nobody waiting for it.
    h.from_child(elicitation_complete("el-1"));
    CHECK(h.env.sent_to(1).empty());
    CHECK(h.env.sent_to(2).empty());
}

TEST_CASE("router edges: an elicitation completion nobody waits for is dropped", "[router]") {
    Pair h;
    h.from_child(elicitation_complete("never-sent"));
    CHECK(h.env.sent_to(1).empty());
    CHECK(h.env.sent_to(2).empty());
    CHECK_FALSE(h.env.notes.empty());
    // A form elicitation has no completion to wait for.
    h.busy(1);
    h.ask(1, child_request(
                 "3", "elicitation/create",
                 R"({"message":"m","elicitationId":"f-1","requestedSchema":{"type":"object"}})"));
    h.from_child(elicitation_complete("f-1"));
    CHECK(h.env.sent_to(1).empty());
    CHECK(h.env.sent_to(2).empty());
}

TEST_CASE("router edges: a departed session's elicitation completions reach nobody", "[router]") {
    Pair h;
    h.busy(1);
    h.ask(1, url_elicitation("8", "el-8"));
    h.router.detach(1);
    h.env.clear_records();
    h.from_child(elicitation_complete("el-8"));
    CHECK(h.env.sent_to(1).empty());
    CHECK(h.env.sent_to(2).empty());
}

TEST_CASE("router edges: URL elicitations required by an error are completed to its session",
          "[router]") {
    // -32042 answers a session's request with the elicitations it needs first.
    Pair h;
    const std::string at_child = h.busy(2);
    const std::string error =
        R"({"jsonrpc":"2.0","id":)" + raw_id_of(at_child) +
        R"(,"error":{"code":-32042,"message":"authorization required","data":{"elicitations":[{"mode":"url","elicitationId":"el-a","url":"https://example.com/a","message":"a"},{"mode":"url","elicitationId":"el-b","url":"https://example.com/b","message":"b"}]}}})";
    h.from_child(error);
    CHECK(raw_id_of(h.only_line_to(2)) == R"("busy")");
    for (const char* id : {"el-b", "el-a"}) {
        h.from_child(elicitation_complete(id));
        CHECK(h.only_line_to(2) == elicitation_complete(id));
        CHECK(h.env.sent_to(1).empty());
    }
}

// ----- 4. server requests tied to a task -----

TEST_CASE("router edges: a request tied to an ended task is declined", "[router]") {
    for (const std::string& method :
         {std::string("sampling/createMessage"), std::string("elicitation/create")}) {
        for (const std::string& how :
             {std::string("completed"), std::string("failed"), std::string("cancelled"),
              std::string("tasks/get"), std::string("tasks/cancel"), std::string("tasks/result")}) {
            DYNAMIC_SECTION(method << " after " << how) {
                Pair h;
                create_task(h, R"("t-1")");
                if (how == "tasks/get" || how == "tasks/cancel") {
                    const std::string status = how == "tasks/get" ? "completed" : "cancelled";
                    h.answer(h.forward(1, task_request("5", how, R"("t-1")")),
                             R"({"taskId":"t-1","status":")" + status + R"("})");
                } else if (how == "tasks/result") {
                    h.answer(
                        h.forward(1, task_request("5", how, R"("t-1")")),
                        R"({"content":[],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t-1"}}})");
                } else {
                    h.from_child(task_status("t-1", how));
                }
                h.busy(1);  // the owner is the only busy session: the guess must not be used
                h.env.clear_records();
                const std::string params =
                    method == "sampling/createMessage"
                        ? R"({"messages":[],"maxTokens":1,)" + related(R"("t-1")") + "}"
                        : R"({"message":"m","requestedSchema":{"type":"object"},)" +
                              related(R"("t-1")") + "}";
                h.from_child(child_request(R"("late")", method, params));
                check_sampling_or_elicitation_declined(h, R"("late")", method);
                CHECK(h.env.sent_to(1).empty());
                CHECK(h.env.sent_to(2).empty());
            }
        }
    }
}

TEST_CASE("router edges: a task waiting for input still takes requests", "[router]") {
    Pair h;
    create_task(h, R"("t-1")");
    h.from_child(task_status("t-1", "input_required"));
    h.answer(h.forward(1, task_request("5", "tasks/get", R"("t-1")")),
             R"({"taskId":"t-1","status":"working"})");
    h.env.clear_records();
    h.from_child(child_request(
        "6", "elicitation/create",
        R"({"message":"m","requestedSchema":{"type":"object"},)" + related(R"("t-1")") + "}"));
    CHECK(h.env.sent_to(1).size() == 1);
    CHECK(h.env.child_lines.empty());
}

TEST_CASE("router edges: an ended task still belongs to its owner", "[router]") {
    // Its result stays fetchable: only requests from the server are refused.
    Pair h;
    create_task(h, R"("t-1")");
    h.from_child(task_status("t-1", "completed"));
    h.env.clear_records();
    h.forward(1, task_request("5", "tasks/result", R"("t-1")"));
    h.send(2, task_request("5", "tasks/result", R"("t-1")"));
    CHECK(error_code_of(h.only_line_to(2)) == -32602);
}

TEST_CASE("router edges: a request tied to an unknown task is never guessed", "[router]") {
    Pair h;
    h.busy(1);  // without the link, the only busy session would get it
    h.env.clear_records();
    h.from_child(child_request("7", "sampling/createMessage",
                               R"({"messages":[],"maxTokens":1,)" + related(R"("t-none")") + "}"));
    check_sampling_or_elicitation_declined(h, "7", "sampling/createMessage");
    CHECK(h.env.sent_to(1).empty());
    // Nor one whose taskId is not a string.
    h.env.clear_records();
    h.from_child(child_request(
        "8", "elicitation/create",
        R"({"message":"m","requestedSchema":{"type":"object"},)" + related("17") + "}"));
    check_sampling_or_elicitation_declined(h, "8", "elicitation/create");
    CHECK(h.env.sent_to(1).empty());
}

TEST_CASE("router edges: a request tied to a departed session's task is declined", "[router]") {
    Pair h;
    create_task(h, R"("t-1")");
    h.router.detach(1);
    h.busy(2);
    h.env.clear_records();
    h.from_child(child_request(
        R"("x")", "elicitation/create",
        R"({"message":"m","requestedSchema":{"type":"object"},)" + related(R"("t-1")") + "}"));
    check_sampling_or_elicitation_declined(h, R"("x")", "elicitation/create");
    CHECK(h.env.sent_to(2).empty());
}

TEST_CASE("router edges: a task created again under an ended id takes requests again", "[router]") {
    Pair h;
    create_task(h, R"("t-1")");
    h.from_child(task_status("t-1", "failed"));
    h.env.clear_records();
    create_task(h, R"("t-1")");
    h.from_child(child_request("9", "sampling/createMessage",
                               R"({"messages":[],"maxTokens":1,)" + related(R"("t-1")") + "}"));
    CHECK(h.env.sent_to(1).size() == 1);
    CHECK(h.env.child_lines.empty());
}
