#include "common/accounts.h"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <charconv>
#include <vector>

namespace mcpd::accounts {

namespace {

// Enough for any passwd or group entry a system is likely to hold.
constexpr std::size_t kEntryBuffer = 16384;

std::optional<unsigned long> number(std::string_view text) {
    unsigned long value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
}

std::optional<std::string> user_name(uid_t uid) {
    std::vector<char> buf(kEntryBuffer);
    passwd pw{};
    passwd* found = nullptr;
    if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr)
        return std::nullopt;
    return std::string(found->pw_name);
}

std::optional<std::string> group_name(gid_t gid) {
    std::vector<char> buf(kEntryBuffer);
    group gr{};
    group* found = nullptr;
    if (getgrgid_r(gid, &gr, buf.data(), buf.size(), &found) != 0 || found == nullptr)
        return std::nullopt;
    return std::string(found->gr_name);
}

}  // namespace

std::optional<uid_t> uid_of(std::string_view user) {
    if (const auto n = number(user)) return static_cast<uid_t>(*n);
    if (user.empty()) return std::nullopt;
    const std::string name(user);
    std::vector<char> buf(kEntryBuffer);
    passwd pw{};
    passwd* found = nullptr;
    if (getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr)
        return std::nullopt;
    return found->pw_uid;
}

std::optional<gid_t> gid_of(std::string_view group_text) {
    if (group_text.empty()) return std::nullopt;
    const std::string name(group_text);
    std::vector<char> buf(kEntryBuffer);
    group gr{};
    group* found = nullptr;
    if (getgrnam_r(name.c_str(), &gr, buf.data(), buf.size(), &found) == 0 && found != nullptr)
        return found->gr_gid;
    // A number names a group only when the system has one with that id.
    const auto n = number(group_text);
    if (n && group_name(static_cast<gid_t>(*n))) return static_cast<gid_t>(*n);
    return std::nullopt;
}

std::optional<Account> account_of(uid_t uid) {
    std::vector<char> buf(kEntryBuffer);
    passwd pw{};
    passwd* found = nullptr;
    if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr)
        return std::nullopt;
    return Account{found->pw_name, found->pw_dir != nullptr ? found->pw_dir : ""};
}

std::string describe_uid(uid_t uid) {
    const auto name = user_name(uid);
    return "uid " + std::to_string(uid) + (name ? " (" + *name + ")" : "");
}

std::string describe_gid(gid_t gid) {
    const auto name = group_name(gid);
    return "group " + std::to_string(gid) + (name ? " (" + *name + ")" : "");
}

bool may_use_group(gid_t gid) {
    if (::geteuid() == 0 || ::getegid() == gid) return true;
    const int count = ::getgroups(0, nullptr);
    if (count <= 0) return false;
    std::vector<gid_t> groups(static_cast<std::size_t>(count));
    const int got = ::getgroups(count, groups.data());
    for (int i = 0; i < got; ++i) {
        if (groups[static_cast<std::size_t>(i)] == gid) return true;
    }
    return false;
}

}  // namespace mcpd::accounts
