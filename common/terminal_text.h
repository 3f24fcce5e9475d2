// Text that came from elsewhere (a server's stderr, a client's clientInfo, a name someone typed)
// made safe to print on a terminal or into one line of a log.
#pragma once

#include <string>
#include <string_view>

namespace mcpd {

// Well-formed UTF-8 passes as it is. Every control character (C0 with tab and newline, DEL,
// C1 U+0080..U+009F) becomes "\u00XX" the way JSON writes it, and each byte that is not part of
// well-formed UTF-8 becomes "\xXX". The result is valid UTF-8 without a single control
// character: it cannot move the cursor, retitle a window or start a new line. Backslashes stay
// as they are, so text can spell an escape that was never there, but never perform one.
//
// Applied to a JSON text, the result is still JSON with the same value: only DEL and C1 can be
// left raw by a JSON writer, and only inside strings, where "\u00XX" means the same.
std::string escape_controls(std::string_view text);

// The same, appended to `out`.
void append_escaped_controls(std::string& out, std::string_view text);

}  // namespace mcpd
