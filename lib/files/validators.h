// Entity tags (RFC 9110 8.8.3, 13.1.1-2) and byte ranges (RFC 9110 14.1-14.2):
// the pieces of a file answer's decision (file_answer.h) that read a field
// value. Pure: views in, values out, no allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace weir::files {

// The strong ETag of a file from its identity: "<mtime seconds hex>.<mtime
// nanoseconds hex>-<size hex>", quotes included, e.g. "6581c3a2.1dcd6500-400".
// nginx's is "<mtime seconds hex>-<size hex>"; the nanoseconds tell apart two
// versions of the same size written within one second (a deploy that
// rewrites a file in place), which nginx's cannot. At most kEtagMax bytes.
inline constexpr size_t kEtagMax = 2 + 16 + 1 + 8 + 1 + 16;
size_t format_etag(uint64_t size, int64_t mtime_sec, uint32_t mtime_nsec, char *out);

// One member of an If-Match/If-None-Match list against etag (ours: strong,
// quoted). How a list compares (RFC 9110 8.8.3.2): the strong comparison
// matches when both tags are strong and their opaque parts are equal; the
// weak one when the opaque parts are equal, W/ or not.
enum class Compare { Strong, Weak };

// The result of a list field: "*" (any current representation), a member
// that matched, none matched, or a value that is not the grammar
// (`"*" / #entity-tag`); the caller decides what a malformed list means.
enum class ListMatch { Any, Match, NoMatch, Malformed };

// Evaluates one field line's value; several lines of one field are one list
// (RFC 9110 5.3): the caller combines their results (match_combine).
ListMatch match_etag_list(std::string_view value, std::string_view etag, Compare how);
ListMatch match_combine(ListMatch a, ListMatch b);

// An If-Range entity-tag: true when v is one strong tag equal to etag (a
// weak one never matches: If-Range needs the strong comparison).
bool etag_strong_equal(std::string_view v, std::string_view etag);

// A Range field against a representation of size bytes (RFC 9110 14.1.1-2):
// Ignored: not a "bytes" range-set we can read (another unit, bad syntax,
// last-pos < first-pos): the field is ignored and the whole file served.
// Single: one satisfiable range, [first, first + length).
// Multiple: more than one satisfiable range (weir serves the whole file,
// never multipart/byteranges; docs/api.md).
// Unsatisfiable: the set is valid but no range overlaps the file (416).
// Numbers too large for 64 bits saturate: a first-pos past the file is
// unsatisfiable, a last-pos or suffix-length past it reaches the end.
enum class RangeKind { Ignored, Single, Multiple, Unsatisfiable };
struct RangeResult {
    RangeKind kind = RangeKind::Ignored;
    uint64_t first = 0;
    uint64_t length = 0;
};
RangeResult parse_range(std::string_view value, uint64_t size);

} // namespace weir::files
