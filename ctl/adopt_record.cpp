#include "ctl/adopt_record.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <system_error>

#include "config/text_file.h"
#include "ctl/adopt_files.h"
#include "common/sha256.h"

namespace mcpctl {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

}  // namespace

std::string record_key(const std::string& file) {
    std::error_code ec;
    const fs::path absolute = fs::absolute(file, ec);
    return (ec ? fs::path(file) : absolute).lexically_normal().string();
}

mcpd::Result<AdoptRecords> AdoptRecords::open() {
    const char* state = std::getenv("XDG_STATE_HOME");
    if (state != nullptr && state[0] == '/')
        return AdoptRecords(std::string(state) + "/mcpd/adopt");
    const char* home = std::getenv("HOME");
    if (home != nullptr && home[0] == '/')
        return AdoptRecords(std::string(home) + "/.local/state/mcpd/adopt");
    return mcpd::permanent_failure(
        "HOME is not set to a directory, so adopt has nowhere to keep its record of the files "
        "it rewrites; set HOME (or XDG_STATE_HOME)");
}

std::string AdoptRecords::path_of(const std::string& file) const {
    return dir_ + "/" + mcpd::sha256_hex(record_key(file)) + ".json";
}

std::optional<AdoptRecord> AdoptRecords::find(const std::string& file) const {
    std::string text;
    if (mcpd::config::read_text_file(path_of(file), text) != 0) return std::nullopt;
    const json doc = json::parse(text, nullptr, false);
    const std::string key = record_key(file);
    if (!doc.is_object() || doc.value("file", "") != key) return std::nullopt;
    return AdoptRecord{key, doc.value("backup_sha256", ""), doc.value("written_sha256", "")};
}

mcpd::Result<mcpd::Done> AdoptRecords::keep(AdoptRecord record) const {
    if (auto made = make_private_dirs(dir_); !made) return made;
    record.file = record_key(record.file);
    const json doc = {{"file", record.file},
                      {"backup_sha256", record.backup_sha256},
                      {"written_sha256", record.written_sha256}};
    return replace_file(path_of(record.file), doc.dump(2) + '\n', 0600);
}

void AdoptRecords::forget(const std::string& file) const {
    ::unlink(path_of(file).c_str());
}

}  // namespace mcpctl
