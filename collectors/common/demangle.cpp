#include "collectors/common/demangle.h"

#include <libiberty/demangle.h>

#include <csetjmp>

namespace gpufault {

namespace {

/// What the demangler printed so far, and where to jump once it would pass the cap.
struct Printed {
    std::string out;
    std::jmp_buf too_long;
};

extern "C" void appendPrinted(const char* s, size_t n, void* opaque) {
    auto* p = static_cast<Printed*>(opaque);
    // A name whose back-references nest (`…S0_IS1_S1_E…`) doubles its text at each level:
    // stop printing (libiberty's callback demangler allocates nothing on the heap, so jumping
    // out of it leaks nothing).
    if (p->out.size() + n > kMaxDemangled) std::longjmp(p->too_long, 1);
    p->out.append(s, n);
}

}  // namespace

std::string demangle(std::string_view name) {
    if (name.size() < 3 || name.substr(0, 2) != "_Z" || name.size() > 4096)
        return std::string(name);
    std::string mangled(name);
    Printed p;
    if (setjmp(p.too_long) != 0) return mangled;  // longer than kMaxDemangled
    // The flags __cxa_demangle passes: the same text.
    if (cplus_demangle_v3_callback(mangled.c_str(), DMGL_PARAMS | DMGL_TYPES, appendPrinted, &p) ==
            0 ||
        p.out.empty())
        return mangled;
    return p.out;
}

std::string shortKernelName(std::string_view name, size_t max) {
    std::string d = demangle(name);
    // Drop the parameter list: the last top-level "(...)" (template arguments may hold parens).
    if (!d.empty() && d.back() == ')') {
        int depth = 0;
        for (size_t i = d.size(); i-- > 0;) {
            if (d[i] == ')')
                ++depth;
            else if (d[i] == '(' && --depth == 0) {
                d.resize(i);
                break;
            }
        }
    }
    if (d.size() > max && max > 3) d = d.substr(0, max - 3) + "...";
    return d;
}

}  // namespace gpufault
