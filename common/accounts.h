// Users and groups by name or number, for access checks and for sentences about them.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

namespace mcpd::accounts {

// A user name, or a number (taken as a uid as it is).
std::optional<uid_t> uid_of(std::string_view user);

// A group name, or the number of a group the system knows.
std::optional<gid_t> gid_of(std::string_view group);

// "uid 1000 (alice)", or "uid 1000" when the system has no name for it.
std::string describe_uid(uid_t uid);
// "group 27 (sudo)", likewise.
std::string describe_gid(gid_t gid);

// The account of `uid`: its name and home directory, when the system has one.
struct Account {
    std::string name;
    std::string home;
};
std::optional<Account> account_of(uid_t uid);

// Whether this process may hand files to `gid`: root, or a member of it.
bool may_use_group(gid_t gid);

}  // namespace mcpd::accounts
