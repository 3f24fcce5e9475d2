// Text a server or a client chose (stderr lines, clientInfo, a failed server's error) reaches
// the terminal with its control characters escaped, in every text rendering and in errors;
// --json output leaves none raw either.
#include <algorithm>
#include <catch2/catch.hpp>
#include <sstream>
#include <string>

#include "ctl/command.h"
#include "ctl/output.h"
#include "render_command.h"

using nlohmann::json;

namespace {

// Bytes a terminal acts on: C0 controls but the line ends, DEL, and C1 controls in UTF-8.
bool has_raw_controls(const std::string& text) {
    for (std::size_t i = 0; i < text.size(); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if ((c < 0x20 && c != '\n') || c == 0x7f) return true;
        if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) < 0xa0)
            return true;
    }
    return false;
}

const std::string kHostile = "\x1b[31mred\x1b]0;pwned\x07\r\u009b2J\x7f";
const std::string kEscaped = "\\u001b[31mred\\u001b]0;pwned\\u0007\\u000d\\u009b2J\\u007f";

}  // namespace

TEST_CASE("logs renders a server's escape sequences as visible text", "[ctl][render]") {
    const std::string text =
        render("logs", {{"lines", {"plain", kHostile, "two\nlines", "caf\u00e9 \xff"}}});
    CHECK_FALSE(has_raw_controls(text));
    CHECK(text == "plain\n" + kEscaped + "\ntwo\\u000alines\ncaf\u00e9 \\xff\n");
}

TEST_CASE("sessions renders a client's name and version with controls escaped", "[ctl][render]") {
    const json result = {{"sessions",
                          {{{"id", 1},
                            {"server", "demo"},
                            {"pid", 10},
                            {"uid", 0},
                            {"client", {{"name", "evil" + kHostile}, {"version", "1\n2 fake-row"}}},
                            {"protocol", "2025-06-18"},
                            {"in_flight", 0},
                            {"age_ms", 1000},
                            {"transport", "socket"}}}}};
    const std::string text = render("sessions", result);
    INFO(text);
    CHECK_FALSE(has_raw_controls(text));
    CHECK(text.find("evil" + kEscaped + " 1\\u000a2 fake-row") != std::string::npos);
    CHECK(std::count(text.begin(), text.end(), '\n') == 2);  // the header and one row
}

TEST_CASE("status renders names, exits and errors with controls escaped", "[ctl][render]") {
    const json result = {
        {"servers",
         {{{"name", "demo"},
           {"state", "failed"},
           {"last_exit", {{"status", 1}, {"step", "exit"}, {"reason", "cr\rashed"}}},
           {"error", "handshake failed: the server said " + kHostile}}}}};
    const std::string text = render("status", result);
    INFO(text);
    CHECK_FALSE(has_raw_controls(text));
    CHECK(text.find("1 (exit, cr\\u000dashed)") != std::string::npos);
    CHECK(text.find("demo: handshake failed: the server said " + kEscaped + "\n") !=
          std::string::npos);
}

TEST_CASE("errors on stderr escape what the daemon or a server put in them", "[ctl][render]") {
    std::ostringstream out, err;
    mcpctl::Output human(out, err, false);
    human.daemon_error(
        {{"code", "failed"}, {"message", "demo: " + kHostile}, {"details", {"a\nb", kHostile}}});
    human.error("typed \x1b[2J");
    CHECK_FALSE(has_raw_controls(err.str()));
    CHECK(err.str() == "mcpctl: demo: " + kEscaped + "\na\\u000ab\n" + kEscaped +
                           "\nmcpctl: typed \\u001b[2J\n");
}

TEST_CASE("JSON output (--json) leaves no control character raw and parses to the same value",
          "[ctl][render]") {
    const json value = {{"lines", {kHostile, "caf\u00e9"}}};
    std::ostringstream out, err;
    mcpctl::Output machine(out, err, true);
    machine.print_json(value);
    const std::string text = out.str();
    CHECK_FALSE(has_raw_controls(text));
    REQUIRE(text.back() == '\n');
    CHECK(json::parse(text) == value);
    CHECK(text.find("caf\u00e9") != std::string::npos);  // UTF-8 stays readable
}
