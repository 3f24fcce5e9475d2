// Env files: the KEY=VALUE lines a server's `env_file` names, usually secrets.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace mcpd::config {

// One malformed line. The message never quotes the line: its value may be a secret.
struct EnvFileError {
    int line = 0;    // 1-based
    int column = 0;  // 1-based
    std::string message;
};

struct EnvFileResult {
    std::map<std::string, std::string> vars;
    std::vector<EnvFileError> errors;
};

// Parse env file text: KEY=VALUE lines, '#' comment lines and blank lines; a line may start
// with `export `, and a value may be wrapped in single or double quotes (taken literally,
// no escapes). Whitespace around the key and the value is ignored; a later KEY wins.
EnvFileResult parse_env_file(std::string_view text);

// Whether `name` is a valid environment variable name: [A-Za-z_][A-Za-z0-9_]*.
bool is_env_name(std::string_view name);

}  // namespace mcpd::config
