// adopt's own record of the files it rewrote: for each, the SHA-256 of the backup it wrote
// and of the text it wrote. A backup is only ever restored when the record vouches for it (a
// file someone planted beside the agent's file is refused), and --undo only puts a file back
// when it is still what adopt wrote (else the user's later edits would be lost).
//
// The record lives where only the user writes: $XDG_STATE_HOME/mcpd/adopt/, else
// ~/.local/state/mcpd/adopt/ (0700), one 0600 file per adopted file.
#pragma once

#include <optional>
#include <string>

#include "common/result.h"

namespace mcpctl {

struct AdoptRecord {
    std::string file;            // absolute path, as adopt named it
    std::string backup_sha256;   // of FILE.mcpd-backup as adopt wrote it
    std::string written_sha256;  // of FILE as adopt last wrote it
};

class AdoptRecords {
public:
    // The user's record directory; fails when neither XDG_STATE_HOME nor HOME says where.
    static mcpd::Result<AdoptRecords> open();
    explicit AdoptRecords(std::string dir) : dir_(std::move(dir)) {}

    // The record of `file` (any spelling of its path); nullopt when adopt has none.
    std::optional<AdoptRecord> find(const std::string& file) const;
    // Keep `record` (its directories are created 0700, the file 0600, replaced whole).
    mcpd::Result<mcpd::Done> keep(AdoptRecord record) const;
    void forget(const std::string& file) const;

    const std::string& dir() const { return dir_; }

private:
    std::string path_of(const std::string& file) const;
    std::string dir_;
};

// The absolute, normal spelling of `file` that records are keyed by.
std::string record_key(const std::string& file);

}  // namespace mcpctl
