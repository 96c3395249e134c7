#include "collectors/coredump/journal_fields.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

namespace gpufault::coredump {

namespace {

constexpr size_t kMaxLine = 64u << 20;  ///< a text field line longer than this is an error

bool fieldName(std::string_view n) {
    if (n.empty()) return false;
    return std::all_of(n.begin(), n.end(), [](char c) {
        return std::isupper(static_cast<unsigned char>(c)) ||
               std::isdigit(static_cast<unsigned char>(c)) || c == '_';
    });
}

}  // namespace

void JournalExportReader::endEntry() {
    if (!fields_.empty()) {
        ++entries_;
        on_(std::move(fields_), entryStart_);
    }
    fields_.clear();
}

void JournalExportReader::leftOut(std::string name, uint64_t offset, uint64_t size) {
    if (fields_.empty()) entryStart_ = offset;
    fields_.insert_or_assign(name, std::string());
    if (leftOut_) leftOut_(LeftOutField{std::move(name), entryStart_, offset, size});
}

Result<void> JournalExportReader::feed(std::string_view data) {
    size_t pos = 0;
    auto fail = [&](uint64_t at, const std::string& what) {
        return std::unexpected(Error{fmt::format("offset {}: {}", at, what)});
    };
    while (pos < data.size()) {
        switch (state_) {
            case State::Line: {
                auto nl = data.find('\n', pos);
                if (nl == std::string_view::npos) {
                    buf_.append(data.substr(pos));
                    // A NAME=value line whose value is already over max_: not held further.
                    auto eq = buf_.find('=');
                    if (eq != std::string::npos && buf_.size() - eq - 1 > max_ &&
                        fieldName(std::string_view(buf_).substr(0, eq))) {
                        skipName_ = buf_.substr(0, eq);
                        skipStart_ = offset_;
                        skipped_ = buf_.size() - eq - 1;
                        buf_.clear();
                        state_ = State::SkipLine;
                        return {};
                    }
                    if (buf_.size() > kMaxLine) return fail(offset_, "line longer than 64 MiB");
                    return {};
                }
                buf_.append(data.substr(pos, nl - pos));
                uint64_t lineStart = offset_;
                offset_ += buf_.size() + 1;
                pos = nl + 1;
                if (buf_.empty()) {
                    endEntry();
                    entryStart_ = offset_;
                    break;
                }
                if (fields_.empty()) entryStart_ = lineStart;
                auto eq = buf_.find('=');
                if (eq != std::string::npos && fieldName(std::string_view(buf_).substr(0, eq))) {
                    if (buf_.size() - eq - 1 > max_)
                        leftOut(buf_.substr(0, eq), lineStart, buf_.size() - eq - 1);
                    else
                        fields_.insert_or_assign(buf_.substr(0, eq), buf_.substr(eq + 1));
                } else if (eq == std::string::npos && fieldName(buf_)) {
                    binName_ = buf_;
                    binStart_ = lineStart;
                    state_ = State::Size;
                } else {
                    return fail(lineStart, "not a journal export field (NAME=value or NAME)");
                }
                buf_.clear();
                break;
            }
            case State::SkipLine: {
                auto nl = data.find('\n', pos);
                size_t take = (nl == std::string_view::npos ? data.size() : nl) - pos;
                skipped_ += take;
                pos += take;
                if (nl == std::string_view::npos) return {};
                ++pos;
                offset_ = skipStart_ + skipName_.size() + 1 + skipped_ + 1;
                leftOut(std::move(skipName_), skipStart_, skipped_);
                skipName_.clear();
                state_ = State::Line;
                break;
            }
            case State::Size: {
                size_t take = std::min(8 - buf_.size(), data.size() - pos);
                buf_.append(data.substr(pos, take));
                pos += take;
                if (buf_.size() < 8) return {};
                binLeft_ = 0;
                for (int i = 7; i >= 0; --i)
                    binLeft_ = (binLeft_ << 8) | static_cast<unsigned char>(buf_[i]);
                offset_ += 8;
                buf_.clear();
                binSpill_ = spill_ && binName_ == spillName_;
                binKeep_ = !binSpill_ && binLeft_ <= max_;
                if (binSpill_) {
                    fields_.insert_or_assign(binName_, std::string());
                    spill_(std::string_view(), binLeft_, true);
                } else if (binKeep_) {
                    fields_.insert_or_assign(binName_, std::string());
                } else {
                    leftOut(binName_, binStart_, binLeft_);
                }
                state_ = binLeft_ ? State::Data : State::Newline;
                break;
            }
            case State::Data: {
                size_t take = static_cast<size_t>(
                    std::min<uint64_t>(binLeft_, static_cast<uint64_t>(data.size() - pos)));
                if (binKeep_) fields_[binName_].append(data.substr(pos, take));
                if (binSpill_) spill_(data.substr(pos, take), 0, false);
                pos += take;
                binLeft_ -= take;
                offset_ += take;
                if (binLeft_ == 0) state_ = State::Newline;
                break;
            }
            case State::Newline:
                if (data[pos] != '\n')
                    return fail(offset_,
                                fmt::format("binary field {} not followed by a newline", binName_));
                ++pos;
                ++offset_;
                state_ = State::Line;
                break;
        }
    }
    return {};
}

Result<void> JournalExportReader::finish() {
    if (state_ == State::SkipLine) {
        // A last, left-out text line without its newline.
        offset_ = skipStart_ + skipName_.size() + 1 + skipped_;
        leftOut(std::move(skipName_), skipStart_, skipped_);
        state_ = State::Line;
    }
    if (state_ == State::Newline) state_ = State::Line;  // its value is whole: only '\n' missing
    if (state_ == State::Size || state_ == State::Data) {
        // Cut inside the value (hostile review 17, i4 M3: a core stored in the journal is most
        // of an entry's bytes, where a cut lands): the entry without it, not nothing.
        if (state_ == State::Data && binKeep_) fields_.erase(binName_);
        state_ = State::Line;
        buf_.clear();
        endEntry();
        return {};
    }
    if (!buf_.empty()) {
        // A last line without its newline.
        std::string last;
        last.swap(buf_);
        if (auto r = feed(last + "\n"); !r) return r;
    }
    endEntry();
    return {};
}

std::optional<JournalExportReader::CutField> JournalExportReader::cutInsideBinary() const {
    if (state_ == State::Size)
        return CutField{binName_,
                        fmt::format("offset {}: binary field {}, its size cut", binStart_, binName_)};
    if (state_ == State::Data) {
        uint64_t total = offset_ + binLeft_ - (binStart_ + binName_.size() + 1 + 8);
        return CutField{binName_,
                        fmt::format("offset {}: binary field {}, {} of {} bytes",
                                    binStart_,
                                    binName_,
                                    total - binLeft_,
                                    total)};
    }
    return std::nullopt;
}

bool looksLikeJournalExport(std::string_view head) {
    auto nl = head.find('\n');
    auto first = head.substr(0, nl);
    auto eq = first.find('=');
    if (eq == std::string_view::npos) return false;
    auto name = first.substr(0, eq);
    return fieldName(name) && (name.starts_with("__") || name == "MESSAGE" || name == "_BOOT_ID" ||
                               name == "PRIORITY" || name == "MESSAGE_ID");
}

std::optional<FieldMap> parseJournalJsonLine(std::string_view line) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return std::nullopt;
    FieldMap f;
    auto bytes = [](const nlohmann::json& a, std::string& out) {
        for (const auto& b : a)
            if (b.is_number_unsigned() || b.is_number_integer())
                out += static_cast<char>(b.get<int64_t>() & 0xff);
    };
    for (const auto& [k, v] : j.items()) {
        std::string s;
        if (v.is_string()) {
            s = v.get<std::string>();
        } else if (v.is_array() && !v.empty() && (v[0].is_string() || v[0].is_array())) {
            // Several values of one field: the first.
            if (v[0].is_string())
                s = v[0].get<std::string>();
            else
                bytes(v[0], s);
        } else if (v.is_array()) {
            bytes(v, s);
        } else if (v.is_number()) {
            s = v.dump();
        }
        f.emplace(k, std::move(s));
    }
    return f;
}

}  // namespace gpufault::coredump
