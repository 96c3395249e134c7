// The line decoder: physical lines → LogLines, outermost prefix first (see line_decoder.h).
//
// Layers, in order: line end / `> ` quotes / compose prefix / CRI record / JSON wrapper on the
// physical line; then on each logical line: carriage-return frames, one kernel-log prefix (kmsg,
// journald/syslog, dmesg), container and logger stamps, `[rankN]:`, the AMD_LOG_LEVEL prefix.
#include "collectors/prefix/line_decoder.h"

#include <algorithm>
#include <cstring>

#include "collectors/prefix/container.h"
#include "collectors/prefix/kernel_stamp.h"
#include "collectors/prefix/program_prefix.h"
#include "collectors/prefix/scan.h"
#include "collectors/runtime_log/amd_log_prefix.h"

namespace gpufault {

using namespace prefix;

namespace {

/// What a wrapper (CRI, JSON) said about the lines it carries.
struct Outer {
    std::optional<std::string> wall;
    std::optional<int64_t> wall_utc_s;
    std::optional<double> kernel_s;
    Origin origin = Origin::Unknown;
    std::string_view ident;
    std::optional<int64_t> ident_pid;
};

/// A CRI logical line being assembled from `P` records of one stream, or a Docker json-file
/// line from its pieces (`log` without the final `\n`).
struct PendingCri {
    bool active = false;
    bool docker = false;  ///< Docker json-file pieces, not CRI records
    uint64_t line = 0;
    std::string raw;   ///< the first piece's physical line
    std::string text;  ///< contents so far, at most kMaxLine bytes
    std::optional<std::string> wall;
    std::optional<int64_t> wall_utc_s;
};

void appendBounded(std::string& to, std::string_view s) {
    size_t room = LineDecoder::kMaxLine - std::min(to.size(), LineDecoder::kMaxLine);
    to.append(s.substr(0, std::min(room, s.size())));
}

}  // namespace

struct LineDecoder::State {
    ComposePrefix compose;
    bool after_kmsg = false;  ///< the previous line was a kmsg record: drop ` KEY=VALUE` lines
    PendingCri cri[2];        ///< stdout, stderr
    JsonPayload json;
    std::string unescaped, unglued;
    /// serviceRank() of the compose prefix of the line being fed, nullopt without one
    std::optional<int64_t> service;

    void logical(uint64_t line_no,
                 std::string_view raw,
                 std::string_view content,
                 const Outer* o,
                 const Emit& emit);
    void flushCri(const Emit& emit);
    void kernelPrefix(std::string_view& t, LogLine& l);
    void programPrefix(std::string_view& t, LogLine& l);
};

/// The kernel-log prefix of `t` (kmsg, journald/syslog, dmesg), removed into `l`.
void LineDecoder::State::kernelPrefix(std::string_view& t, LogLine& l) {
    KernelPrefix kp;
    bool kernel = false, kmsg = false;
    if (auto km = t.empty() || !isDigit(t[0]) ? std::nullopt : parseKmsgHeader(t)) {
        kp = std::move(*km);
        kernel = kmsg = after_kmsg = true;
    } else {
        kernel = parseSyslogPrefix(t, kp) || parseDmesgPrefix(t, kp);
        if (!kernel && !t.empty() && (t[0] == ' ' || t[0] == '\t')) {
            // A dmesg excerpt indented as a Markdown code block: `    [ 4778.915423] amdgpu …`.
            size_t b = t.find_first_not_of(" \t");
            if (b != std::string_view::npos && b <= 8 && t[b] == '[' &&
                parseDmesgPrefix(t.substr(b), kp) &&
                (kp.kernel_s || kp.wall || kp.wall_refused != WallRefusal::None)) {
                kp.consumed += b;
                kernel = true;
            }
        }
    }
    if (!kernel) return;
    t.remove_prefix(kp.consumed);
    if (kmsg && unescapeKmsg(t, unescaped)) t = unescaped;
    if (kp.kernel_s) l.time.kernel_s = kp.kernel_s;
    if (kp.wall) {
        l.time.wall = std::move(kp.wall);
        l.time.wall_utc_s = kp.wall_utc_s;
    } else if (!l.time.wall) {
        l.time.wall_refused = kp.wall_refused;  // a stamp was there, its time refused
    }
    if (kp.origin != Origin::Unknown) l.origin = kp.origin;
    if (!kp.ident.empty()) {
        l.ident = kp.ident;
        l.ident_pid = kp.ident_pid;
    }
}

/// Program-side prefixes of `t`: container/logger stamps, vLLM's `(… pid=N) `, `[rankN]:` /
/// `[defaultN]:`, the AMD_LOG_LEVEL prefix.
void LineDecoder::State::programPrefix(std::string_view& t, LogLine& l) {
    if (!t.empty() && isDigit(t[0])) {
        std::optional<std::string> wall;
        std::optional<int64_t> utc_s;
        if (size_t n = containerStampLength(t, wall, utc_s)) {
            t.remove_prefix(n);
            if (wall && !l.time.wall) {
                l.time.wall = std::move(wall);
                l.time.wall_utc_s = utc_s;
                l.time.wall_refused = WallRefusal::None;
            }
        }
        if (size_t n = loggerStampsLength(t)) {
            t.remove_prefix(n);
            if (removeGluedLoggerStamps(t, unglued)) t = unglued;
        }
    }
    if (!t.empty() && (t[0] == '(' || t[0] == '\x1b')) {
        if (auto w = parseWorkerPrefix(t)) {  // vLLM: one worker process per prefix
            l.log_pid = w->pid;
            l.rank = w->rank ? *w->rank : serviceRank(w->label);
            t.remove_prefix(w->len);
        }
    }
    size_t rank_len = 0;
    // (twice: a launcher's tag, then the program's own `[rankN]:`, which names the same rank)
    for (int i = 0; i < 2 && !t.empty() && t[0] == '['; ++i) {
        auto r = parseRankPrefix(t, &rank_len);
        if (!r) break;
        l.rank = r;
        t.remove_prefix(rank_len);
    }
    if (auto amd = parseAmdLogPrefix(t)) {
        l.amd_level = amd->level;
        l.log_pid = amd->pid;
        l.runtime_tid = amd->runtime_tid;
        if (amd->runtime_us) l.time.runtime_us = amd->runtime_us;
        t.remove_prefix(std::min(amd->message_offset, t.size()));
    }
}

/// One logical line: strips the inner prefixes, fills the LogLine and emits it.
void LineDecoder::State::logical(uint64_t line_no,
                                 std::string_view raw,
                                 std::string_view content,
                                 const Outer* o,
                                 const Emit& emit) {
    LogLine l;
    l.line = line_no;
    l.raw = raw;
    if (o) {
        l.time.wall = o->wall;
        l.time.wall_utc_s = o->wall_utc_s;
        l.time.kernel_s = o->kernel_s;
        l.origin = o->origin;
        l.ident = o->ident;
        l.ident_pid = o->ident_pid;
    }
    std::string_view t = afterCarriageReturn(trimLineEnd(content));
    if (t.size() > kMaxLine) t = t.substr(0, kMaxLine);
    l.rank = service;
    kernelPrefix(t, l);
    programPrefix(t, l);
    l.text = t;
    emit(l);
}

void LineDecoder::State::flushCri(const Emit& emit) {
    PendingCri* order[2] = {&cri[0], &cri[1]};
    if (order[1]->active && (!order[0]->active || order[1]->line < order[0]->line))
        std::swap(order[0], order[1]);
    for (PendingCri* p : order) {
        if (!p->active) continue;
        p->active = false;
        Outer o;
        o.wall = p->wall;
        o.wall_utc_s = p->wall_utc_s;
        logical(p->line, p->raw, p->text, &o, emit);
    }
}

LineDecoder::LineDecoder() : state_(new State) {}
LineDecoder::~LineDecoder() {
    delete state_;
}

void LineDecoder::feed(uint64_t line_no, std::string_view raw, const Emit& emit) {
    State& st = *state_;
    quiet_ = false;
    // A UTF-8 byte order mark (Windows editors, PowerShell's Out-File) starts a file, or a
    // file concatenated into the stream: never text of the line.
    if (raw.starts_with("\xEF\xBB\xBF")) raw.remove_prefix(3);
    std::string_view s = stripReplyQuotes(trimLineEnd(raw));
    if (st.after_kmsg) {
        if (isKmsgContinuation(s)) return;
        st.after_kmsg = false;
    }
    st.service.reset();
    if (size_t n = st.compose.strip(s)) {
        // `svc-1  | `: the name before the padding names the container (the process stream)
        std::string_view name = s.substr(0, s.find_first_of(" |"));
        st.service = serviceRank(name);
        s.remove_prefix(n);
    }

    if (auto h = s.empty() || !isDigit(s[0]) ? std::nullopt : parseCriHeader(s)) {
        PendingCri& p = st.cri[h->is_stderr ? 1 : 0];
        std::string_view content = s.substr(h->content_offset);
        if (h->partial) {
            // A `P` record ends where the runtime split the line (16 KiB, or a write): its
            // trailing blanks are the logical line's text (`Arg1: float* a1 ` + `= ptr:…`).
            // Only the record's own line end goes.
            const char* from = content.data();
            std::string_view rest(from, static_cast<size_t>(raw.data() + raw.size() - from));
            while (!rest.empty() && (rest.back() == '\n' || rest.back() == '\r'))
                rest.remove_suffix(1);
            if (rest.size() >= content.size()) content = rest;
        }
        if (!p.active && h->partial) {
            p.active = true;
            p.docker = false;
            p.line = line_no;
            p.raw.assign(raw.substr(0, kMaxLine));
            p.text.clear();
            p.wall = h->wall;
            p.wall_utc_s = h->wall_utc_s;
        }
        if (p.active) {
            appendBounded(p.text, content);
            if (h->partial) return;
            p.active = false;
            Outer o;
            o.wall = p.wall;
            o.wall_utc_s = p.wall_utc_s;
            st.logical(p.line, p.raw, p.text, &o, emit);
            return;
        }
        Outer o;
        o.wall = std::move(h->wall);
        o.wall_utc_s = h->wall_utc_s;
        st.logical(line_no, raw, content, &o, emit);
        return;
    }
    const bool json =
        !s.empty() && (s[0] == '{' || s[0] == ' ' || s[0] == '\t') && parseJsonLine(s, st.json);
    const int docker = json ? st.json.docker_stream : -1;
    // Pieces continue only in a record of their own kind (a Docker piece in the next Docker
    // record of its stream, a CRI piece in the next CRI record of its stream).
    for (const PendingCri& p : st.cri)
        if (p.active && (docker < 0 || !p.docker)) {
            st.flushCri(emit);
            break;
        }

    if (json) {
        Outer o;
        o.wall = st.json.wall;
        o.wall_utc_s = st.json.wall_utc_s;
        o.kernel_s = st.json.kernel_s;
        o.origin = st.json.origin;
        o.ident = st.json.ident;
        o.ident_pid = st.json.ident_pid;
        std::string_view text = st.json.text;
        std::string joined;
        if (docker >= 0) {  // FORMATS.md §9.4: a long line is split into pieces without `\n`
            PendingCri& p = st.cri[docker];
            const bool piece = !text.ends_with('\n');
            if (!p.active && piece) {
                p.active = true;
                p.docker = true;
                p.line = line_no;
                p.raw.assign(raw.substr(0, kMaxLine));
                p.text.clear();
                p.wall = o.wall;
                p.wall_utc_s = o.wall_utc_s;
            }
            if (p.active) {
                appendBounded(p.text, text);
                if (piece) return;
                p.active = false;
                joined = std::move(p.text);
                text = joined;
                line_no = p.line;
                raw = p.raw;
                o.wall = p.wall;
                o.wall_utc_s = p.wall_utc_s;
            }
        }
        if (text.ends_with('\n')) text.remove_suffix(1);  // Docker keeps the line's `\n`
        for (size_t pos = 0;;) {
            size_t nl = text.find('\n', pos);
            st.logical(line_no,
                       raw,
                       text.substr(pos, nl == std::string_view::npos ? nl : nl - pos),
                       &o,
                       emit);
            if (nl == std::string_view::npos) break;
            pos = nl + 1;
        }
        return;
    }
    st.logical(line_no, raw, s, nullptr, emit);
}

bool LineDecoder::feedBareAmd(uint64_t line_no, std::string_view raw, LogLine& l) {
    State& st = *state_;
    // What feed() does with a line starting with ':': no quote, compose, CRI or JSON layer
    // applies (each needs another first character), nor a kernel-log prefix (kmsg, syslog and
    // dmesg need a digit, letter, '[', '<' or blank); only the AMD prefix can.
    if (raw.empty() || raw[0] != ':' || st.cri[0].active || st.cri[1].active) return false;
    std::string_view t = trimLineEnd(raw);
    if (std::memchr(t.data(), '\r', t.size())) return false;  // afterCarriageReturn() would cut
    if (t.size() > kMaxLine) t = t.substr(0, kMaxLine);
    auto amd = parseAmdLogPrefix(t);
    if (!amd) return false;
    bareAmdSeen();
    l.line = line_no;
    l.raw = raw;
    l.amd_level = amd->level;
    l.log_pid = amd->pid;
    l.runtime_tid = amd->runtime_tid;
    l.time.runtime_us = amd->runtime_us;
    l.text = t.substr(std::min(amd->message_offset, t.size()));
    return true;
}

size_t LineDecoder::trimmedSize(std::string_view raw) {
    return trimLineEnd(raw).size();
}

bool LineDecoder::criPending() const {
    return state_->cri[0].active || state_->cri[1].active;
}

void LineDecoder::bareAmdSeen() {
    state_->after_kmsg = false;
    state_->compose.other();
    quiet_ = !criPending() && state_->compose.settled();
}

void LineDecoder::finish(const Emit& emit) {
    quiet_ = false;
    state_->flushCri(emit);
}

}  // namespace gpufault
