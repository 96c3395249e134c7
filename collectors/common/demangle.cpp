#include "collectors/common/demangle.h"

#include <cxxabi.h>

#include <cstdlib>

namespace gpufault {

std::string demangle(std::string_view name) {
    if (name.size() < 3 || name.substr(0, 2) != "_Z" || name.size() > 4096)
        return std::string(name);
    std::string mangled(name);
    int status = 0;
    char* out = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
    if (status != 0 || !out) {
        std::free(out);
        return mangled;
    }
    std::string r(out);
    std::free(out);
    return r;
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
