#include "ctl/adopt_backup.h"

#include <sys/stat.h>
#include <unistd.h>

#include <optional>

#include "ctl/adopt_files.h"
#include "ctl/registry_append.h"
#include "common/sha256.h"

namespace mcpctl {

namespace {

// The backup's bytes when it is adopt's own (a regular file, not a link, its hash as
// recorded); else why not.
mcpd::Result<std::string> own_backup(const std::string& file, const AdoptRecords& records) {
    const std::string backup = backup_path(file);
    struct stat st {};
    if (::lstat(backup.c_str(), &st) != 0)
        return mcpd::permanent_failure("there is no " + backup + " to restore it from");
    const std::string what = backup + " was not written by mcpctl adopt as this user";
    if (!S_ISREG(st.st_mode))
        return mcpd::permanent_failure(what + " (it is not a regular file): move it away");
    const std::optional<AdoptRecord> record = records.find(file);
    if (!record)
        return mcpd::permanent_failure(what + " (" + records.dir() +
                                       " has no record of it): move it away, or compare it "
                                       "with the file and copy it back by hand if you trust it");
    mcpd::Result<std::string> text = read_text_file(backup);
    if (!text) return mcpd::permanent_failure(backup + " " + text.error());
    if (mcpd::sha256_hex(text.value()) != record->backup_sha256)
        return mcpd::permanent_failure(backup +
                                       " changed since mcpctl adopt wrote it: move it away, or "
                                       "compare it with the file and copy it back by hand");
    return text;
}

}  // namespace

std::string backup_path(std::string_view file) {
    return std::string(file) + ".mcpd-backup";
}

BackupState backup_state(const std::string& file, const AdoptRecords& records) {
    struct stat st {};
    if (::lstat(backup_path(file).c_str(), &st) != 0) return {};
    BackupState state{.exists = true, .foreign = {}};
    if (const auto own = own_backup(file, records); !own) state.foreign = own.error();
    return state;
}

mcpd::Result<mcpd::Done> write_adopted(const std::string& file, std::string_view text,
                                       const AdoptRecords& records) {
    const std::string target = write_target(file);
    mcpd::Result<std::string> original = read_text_file(target);
    if (!original) return mcpd::permanent_failure(target + " " + original.error());
    const std::string backup = backup_path(file);
    std::string backup_sha;
    if (const BackupState state = backup_state(file, records); state.exists) {
        if (!state.foreign.empty()) return mcpd::permanent_failure(state.foreign);
        backup_sha = records.find(file)->backup_sha256;
    } else {
        // Exclusively: anything that appears there in the meantime is refused, not followed.
        mcpd::Result<bool> created =
            create_file(backup, original.value(), 0600, file_owner(target));
        if (!created) return created.failure();
        if (!created.value())
            return mcpd::permanent_failure(backup +
                                           " appeared while adopt was writing it: "
                                           "move it away, then run adopt again");
        backup_sha = mcpd::sha256_hex(original.value());
    }
    // The record first: a record without its rewrite is harmless (undo finds the file
    // changed), a rewrite without its record could not be undone.
    const AdoptRecord record{file, backup_sha, mcpd::sha256_hex(text)};
    if (auto kept = records.keep(record); !kept)
        return mcpd::permanent_failure("cannot keep adopt's record in " + records.dir() + ": " +
                                       kept.error());
    return replace_file(target, text);
}

mcpd::Result<std::string> restore_adopted(const std::string& file, const AdoptRecords& records,
                                          bool force, bool dry_run) {
    mcpd::Result<std::string> backup = own_backup(file, records);
    if (!backup) return backup;
    const std::string target = write_target(file);
    mcpd::Result<std::string> now = read_text_file(target);
    if (!now) return mcpd::permanent_failure(target + " " + now.error());
    if (!force && mcpd::sha256_hex(now.value()) != records.find(file)->written_sha256)
        return mcpd::permanent_failure(
            "it changed since mcpctl adopt rewrote it, and putting the backup back would drop "
            "those changes: run 'mcpctl adopt --undo --force' to restore it anyway");
    if (dry_run) return backup;
    if (auto written = replace_file(target, backup.value()); !written)
        return mcpd::permanent_failure(written.error());
    ::unlink(backup_path(file).c_str());
    records.forget(file);
    return backup;
}

}  // namespace mcpctl
