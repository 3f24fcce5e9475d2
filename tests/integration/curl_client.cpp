#include "curl_client.h"

#include <cctype>

#include "process.h"

namespace integration {

HttpAnswer curl(const std::vector<std::string>& args, const std::vector<std::string>& as_user) {
    std::vector<std::string> argv = {"/usr/bin/curl", "-s", "-i", "--max-time", "20"};
    argv.insert(argv.end(), args.begin(), args.end());
    if (!as_user.empty()) argv.insert(argv.begin(), as_user.begin(), as_user.end());
    const RunResult run = run_process(argv, 30s);
    HttpAnswer answer;
    answer.raw = run.out;
    std::size_t end = run.out.find("\r\n\r\n");
    const std::string head = run.out.substr(0, end);
    answer.body = end == std::string::npos ? std::string() : run.out.substr(end + 4);
    std::size_t at = 0;
    bool first = true;
    while (at < head.size()) {
        std::size_t line_end = head.find("\r\n", at);
        if (line_end == std::string::npos) line_end = head.size();
        const std::string line = head.substr(at, line_end - at);
        at = line_end + 2;
        if (first) {
            first = false;
            if (line.size() > 12) answer.status = std::stoi(line.substr(9, 3));
            continue;
        }
        const std::size_t colon = line.find(':');
        if (colon == std::string::npos) continue;
        std::string name = line.substr(0, colon);
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        answer.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
    }
    return answer;
}

std::string initialize_body(const std::string& name) {
    return nlohmann::json{{"jsonrpc", "2.0"},
                          {"id", 1},
                          {"method", "initialize"},
                          {"params",
                           {{"protocolVersion", "2025-06-18"},
                            {"capabilities", nlohmann::json::object()},
                            {"clientInfo", {{"name", name}, {"version", "1"}}}}}}
        .dump();
}

std::vector<nlohmann::json> sse_messages(const std::string& body) {
    std::vector<nlohmann::json> out;
    std::size_t at = 0;
    while ((at = body.find("data: ", at)) != std::string::npos) {
        const std::size_t end = body.find('\n', at);
        out.push_back(nlohmann::json::parse(body.substr(at + 6, end - at - 6), nullptr, false));
        at = end;
    }
    return out;
}

}  // namespace integration
