// Files that hold a newest-first excerpt (`journalctl -r`) and an oldest-first one of other
// faults, one after the other, built from the messages of real fixture blocks
// (tests/data/real) in each prefix form the kernel log comes in: dmesg `[%5lu.%06lu] `, and
// journalctl's short (`Jan 02 12:00:00 host kernel: `, to the second, so lines tie), short-iso
// and short-precise.
#pragma once

#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace gpufault::testing {

/// The prefix forms the mixed files are written in.
enum class Form { Dmesg, Short, ShortIso, ShortPrecise };
inline const Form kForms[] = {Form::Dmesg, Form::Short, Form::ShortIso, Form::ShortPrecise};

inline const char* formName(Form f) {
    switch (f) {
        case Form::Dmesg:
            return "dmesg";
        case Form::Short:
            return "short";
        case Form::ShortIso:
            return "short-iso";
        case Form::ShortPrecise:
            return "short-precise";
    }
    return "?";
}

/// Lines `first`..`last` (1-based) of fixture `name`, each without its dmesg `[…] ` or
/// syslog/journald `<stamp> <host> kernel: ` prefix: the kernel messages alone.
inline std::vector<std::string> fixtureMessages(const std::string& name,
                                                size_t first,
                                                size_t last) {
    std::ifstream in(std::string(std::getenv("GPUFAULT_TEST_DATA")) + "/real/" + name);
    EXPECT_TRUE(in) << name;
    std::vector<std::string> out;
    size_t n = 0;
    for (std::string l; std::getline(in, l);) {
        if (++n < first || n > last) continue;
        if (!l.empty() && l[0] == '[') {
            l = l.substr(l.find("] ") + 2);
        } else if (size_t k = l.find(" kernel: "); k != std::string::npos) {
            l = l.substr(k + 9);
        }
        out.push_back(l);
    }
    EXPECT_EQ(out.size(), last - first + 1) << name;
    return out;
}

/// `msgs` as kernel lines of form `f`, the first stamped `start_us` (µs since boot for dmesg,
/// since 00:00 of Jan 02 for the journal forms), each `step_us` after the one before.
inline std::vector<std::string> stamped(Form f,
                                        int64_t start_us,
                                        int64_t step_us,
                                        const std::vector<std::string>& msgs) {
    std::vector<std::string> out;
    int64_t t = start_us;
    for (const auto& m : msgs) {
        int64_t s = t / 1000000, us = t % 1000000;
        int hh = static_cast<int>(s / 3600 % 24), mm = static_cast<int>(s / 60 % 60),
            ss = static_cast<int>(s % 60);
        char b[96];
        switch (f) {
            case Form::Dmesg:
                std::snprintf(b, sizeof b, "[%5" PRId64 ".%06" PRId64 "] ", s, us);
                break;
            case Form::Short:
                std::snprintf(b, sizeof b, "Jan 02 %02d:%02d:%02d host kernel: ", hh, mm, ss);
                break;
            case Form::ShortIso:
                std::snprintf(
                    b, sizeof b, "2025-01-02T%02d:%02d:%02d+0100 host kernel: ", hh, mm, ss);
                break;
            case Form::ShortPrecise:
                std::snprintf(b,
                              sizeof b,
                              "Jan 02 %02d:%02d:%02d.%06" PRId64 " host kernel: ",
                              hh,
                              mm,
                              ss,
                              us);
                break;
        }
        out.push_back(b + m);
        t += step_us;
    }
    return out;
}

/// `v` last line first (`journalctl -r`).
inline std::vector<std::string> newestFirst(std::vector<std::string> v) {
    return {v.rbegin(), v.rend()};
}

/// `a` then `b`.
inline std::vector<std::string> concat(std::vector<std::string> a,
                                       const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

/// Every occurrence of `from` in each line replaced by `to` (another GPU's address).
inline std::vector<std::string> replaced(std::vector<std::string> v,
                                         const std::string& from,
                                         const std::string& to) {
    for (auto& l : v)
        for (size_t p = l.find(from); p != std::string::npos; p = l.find(from, p + to.size()))
            l.replace(p, from.size(), to);
    return v;
}

}  // namespace gpufault::testing
