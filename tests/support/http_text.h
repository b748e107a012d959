// Comparing HTTP output in tests: the Date value blanked, so two runs'
// answers compare byte for byte.
#pragma once

#include <string>

namespace testnet {

inline std::string blank_date(const std::string &in) {
    std::string out;
    size_t p = 0, q;
    while ((q = in.find("Date: ", p)) != std::string::npos) {
        size_t e = in.find("\r\n", q);
        out.append(in, p, q + 6 - p);
        out += "D";
        p = e == std::string::npos ? in.size() : e;
    }
    out.append(in, p, std::string::npos);
    return out;
}

} // namespace testnet
