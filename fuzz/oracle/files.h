// The file-answer fuzz target's oracle: lib/files' decision and its parsers
// on arbitrary field values, held to the invariants a file answer relies on.
//
// Input: 8 control bytes, then field lines separated by '\n'.
//   byte 0: bit 0 HEAD (else GET), bit 1 WEIR_FILE_NO_RANGES, bit 2 a size
//           past 4 GiB (bytes 1-4 shifted up by 32 bits).
//   bytes 1-4: the file's size (little-endian); bytes 5-7: its mtime's low
//           bits (now is fixed, so some mtimes are in the future).
//   each line: its first byte picks the field (If-Match, If-None-Match,
//           If-Modified-Since, If-Unmodified-Since, If-Range, Range), the
//           rest is the value.
// Invariants: the status is one decide_file can give for GET/HEAD; a 200
// is the whole file, a 206 a non-empty range inside it (never for HEAD or
// without ranges), no offset arithmetic wraps; Last-Modified is never after
// now; every value that parses as an HTTP-date survives format-then-parse;
// a single range from parse_range lies inside the file.
//
// The oracle lives in this header so fuzz/files.cc (the libFuzzer entry) and
// tests/unit/files/test_files_corpus.cc (which replays fuzz/corpus/files)
// share it.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "files/file_answer.h"
#include "files/http_date.h"
#include "files/validators.h"

namespace files_fuzz {

constexpr size_t kControl = 8;
constexpr int64_t kNow = 1700000000;

inline const char *one(const uint8_t *data, size_t size) {
    using namespace weir::files;
    if (size < kControl)
        return nullptr;
    FileFacts f;
    uint32_t sz;
    std::memcpy(&sz, data + 1, 4);
    f.size = (data[0] & 4) ? (uint64_t{sz} << 32) | sz : sz;
    f.mtime_sec = kNow - 0x800000 + (data[5] | data[6] << 8 | data[7] << 16); // +/- 97 days around now
    f.mtime_nsec = data[5];
    f.now = kNow;
    f.ranges = !(data[0] & 2);
    static const char *const names[] = {"If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since",
                                        "If-Range", "Range"};
    std::vector<std::string> values;
    std::vector<weir_header_t> fields;
    std::string rest(reinterpret_cast<const char *>(data + kControl), size - kControl);
    size_t pos = 0;
    while (pos <= rest.size() && values.size() < 16) {
        size_t nl = rest.find('\n', pos);
        std::string line = rest.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
        pos = nl == std::string::npos ? rest.size() + 1 : nl + 1;
        if (line.empty())
            continue;
        values.push_back(line.substr(1));
        const char *n = names[static_cast<uint8_t>(line[0]) % 6];
        fields.push_back({{n, std::strlen(n)}, {nullptr, 0}});
    }
    for (size_t i = 0; i < fields.size(); i++)
        fields[i].value = {values[i].data(), values[i].size()};

    for (const std::string &v : values) {
        int64_t t;
        if (parse_http_date(v, kNow, &t)) {
            char b[kImfFixdateLen];
            format_imf_fixdate(t, b);
            int64_t back;
            if (!parse_http_date(std::string_view(b, sizeof b), kNow, &back) || back != t)
                return "an HTTP-date does not survive format-then-parse";
        }
        RangeResult r = parse_range(v, f.size);
        if (r.kind == RangeKind::Single && (r.length == 0 || r.first >= f.size || r.length > f.size - r.first))
            return "a single range outside the file";
        (void)match_etag_list(v, "\"1.2-3\"", Compare::Weak);
        (void)etag_strong_equal(v, "\"1.2-3\"");
    }

    const bool head = data[0] & 1;
    FileDecision d = decide_file(head ? "HEAD" : "GET", fields.data(), fields.size(), f);
    if (d.head != head)
        return "HEAD lost";
    if (d.etag_len < 7 || d.etag_len > kEtagMax || d.etag[0] != '"' || d.etag[d.etag_len - 1] != '"')
        return "a malformed ETag";
    if (d.last_modified > kNow)
        return "Last-Modified after now";
    switch (d.status) {
    case 200:
        if (d.offset != 0 || d.length != f.size)
            return "a 200 that is not the whole file";
        break;
    case 206:
        if (head || !f.ranges)
            return "a 206 for HEAD or without ranges";
        if (d.length == 0 || d.offset >= f.size || d.length > f.size - d.offset)
            return "a 206 outside the file";
        break;
    case 416:
        if (head || !f.ranges)
            return "a 416 for HEAD or without ranges";
        break;
    case 304:
    case 412:
        break;
    default:
        return "a status decide_file must not give for GET/HEAD";
    }
    if (d.multiple_ranges && d.status != 200)
        return "several ranges not answered with the whole file";
    return nullptr;
}

} // namespace files_fuzz
