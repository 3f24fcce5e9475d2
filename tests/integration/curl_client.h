// HTTP requests made with curl(1), as a user makes them, for the tests of the HTTP front door:
// the answer split into status, headers and body, and the messages of an SSE body.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace integration {

struct HttpAnswer {
    int status = 0;
    std::map<std::string, std::string> headers;  // names lowercased
    std::string body;
    std::string raw;
};

// curl -s -i ARGS (prefixed by `as_user`, e.g. setpriv as another user), within 20 s.
HttpAnswer curl(const std::vector<std::string>& args, const std::vector<std::string>& as_user = {});

// The body of an initialize request (2025-06-18, no capabilities) from client `name`.
std::string initialize_body(const std::string& name);

// The JSON-RPC messages of an SSE body (its "data: " lines).
std::vector<nlohmann::json> sse_messages(const std::string& body);

}  // namespace integration
