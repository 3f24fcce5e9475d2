#include "ctl/lazy_state.h"

#include <ctime>

namespace mcpctl {

std::string lazy_state_text(const nlohmann::json& server) {
    const auto state = server.find("state");
    const auto lazy = server.find("lazy");
    if (state == server.end() || *state != "stopped" || lazy == server.end() || !lazy->is_object())
        return {};
    const auto cached = lazy->find("cached");
    if (cached == lazy->end() || !cached->is_number_integer()) return "cold (no cache)";
    const std::time_t when = cached->get<std::int64_t>();
    std::tm local{};
    char text[32] = "?";
    if (::localtime_r(&when, &local) != nullptr)
        std::strftime(text, sizeof text, "%Y-%m-%d %H:%M", &local);
    std::string out = "sleeping (cached ";
    out += text;
    out += ')';
    return out;
}

}  // namespace mcpctl
