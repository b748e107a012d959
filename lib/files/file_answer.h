// The decision of a file answer (weir_serve_file, capi/files.cc): which
// status, which bytes and which validators a request for a regular file
// gets, from the request's method and fields and the file's identity. Pure:
// no I/O, no clock (now is an input), so every case of RFC 9110 §13-14 is a
// unit test (tests/unit/files/test_file_answer.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "files/validators.h"
#include "weir.h"

namespace weir::files {

// What fstat says of the file, and the clock.
struct FileFacts {
    uint64_t size = 0;
    int64_t mtime_sec = 0;
    uint32_t mtime_nsec = 0;
    int64_t now = 0;     // seconds since the epoch: the answer's Date
    bool ranges = true;  // false: WEIR_FILE_NO_RANGES (Range and If-Range ignored)
};

struct FileDecision {
    // 200, 206 (one range), 304, 412, 416 or 405 (a method other than GET
    // and HEAD).
    int status = 200;
    bool head = false;            // HEAD: the head of the GET answer, no body
    uint64_t offset = 0;          // 200/206: the bytes [offset, offset + length)
    uint64_t length = 0;
    int64_t last_modified = 0;    // the Last-Modified to send: mtime, or now when mtime is later
    bool multiple_ranges = false; // 200 because the Range named several ranges
    char etag[kEtagMax];
    size_t etag_len = 0;
};

// Decides the answer. The order is RFC 9110 13.2.2's:
//  0. a method other than GET/HEAD: 405 (preconditions are evaluated only
//     for an answer that would otherwise be 2xx, 13.2.1).
//  1. If-Match (strong comparison, "*" matches): false -> 412. A malformed
//     list matches nothing (412: a client that asked for a condition is
//     never answered as if it held).
//  2. without If-Match, If-Unmodified-Since (a valid HTTP-date; otherwise
//     ignored, 13.1.4): Last-Modified later than it -> 412.
//  3. If-None-Match (weak comparison, "*" matches): a match -> 304. A
//     malformed list is ignored (the full answer is always a correct one).
//  4. without If-None-Match, If-Modified-Since (a valid single HTTP-date):
//     Last-Modified not later than it -> 304. A date in the future is taken
//     as it comes (RFC 9110 has no rule against it, unlike RFC 2616); the
//     Last-Modified compared is the one sent, mtime clamped to now (8.8.2.1).
//  5. GET with Range (one field line of the bytes unit; HEAD and other
//     units ignore it, 14.2): If-Range, when present, must hold (a strong
//     ETag equal to ours, or an HTTP-date equal to Last-Modified; a weak or
//     malformed one, or several lines, does not hold) or the whole file is
//     served; then one satisfiable range -> 206, several -> 200 with the
//     whole file (multiple_ranges), none -> 416, an invalid Range -> 200.
// Field names are compared case-insensitively; several lines of a list
// field (If-Match, If-None-Match) are one list; a date field given twice is
// not a valid date (ignored).
FileDecision decide_file(std::string_view method, const weir_header_t *headers, size_t num_headers,
                         const FileFacts &facts);

// The Content-Type of a file name by its extension (weir_content_type).
const char *content_type_for(std::string_view name);

} // namespace weir::files
