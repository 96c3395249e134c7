// HIP/CUDA/PyTorch error text in program output (FORMATS.md §9.5, §9.6) and the math
// libraries' missing Tensile code objects (§9.8). AMD_LOG_LEVEL lines belong to hip_log.cpp.
#include "collectors/runtime_log/runtime_error.h"

#include <optional>
#include <string>
#include <vector>

#include "collectors/common/text.h"
#include "collectors/runtime_log/error_names.h"
#include "collectors/runtime_log/runtime_common.h"

namespace gpufault {

namespace {

constexpr size_t kMaxMessage = 256;
constexpr size_t kMaxPending = 1024;  ///< error lines waiting for their rank's next line

bool isUpper(char c) {
    return c >= 'A' && c <= 'Z';
}

/// The first non-benign `hipErrorX` / `cudaErrorX` identifier in `t` as programs print it, else
/// the first CUDA driver name (`CUDA_ERROR_ILLEGAL_ADDRESS`, cuGetErrorName(): TensorFlow/XLA,
/// CuPy and Numba print these; FORMATS.md §9.5) not defined or assigned on the line.
std::optional<std::string_view> firstErrorToken(std::string_view t) {
    for (std::string_view key : {std::string_view("hipError"),
                                 std::string_view("cudaError"),
                                 std::string_view("CUDA_ERROR_")}) {
        const bool driver = key[0] == 'C';
        for (size_t i = t.find(key); i != std::string_view::npos; i = t.find(key, i + 1)) {
            if (i > 0 && rt::isIdentChar(t[i - 1])) continue;
            if (i + key.size() >= t.size() || !isUpper(t[i + key.size()])) continue;  // hipError_t
            std::string_view name = rt::identAt(t, i);
            if (driver &&
                (!errnames::isDriverName(name) || t.find("#define") != std::string_view::npos ||
                 text::startsWith(text::trimLeft(t.substr(i + name.size())), "=")))
                continue;
            if (!errnames::isBenign(name)) return name;
        }
    }
    return std::nullopt;
}

/// True when `t` names a benign status (`CUDA_ERROR_NOT_READY`, `cudaSuccess` …): its error
/// text is a poll's answer, no error.
bool namesBenign(std::string_view t) {
    for (std::string_view key : {std::string_view("hipError"),
                                 std::string_view("cudaError"),
                                 std::string_view("CUDA_ERROR_"),
                                 std::string_view("Success"),
                                 std::string_view("CUDA_SUCCESS")}) {
        for (size_t i = t.find(key); i != std::string_view::npos; i = t.find(key, i + 1)) {
            size_t b = i;
            while (b > 0 && rt::isIdentChar(t[b - 1])) --b;
            if (errnames::isBenign(rt::identAt(t, b))) return true;
        }
    }
    return false;
}

/// `gfx…` target named in `s` (`gfx1100`, `*gfx906*`), "" if none.
std::string_view gfxIn(std::string_view s) {
    size_t g = s.find("gfx");
    if (g == std::string_view::npos) return {};
    size_t e = g + 3;
    while (e < s.size() && ((s[e] >= '0' && s[e] <= '9') || (s[e] >= 'a' && s[e] <= 'f'))) ++e;
    return e > g + 3 ? s.substr(g, e - g) : std::string_view{};
}

Kind kindOf(std::optional<std::string_view> name) {
    return name && errnames::isMissingCodeObject(*name) ? Kind::MissingCodeObject
                                                        : Kind::RuntimeError;
}

/// PyTorch's caching allocator after `CUDA`/`HIP` (outOfMemory()).
constexpr std::string_view kOutOfMemory = " out of memory. Tried to allocate ";
/// The error-check macro of CUDA samples and answers (`fprintf(stderr, "GPUassert: %s %s %d\n",
/// cudaGetErrorString(code), file, line)`), hipified as well: the error's text follows.
constexpr std::string_view kGpuAssert = "GPUassert: ";

/// Where `t` holds a cudaGetErrorString()/hipGetErrorString() text distinctive enough to stand
/// for its error wherever a program prints it (glog `Check failed: error == cudaSuccess (77 vs. 0)
/// TEXT`, TensorRT `Error Code 1: Cuda Runtime (TEXT)`, `Warp CUDA error 700: TEXT`, `X failed:
/// TEXT`): the illegal address, illegal instruction and launch failure texts of FORMATS.md §9.5;
/// never on a warning line.
std::optional<size_t> distinctiveErrorText(std::string_view t) {
    // As printed, not mentioned: not in quotes (`assert "…" in msg`, a FAQ), and nothing but
    // the end of the line, `)`, ` (`, `.` or `,` after it (`… was encountered is reported ... ok`).
    auto printed = [&](size_t at, size_t len) {
        if (at > 0 && (t[at - 1] == '"' || t[at - 1] == '\'' || t[at - 1] == '`')) return false;
        std::string_view after = text::trimRight(t.substr(at + len));
        return after.empty() || after[0] == ')' || after[0] == '.' || after[0] == ',' ||
               after.starts_with(" (");
    };
    std::optional<size_t> hit;
    constexpr std::string_view kEnc = "was encountered";
    for (size_t w = t.find(kEnc); w != std::string_view::npos && !hit; w = t.find(kEnc, w + 1)) {
        for (std::string_view head : {std::string_view("an illegal memory access "),
                                      std::string_view("an illegal instruction ")})
            if (w >= head.size() && t.substr(w - head.size(), head.size()) == head &&
                printed(w - head.size(), head.size() + kEnc.size()))
                hit = w - head.size();
    }
    constexpr std::string_view kLaunch = "unspecified launch failure";
    if (size_t u = t.find(kLaunch);
        !hit && u != std::string_view::npos && printed(u, kLaunch.size()))
        hit = u;
    // c10's CUDA_WARN / `HIP warning:` after the error was reported: no error of its own
    if (hit && t.find("arning") != std::string_view::npos) return std::nullopt;
    return hit;
}

/// A ROCm build's line (the words HIP or ROCm, or `hip` starting a word: `hipMemcpy`, not
/// `ship.cu` or `chip`): the text maps to the HIP name first.
bool saysHip(std::string_view t) {
    if (t.find("HIP") != std::string_view::npos || t.find("ROCm") != std::string_view::npos)
        return true;
    for (size_t h = t.find("hip"); h != std::string_view::npos; h = t.find("hip", h + 1)) {
        const char b = h > 0 ? t[h - 1] : ' ';
        if (!((b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9')))
            return true;
    }
    return false;
}

/// PyTorch's out-of-memory message printed on its own, as printed: `CUDA out of memory. Tried to
/// allocate` (or HIP) not inside quotes (a tip quoting it). The position of kOutOfMemory.
std::optional<size_t> bareOutOfMemory(std::string_view t) {
    size_t tried = t.find("Tried to allocate ");  // 'T': few candidates on a line
    if (tried == std::string_view::npos || tried + 18 < kOutOfMemory.size()) return std::nullopt;
    size_t at = tried + 18 - kOutOfMemory.size();
    if (t.substr(at, kOutOfMemory.size()) != kOutOfMemory) return std::nullopt;
    std::string_view before = t.substr(0, at);
    size_t word = before.ends_with("CUDA") ? 4 : before.ends_with("HIP") ? 3 : 0;
    if (word == 0) return std::nullopt;
    if (at > word && (before[at - word - 1] == '"' || before[at - word - 1] == '\''))
        return std::nullopt;
    return at;
}

/// The text after `GPUassert: ` when it is an error's text: not a format string (`%s`, a
/// compiler quoting the macro) nor the success text `no error`.
std::optional<std::string_view> gpuAssertText(std::string_view t) {
    size_t g = t.find(kGpuAssert);
    if (g == std::string_view::npos) return std::nullopt;
    std::string_view rest = t.substr(g + kGpuAssert.size());
    if (rest.empty() || rest[0] == '%' || rest.starts_with("no error")) return std::nullopt;
    return rest;
}

class RuntimeErrorMatcher final : public Matcher {
  public:
    void feed(const LogLine& l, Sink& out) override {
        std::string_view t = l.text;
        // prefilter: error/Error/hipError…, and the driver's CUDA_ERROR_… names
        if (t.find("rror") == std::string_view::npos &&
            t.find("CUDA_ERROR_") == std::string_view::npos) {
            flushPending(out, l.rank);
            if (t.find("No paths matched") != std::string_view::npos) return blas(l, out);
            // PyTorch's message printed on its own (a warning, a log that drops the exception's
            // name), and the common user macro `GPUassert: %s %s %d` (cudaGetErrorString()).
            if (auto o = bareOutOfMemory(t)) return outOfMemory(l, t, *o, out);
            if (auto g = gpuAssertText(t)) return errorText(l, *g, false, out);
            if (t.find("no kernel image is available") != std::string_view::npos)
                return noKernelImage(l, out);
            if (auto d = distinctiveErrorText(t))
                return errorText(l, t.substr(*d), saysHip(t), out);
            return;
        }
        if (size_t s = t.find("Search for `"); s != std::string_view::npos)
            return searchLine(l, t.substr(s + 12), out);
        flushPending(out, l.rank);
        // AMD_LOG_LEVEL lines and HIP's own messages are hip_log.cpp's.
        if (rt::amdFieldsAtStart(l).present || t.find("Returned hip") != std::string_view::npos ||
            t.find("hipErrorNoBinaryForGpu: ") != std::string_view::npos)
            return;
        if (size_t p = t.find("Program hit "); p != std::string_view::npos)
            return programHit(l, t.substr(p + 12), out);
        if (size_t o = t.find(kOutOfMemory); o != std::string_view::npos)
            return outOfMemory(l, t, o, out);
        if (t.find("rocBLAS error: ") != std::string_view::npos ||
            t.find("rocblaslt error: ") != std::string_view::npos ||
            t.find("No paths matched ") != std::string_view::npos)
            return blas(l, out);
        for (auto [key, hip] : {std::pair{std::string_view("CUDA error: "), false},
                                std::pair{std::string_view("HIP error: "), true},
                                std::pair{std::string_view("ROCm error: "), true},
                                // Triton (torch.compile), CHECK macros' `CUDA Error: `
                                std::pair{std::string_view("Triton Error [CUDA]: "), false},
                                std::pair{std::string_view("Triton Error [HIP]: "), true},
                                std::pair{std::string_view("CUDA Error: "), false}}) {
            if (size_t e = t.find(key); e != std::string_view::npos)
                return errorText(l, t.substr(e + key.size()), hip, out);
        }
        if (t.find("no kernel image is available") != std::string_view::npos)
            return noKernelImage(l, out);
        if (auto g = gpuAssertText(t)) return errorText(l, *g, false, out);
        if (auto name = firstErrorToken(t)) {
            Evidence e = rt::baseEvidence(kindOf(name), l, {}, errnames::vendorOfName(*name));
            e.reason = std::string(*name);
            folder_.add(std::move(e), out);
        } else if (auto d = distinctiveErrorText(t)) {
            errorText(l, t.substr(*d), saysHip(t), out);
        }
    }

    void finish(Sink& out) override {
        flushPending(out);
        folder_.flush(out);
    }
    void quiet(Sink& out) override {
        flushPending(out);
        folder_.publish(out);
    }

    bool idle() const override { return pending_.empty(); }  // folded records wait for no line
    std::optional<uint64_t> foldedSince() const override { return folder_.firstLine(); }
    std::optional<uint64_t> closedFoldAround(uint64_t line) const override {
        return folder_.closedAround(line);
    }
    void closeFolded(uint64_t before, Sink& out) override { folder_.closeBefore(before, out); }
    /// A record still pending_ (waiting for its next line) before `at` is complete: its next
    /// line is the fault's (`at`, or a line before it this matcher has seen), never the
    /// `Search for` line that would name it, so it goes into the folder first, as feeding that
    /// line would do (rt::Folder also remembers `at`: no record before it folds a later repeat).
    void closeProcess(uint64_t at,
                      std::optional<int64_t> pid,
                      std::optional<int64_t> rank,
                      Sink& out) override {
        flushPendingBefore(at, out);
        folder_.closeProcess(at, pid, rank, out);
    }
    std::optional<uint64_t> openSince() const override {
        auto first = folder_.firstLine();
        for (const auto& e : pending_)
            if (!first || e.line < *first) first = e.line;
        return first;
    }

  private:
    /// Completes the records waiting for their next line: those of `rank` and the rank-less
    /// ones (a rank's next line is the next line of that rank: MPI ranks interleave theirs),
    /// or all of them when the line states no rank.
    void flushPending(Sink& out, std::optional<int64_t> rank = std::nullopt) {
        if (pending_.empty()) return;
        std::vector<Evidence> keep;
        for (auto& e : pending_) {
            if (!e.rank || !rank || *e.rank == *rank) {
                folder_.add(std::move(e), out);
            } else {
                keep.push_back(std::move(e));
            }
        }
        pending_ = std::move(keep);
    }
    void flushPendingBefore(uint64_t at, Sink& out) {
        std::vector<Evidence> keep;
        for (auto& e : pending_) {
            if (e.line < at) {
                folder_.add(std::move(e), out);
            } else {
                keep.push_back(std::move(e));
            }
        }
        pending_ = std::move(keep);
    }

    /// PyTorch `CUDA error: %s` / hipified `HIP error: %s` (c10/cuda/CUDAException.cpp, after
    /// `torch.AcceleratorError: `, `RuntimeError: `, `what():  `, an NCCL watchdog line …),
    /// ggml's `ROCm error: %s`, or plain program output. The text is mapped back to a name.
    void errorText(const LogLine& l, std::string_view msg, bool hip, Sink& out) {
        msg = text::trim(msg);
        if (msg.empty()) return;
        std::optional<std::string_view> name = firstErrorToken(l.text);
        if (!name && namesBenign(msg)) return;  // `CUDA Error: CUDA_ERROR_NOT_READY`
        if (!name) name = errnames::nameForText(msg, hip);
        if (!name && msg[0] >= 'A' &&
            msg[0] <= 'Z') {  // retyped by hand: `Invalid device function`
            std::string lower(msg);
            lower[0] = static_cast<char>(lower[0] - 'A' + 'a');
            name = errnames::nameForText(lower, hip);  // the name is the table's, not `lower`'s
        }
        if (name && errnames::isBenign(*name)) return;
        const char* vendor = name ? errnames::vendorOfName(*name) : nullptr;
        if (!vendor) vendor = hip ? "amd" : "nvidia";
        Evidence e = rt::baseEvidence(kindOf(name), l, {}, vendor);
        if (name) e.reason = std::string(*name);
        e.setAttr("message", std::string(msg.substr(0, std::min(msg.size(), kMaxMessage))));
        // PyTorch's next line (of this rank) may name the error exactly
        if (pending_.size() >= kMaxPending) {
            folder_.add(std::move(pending_.front()), out);
            pending_.erase(pending_.begin());
        }
        pending_.push_back(std::move(e));
    }

    /// "Search for `NAME' in https://… for more information." (get_cuda_error_help): the name
    /// is exact and overrides the one mapped from the previous line's text (a ROCm build says
    /// "CUDA error" but names hipErrorX: vendor amd). It is PyTorch's hint after that line, not
    /// an error of its own: without the error line right before it (a log cut there), no record.
    void searchLine(const LogLine& l, std::string_view rest, Sink& out) {
        std::string_view name = rt::identAt(rest, 0);
        if (name.empty() || rest.substr(name.size(), 1) != "'") return flushPending(out, l.rank);
        // the error line of this rank (the last one when the hint states no rank)
        auto it = pending_.end();
        for (auto i = pending_.begin(); i != pending_.end(); ++i)
            if (!l.rank || !i->rank || *i->rank == *l.rank) it = i;
        if (it == pending_.end()) return;
        Evidence e = std::move(*it);
        pending_.erase(it);
        if (errnames::isBenign(name)) return;
        if (e.line != l.line) rt::appendRaw(e.raw, l.raw);
        e.kind = kindOf(name);
        e.reason = std::string(name);
        if (const char* v = errnames::vendorOfName(name)) e.vendor = v;
        folder_.add(std::move(e), out);
    }

    /// PyTorch's caching allocator (c10/cuda/CUDACachingAllocator.cpp): `[torch.OutOfMemoryError:
    /// |RuntimeError: ]CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has …` (`HIP out of
    /// memory` on ROCm): an alloc_failure, attr `requested` as printed (`2.00 GiB`) and `message`.
    void outOfMemory(const LogLine& l, std::string_view t, size_t at, Sink& out) {
        std::string_view before = t.substr(0, at);
        const char* vendor = before.ends_with("HIP")    ? "amd"
                             : before.ends_with("CUDA") ? "nvidia"
                                                        : nullptr;
        Evidence e = rt::baseEvidence(Kind::AllocFailure, l, {}, vendor);
        std::string_view rest = t.substr(at + kOutOfMemory.size());
        size_t end = rest.find_first_of(".(;");
        // `2.00 GiB.`: the amount ends at the `.` after its unit
        if (size_t unit = rest.substr(0, 24).find("iB"); unit != std::string_view::npos)
            end = unit + 2;
        std::string_view amount = text::trim(rest.substr(0, std::min(end, rest.size())));
        if (!amount.empty() && amount.size() <= 32) e.setAttr("requested", std::string(amount));
        // from `CUDA`/`HIP` on (without the exception's name)
        std::string_view msg = t.substr(vendor ? at - (*vendor == 'a' ? 3 : 4) : at + 1);
        e.setAttr("message", std::string(msg.substr(0, std::min(msg.size(), kMaxMessage))));
        out.evidence(std::move(e));
    }

    /// compute-sanitizer `Program hit cudaErrorX (error N) due to "TEXT" on CUDA API call to F.`,
    /// docs' older `Program hit TEXT (error N) on CUDA API call to F.`, cuda-memcheck
    /// `Program hit error N on CUDA API call to F` (§9.5). A runtime_error, not a sanitizer report.
    void programHit(const LogLine& l, std::string_view s, Sink& out) {
        std::optional<std::string_view> name;
        std::optional<int64_t> code;
        if (s.starts_with("error ")) {
            code = text::parseDec(s.substr(6));
        } else if (size_t p = s.find(" (error "); p != std::string_view::npos) {
            code = text::parseDec(s.substr(p + 8));
            std::string_view head = s.substr(0, p);
            if (rt::identAt(head, 0).size() == head.size()) {
                name = head;
            } else {
                name = errnames::nameForText(head, false);
            }
        } else {
            return;
        }
        if (!name && code) name = errnames::nameForCode(static_cast<long>(*code), false);
        if (name && errnames::isBenign(*name)) return;
        Evidence e = rt::baseEvidence(kindOf(name), l, {}, "nvidia");
        if (name && !name->empty()) e.reason = std::string(*name);
        if (code) e.setAttr("code", std::to_string(*code));
        if (auto api = text::after(s, "API call to ", " .")) e.setAttr("api", std::string(*api));
        folder_.add(std::move(e), out);
    }

    /// rocBLAS/hipBLASLt (tensile_host.cpp): `rocBLAS error: Cannot read PATH: ERR[ for GPU arch
    /// : gfxN]`, `… error: Could not load PATH` (a lazy library,
    /// `TensileLibrary_lazy_gfx1103.dat`), `… error: Could not initialize Tensile host…` / `…
    /// Tensile library`, `rocblaslt warning: No paths matched PATH. …` → missing_code_object,
    /// attr target (gfx…) where the text names it.
    void blas(const LogLine& l, Sink& out) {
        std::string_view t = l.text;
        Evidence e = rt::baseEvidence(Kind::MissingCodeObject, l, {}, "amd");
        e.setAttr("library", t.find("rocBLAS") != std::string_view::npos ? "rocBLAS" : "hipBLASLt");
        std::string_view target;
        if (size_t c = t.find("Cannot read "); c != std::string_view::npos) {
            std::string_view path = text::after(t.substr(c), "Cannot read ", " ").value_or("");
            if (path.ends_with(':')) path.remove_suffix(1);
            e.setAttr("path", std::string(path));
            auto arch = text::after(t, "for GPU arch : ");
            target = arch ? gfxIn(*arch) : gfxIn(path);
        } else if (size_t n = t.find("No paths matched "); n != std::string_view::npos) {
            std::string_view path = text::after(t.substr(n), "No paths matched ", " ").value_or("");
            if (path.ends_with('.')) path.remove_suffix(1);
            e.setAttr("path", std::string(path));
            target = gfxIn(path);
        } else if (size_t d = t.find("Could not load "); d != std::string_view::npos) {
            // `Could not load PATH` (the lazy-loading library of one arch,
            // TensileLibrary_lazy_gfx1103.dat; a Windows path may hold blanks: the line's rest)
            std::string_view path = text::trim(t.substr(d + 15));
            e.setAttr("path", std::string(path.substr(0, std::min<size_t>(path.size(), 1024))));
            target = gfxIn(path);
        } else if (t.find("Could not initialize Tensile host") != std::string_view::npos) {
            e.setAttr("message", "Could not initialize Tensile host");
        } else if (t.find("Could not initialize Tensile library") != std::string_view::npos) {
            e.setAttr("message", "Could not initialize Tensile library");
        } else {
            return;
        }
        if (!target.empty()) e.setAttr("target", std::string(target));
        folder_.add(std::move(e), out);
    }

    /// `no kernel image is available for execution on the device` without a name or prefix.
    void noKernelImage(const LogLine& l, Sink& out) {
        auto name = firstErrorToken(l.text);
        Evidence e = rt::baseEvidence(
            Kind::MissingCodeObject, l, {}, name ? errnames::vendorOfName(*name) : nullptr);
        if (name && errnames::isMissingCodeObject(*name)) e.reason = std::string(*name);
        folder_.add(std::move(e), out);
    }

    rt::Folder folder_;
    /// error-text lines whose next line (of their rank) may be `Search for`: one per rank
    std::vector<Evidence> pending_;
};

}  // namespace

std::unique_ptr<Matcher> makeRuntimeErrorMatcher() {
    return std::make_unique<RuntimeErrorMatcher>();
}

}  // namespace gpufault
