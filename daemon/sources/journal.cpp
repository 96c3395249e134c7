#include "daemon/sources/journal.h"

#include <fmt/format.h>
#include <systemd/sd-journal.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "collectors/coredump/systemd_coredump.h"
#include "collectors/prefix/journal_entry.h"
#include "daemon/daemon.h"

namespace gpufault::daemon {

namespace {

constexpr int kEntriesPerPoll = 4096;
constexpr size_t kRemembered = 65536;
constexpr size_t kKernelRanges = 65536;  ///< kernel line ranges remembered (kernelRecord)

/// A field's value ("" when absent).
std::string field(sd_journal* j, const char* name) {
    const void* data = nullptr;
    size_t len = 0;
    if (sd_journal_get_data(j, name, &data, &len) < 0) return "";
    std::string_view kv(static_cast<const char*>(data), len);
    auto eq = kv.find('=');
    return eq == std::string_view::npos ? "" : std::string(kv.substr(eq + 1));
}

std::optional<int64_t> number(const std::string& s) {
    if (s.empty()) return std::nullopt;
    char* end = nullptr;
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (!end || *end) return std::nullopt;
    return v;
}

db::Error journalError(const std::string& what, int r) {
    return db::Error{fmt::format("journal: {}: {}", what, std::strerror(-r))};
}

}  // namespace

JournalSource::JournalSource(Store& store, std::string directory, std::vector<std::string> units,
                             std::string boot_id, int window)
    : store_(store),
      directory_(std::move(directory)),
      bootId_(std::move(boot_id)),
      units_(std::move(units)),
      window_(window) {}

JournalSource::~JournalSource() {
    if (j_) sd_journal_close(j_);
}

db::Result<void> JournalSource::open() {
    if (j_) return {};
    int r = directory_.empty() ? sd_journal_open(&j_, SD_JOURNAL_LOCAL_ONLY)
                               : sd_journal_open_directory(&j_, directory_.c_str(), 0);
    if (r < 0) {
        j_ = nullptr;
        return std::unexpected(journalError(name(), r));
    }
    // (_TRANSPORT=kernel OR _SYSTEMD_UNIT=u1 OR …)
    sd_journal_add_match(j_, "_TRANSPORT=kernel", 0);
    sd_journal_add_disjunction(j_);
    std::string coredumps = "MESSAGE_ID=" + std::string(coredump::kCoredumpMessageId);
    sd_journal_add_match(j_, coredumps.c_str(), 0);
    for (const auto& u : units_) {
        sd_journal_add_disjunction(j_);
        std::string m = "_SYSTEMD_UNIT=" + u;
        sd_journal_add_match(j_, m.c_str(), 0);
    }
    return {};
}

int JournalSource::fd() const {
    return j_ ? sd_journal_get_fd(j_) : -1;
}

void JournalSource::changed() {
    if (j_) sd_journal_process(j_);
}

db::Result<void> JournalSource::start(Txn& txn) {
    if (auto r = txn.ensure(); !r) return r;
    SourceIdentity id;
    id.path = name();
    id.kind = "journal";
    id.fingerprint = "journal " + name();
    auto src = store_.source(id);
    if (!src) return std::unexpected(src.error());
    stream_ = std::make_unique<StreamIngest>(store_, *src, window_, sum_);
    cursors_.clear();
    pendingFirst_ = false;
    if (submit_) {
        // Queued before a kill, a stop or a reload, not done yet (a job finds out whether one
        // was done meanwhile). Handed over after the loop's next commit, as new ones are: the
        // worker stores in transactions of its own, and this one is open.
        auto queued = store_.pendingCores(directory_);
        if (!queued) return std::unexpected(queued.error());
        if (!queued->empty())
            logLine(
                6,
                fmt::format("{}: {} core(s) queued before, to be unwound", name(), queued->size()));
        for (auto& p : *queued) {
            queued_.push_back(std::move(p));
            ++coresUncommitted_;  // the loop commits soon
        }
    }
    if (src->cursor) {
        int r = sd_journal_seek_cursor(j_, src->cursor->c_str());
        if (r < 0) return std::unexpected(journalError("seek to the checkpoint", r));
        lastCursor_ = *src->cursor;
        if (sd_journal_next(j_) <= 0) return {};  // nothing at or after it yet
        bool there = sd_journal_test_cursor(j_, src->cursor->c_str()) > 0;
        if (!there) ++lost_;  // vacuumed: what was after the checkpoint may be gone too
        // offset 1: the cursor entry was read; 0: it starts an unfinished block.
        pendingFirst_ = !(there && src->offset == 1);
        return {};
    }
    if (directory_.empty() && !bootId_.empty()) {
        // First start on the system journal: this boot only, not years of history.
        std::string boot;
        for (char c : bootId_)
            if (c != '-') boot += c;
        sd_journal_add_conjunction(j_);
        sd_journal_add_match(j_, ("_BOOT_ID=" + boot).c_str(), 0);
    }
    sd_journal_seek_head(j_);
    return {};
}

db::Result<bool> JournalSource::poll(Txn& txn) {
    if (!j_) return false;
    if (!stream_)
        if (auto r = start(txn); !r) return std::unexpected(r.error());
    if (submit_) {  // cores the store refused, handed over again after the next commit
        auto again = retries_->take();
        if (!again.empty())
            if (auto r = txn.ensure(); !r) return std::unexpected(r.error());
        for (auto& p : again) {
            queued_.push_back(std::move(p));
            ++coresUncommitted_;
        }
    }
    for (int i = 0; i < kEntriesPerPoll; ++i) {
        if (!pendingFirst_) {
            int r = sd_journal_next(j_);
            if (r < 0) return std::unexpected(journalError(name(), r));
            if (r == 0) return false;
        }
        pendingFirst_ = false;
        JournalEntry e;
        e.message = field(j_, "MESSAGE");
        e.transport = field(j_, "_TRANSPORT");
        if (auto p = number(field(j_, "PRIORITY"))) e.priority = static_cast<int>(*p);
        if (auto m = number(field(j_, "_SOURCE_MONOTONIC_TIMESTAMP"))) {
            e.monotonic_us = static_cast<uint64_t>(*m);
        } else {
            uint64_t mono = 0;
            sd_id128_t boot;
            if (sd_journal_get_monotonic_usec(j_, &mono, &boot) >= 0) e.monotonic_us = mono;
        }
        sd_journal_get_realtime_usec(j_, &e.realtime_us);
        e.hostname = field(j_, "_HOSTNAME");
        e.identifier = field(j_, "SYSLOG_IDENTIFIER");
        if (e.identifier.empty()) e.identifier = field(j_, "_COMM");
        e.pid = number(field(j_, "_PID"));
        if (!e.pid) e.pid = number(field(j_, "SYSLOG_PID"));
        char* cursor = nullptr;
        if (sd_journal_get_cursor(j_, &cursor) < 0) continue;
        lastCursor_ = cursor;
        std::free(cursor);
        ++counter_;
        cursors_.emplace_back(counter_, lastCursor_);
        if (cursors_.size() > kRemembered) cursors_.pop_front();
        if (auto r = txn.ensure(); !r) return std::unexpected(r.error());
        if (field(j_, "MESSAGE_ID") == coredump::kCoredumpMessageId) {
            if (!fromSystemdCoredump()) {
                logLine(4,
                        fmt::format("systemd-coredump entry ignored: journald does not attest it "
                                    "came from systemd-coredump (_UID={}, _COMM={})",
                                    field(j_, "_UID"),
                                    field(j_, "_COMM")));
                continue;
            }
            if (auto r = storeCoredump(txn); !r) return std::unexpected(r.error());
            continue;
        }
        std::string prefix = journalLinePrefix(e);
        std::string_view msg = e.message;
        uint64_t first = stream_->lineNo() + 1;
        do {
            auto nl = msg.find('\n');
            std::string line = prefix + std::string(msg.substr(0, nl));
            stream_->feed(line, counter_, false);
            msg = nl == std::string_view::npos ? std::string_view() : msg.substr(nl + 1);
        } while (!msg.empty());
        if (e.transport == "kernel") {
            // _TRANSPORT is a trusted field: journald sets it, a client cannot.
            if (!kernelLines_.empty() && kernelLines_.back().second + 1 == first)
                kernelLines_.back().second = stream_->lineNo();
            else
                kernelLines_.emplace_back(first, stream_->lineNo());
            if (kernelLines_.size() > kKernelRanges) kernelLines_.pop_front();
        }
        if (stream_->error()) return std::unexpected(*stream_->error());
    }
    return true;
}

bool JournalSource::fromSystemdCoredump() {
    // Underscore fields are set by journald, never by the sender: a local user can send
    // MESSAGE_ID=fc2e22bc… with any COREDUMP_FILENAME, but not _UID=0. journald keeps 15
    // characters of the command name (TASK_COMM_LEN).
    if (field(j_, "_UID") != "0") return false;
    return field(j_, "_COMM") == "systemd-coredum" ||
           field(j_, "SYSLOG_IDENTIFIER") == "systemd-coredump";
}

db::Result<void> JournalSource::storeCoredump(Txn& txn) {
    coredump::FieldMap fields;
    const void* data = nullptr;
    size_t len = 0;
    sd_journal_restart_data(j_);
    while (sd_journal_enumerate_data(j_, &data, &len) > 0) {
        std::string_view kv(static_cast<const char*>(data), len);
        auto eq = kv.find('=');
        if (eq == std::string_view::npos) continue;
        auto name = kv.substr(0, eq);
        // COREDUMP= (Storage=journal) is the core itself: only its presence matters.
        fields.emplace(std::string(name),
                       name == "COREDUMP" ? std::string() : std::string(kv.substr(eq + 1)));
    }
    auto e = coredump::parseCoredumpEntry(fields);
    if (!e) {  // no or no valid COREDUMP_PID: nothing to store, said once per entry
        logLine(4, "systemd-coredump entry not stored: " + e.error().message);
        return {};
    }
    for (const auto& w : e->warnings) logLine(4, "systemd-coredump entry: " + w);
    if (auto r = txn.ensure(); !r) return r;
    if ((e->filename || e->in_journal) && submit_) {
        // Reading and unwinding a core takes seconds for a big one: the worker's. The entry is
        // queued in this transaction, which commits the cursor past it, so a kill after the
        // commit finds it queued at the next start; it is handed over once committed.
        nlohmann::json j = nlohmann::json::object();
        for (const auto& [k, v] : fields) j[k] = v;  // COREDUMP: "" (only its presence counts)
        PendingCore p{0,
                      directory_,
                      lastCursor_,
                      j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)};
        auto id = store_.addPendingCore(p);
        if (!id) return std::unexpected(id.error());
        p.id = *id;
        queued_.push_back(std::move(p));
        ++coresUncommitted_;  // the loop commits when a source has something uncommitted
        return {};
    }
    // Storage=journal: the core is the COREDUMP= field. Read whole only when no kept file would
    // be read instead, capped like a decompressed core, into a temporary file that libdw reads
    // and that is gone afterwards.
    JournalCore jc =
        e->in_journal && !e->filename ? journalCoreHere(j_, crash_.unpack) : JournalCore{};
    if (auto r = store_.savepoint(); !r) return r;  // one crash's rows stand or fall together
    auto r = ingestCoredumpEntry(store_, *e, "journal:" + name(), crash_, false, &jc);
    if (auto s = r ? store_.releaseSavepoint() : store_.undoSavepoint(); !s) return s;
    if (!r) {
        logLine(4,
                fmt::format(
                    "systemd-coredump entry of pid {} not stored: {}", e->pid, r.error().message));
        return {};
    }
    if (!r->unchanged) {
        ++cores_;
        ++coresUncommitted_;  // the loop commits when a source has something uncommitted
    }
    return {};
}

db::Result<void> JournalSource::flushIdle(Txn& txn) {
    if (!stream_) return {};
    if (auto r = txn.ensure(); !r) return r;
    stream_->flushIdle();
    if (stream_->error()) return std::unexpected(*stream_->error());
    return {};
}

uint64_t JournalSource::uncommittedLines() const {
    return (stream_ ? stream_->uncommittedLines() : 0) + coresUncommitted_;
}

db::Result<void> JournalSource::checkpoint() {
    // Entries that gave no line but a queued core move the cursor too (with the queue's rows).
    if (!stream_ || (stream_->uncommittedLines() == 0 && queued_.empty())) return {};
    return stream_->checkpoint(counter_ + 1, false, 0, [this](SourceState& cp) {
        // The position StreamIngest chose → the entry's cursor (offset 0: resume at it), or
        // after everything read (offset 1: resume after the last entry).
        if (cp.offset > counter_) {
            cp.cursor = lastCursor_;
            cp.offset = 1;
            return;
        }
        for (const auto& [pos, cur] : cursors_)
            if (pos == cp.offset) {
                cp.cursor = cur;
                cp.offset = 0;
                return;
            }
    });
}

void JournalSource::committed() {
    coresUncommitted_ = 0;
    if (stream_) stream_->committed();
    for (auto& p : queued_)
        submit_(unwindJournalCore(
            p, "journal:" + name(), crash_, marker_, deathsOfPending(killers_, p.id), retries_));
    queued_.clear();
}

bool JournalSource::kernelRecord(int64_t source_id, uint64_t line) const {
    if (!stream_ || source_id != stream_->state().id) return false;
    for (auto r = kernelLines_.rbegin(); r != kernelLines_.rend(); ++r) {
        if (line > r->second) return false;  // between two kernel ranges: a unit's line
        if (line >= r->first) return true;
    }
    return false;
}

void JournalSource::reset() {
    stream_.reset();  // the next poll seeks to the committed cursor again
    kernelLines_.clear();
    coresUncommitted_ = 0;
    queued_.clear();  // rolled back: queued again when the entries are read again
    sum_ = IngestSummary{};
}

std::vector<StreamStatus> JournalSource::status() const {
    StreamStatus s;
    s.source = "journal";
    s.name = name();
    s.position = stream_ && stream_->state().cursor ? "cursor " + *stream_->state().cursor
                                                    : std::string(j_ ? "not started" : "closed");
    s.key = s.source + " " + s.name;
    s.lines = carried_.lines + sum_.lines;
    s.evidence = carried_.evidence + sum_.evidenceTotal();
    s.lost_records = carried_.lost_records + lost_;
    return {s};
}

uint64_t JournalSource::evidenceStored() const {
    return sum_.evidenceTotal() + cores_;
}

void JournalSource::carry(const CarriedCounters& before) {
    auto now = status();
    if (auto it = before.find(now.front().key); it != before.end()) carried_ = it->second;
}

std::vector<int64_t> JournalSource::sourceIds() const {
    if (!stream_) return {};
    return {stream_->state().id};
}

}  // namespace gpufault::daemon
