// The backup side of mcpctl adopt: FILE.mcpd-backup is created exclusively, owned as FILE,
// mode 0600, and adopt's record (adopt_record) keeps what it wrote, so that a backup someone
// else planted is never taken for adopt's own and --undo never drops edits made since.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"
#include "ctl/adopt_record.h"

namespace mcpctl {

// Where adopt keeps the file as it was before its first rewrite.
std::string backup_path(std::string_view file);

// What is beside `file` now.
struct BackupState {
    bool exists = false;
    // Set when it exists but adopt's record does not vouch for it (planted, changed or
    // written by another user's adopt): why, as a sentence ending in what to do.
    std::string foreign;
};
BackupState backup_state(const std::string& file, const AdoptRecords& records);

// Rewrite `file` with `text`: its backup first (unless adopt's own is there already), then the
// file replaced whole with its owner and mode (through a link, the link's target), then the
// record of both.
mcpd::Result<mcpd::Done> write_adopted(const std::string& file, std::string_view text,
                                       const AdoptRecords& records);

// Put `file` back from its backup and remove the backup and the record. Refused when the
// backup is not adopt's own, or, unless `force`, when the file changed since adopt wrote it.
// With `dry_run` only the checks are made. The restored text is returned.
mcpd::Result<std::string> restore_adopted(const std::string& file, const AdoptRecords& records,
                                          bool force, bool dry_run);

}  // namespace mcpctl
