// The id of a message mcpd cannot forward (it is lost), read from what is left of it: a line
// over max_message_bytes, of which only the first and last bytes were kept, or a line that is
// not valid JSON (bytes that are not UTF-8). Enough to answer the request such a line concerns
// instead of leaving it unanswered (Router::on_child_reply_lost, on_session_reply_lost).
//
// Serialisers put the small envelope members around the payload: most write "jsonrpc" and
// "id" first, JavaScript SDKs write the payload first and "id" last. So the top-level members
// are read forwards from the head and backwards from the tail, as far as each edge reaches.
// Nothing is validated; a member is only believed when its whole text is inside an edge.
#pragma once

#include <string>
#include <string_view>

namespace mcpd {

struct LostMessageId {
    std::string id;         // the raw top-level "id" token (a string or an integer), or empty
    bool response = false;  // a top-level "result" or "error" member starts in the head
    bool request = false;   // a top-level "method" member starts in the head
};

// `head` is a prefix of the message, `tail` a suffix (both may be the whole line).
LostMessageId read_lost_message_id(std::string_view head, std::string_view tail);

}  // namespace mcpd
