// Content types by file extension (weir_content_type): a small static table
// of what a web server's static directory mostly holds, as nginx's
// mime.types and Go's mime package name them. Text types carry
// "; charset=utf-8": without it a browser guesses the encoding of a text/*
// body (RFC 9110 8.3.1 leaves it to the sender; nginx sends none unless
// configured, Go sends it).
#include "files/file_answer.h"

namespace weir::files {
namespace {

struct Type {
    const char *ext;
    const char *type;
};

// Sorted by nothing: the table is short and looked up once per answer.
constexpr Type kTypes[] = {
    {"html", "text/html; charset=utf-8"},
    {"htm", "text/html; charset=utf-8"},
    {"css", "text/css; charset=utf-8"},
    {"js", "text/javascript; charset=utf-8"}, // RFC 9239
    {"mjs", "text/javascript; charset=utf-8"},
    {"json", "application/json"},             // UTF-8 by definition (RFC 8259): no charset parameter
    {"map", "application/json"},
    {"webmanifest", "application/manifest+json"},
    {"txt", "text/plain; charset=utf-8"},
    {"md", "text/markdown; charset=utf-8"},
    {"csv", "text/csv; charset=utf-8"},
    {"xml", "text/xml; charset=utf-8"},
    {"svg", "image/svg+xml"},
    {"png", "image/png"},
    {"jpg", "image/jpeg"},
    {"jpeg", "image/jpeg"},
    {"gif", "image/gif"},
    {"webp", "image/webp"},
    {"avif", "image/avif"},
    {"ico", "image/x-icon"},
    {"bmp", "image/bmp"},
    {"wasm", "application/wasm"},
    {"pdf", "application/pdf"},
    {"zip", "application/zip"},
    {"gz", "application/gzip"},
    {"tar", "application/x-tar"},
    {"mp4", "video/mp4"},
    {"webm", "video/webm"},
    {"mp3", "audio/mpeg"},
    {"ogg", "audio/ogg"},
    {"wav", "audio/wav"},
    {"woff", "font/woff"},
    {"woff2", "font/woff2"},
    {"ttf", "font/ttf"},
    {"otf", "font/otf"},
};

constexpr const char *kOctets = "application/octet-stream";

bool ieq(std::string_view a, const char *b) {
    size_t i = 0;
    for (; i < a.size() && b[i]; i++) {
        char c = a[i];
        if (c >= 'A' && c <= 'Z')
            c = static_cast<char>(c - 'A' + 'a');
        if (c != b[i])
            return false;
    }
    return i == a.size() && !b[i];
}

} // namespace

const char *content_type_for(std::string_view name) {
    // The extension of the last path segment; a name that only starts with
    // a dot (".profile") has none.
    size_t slash = name.find_last_of('/');
    std::string_view base = slash == std::string_view::npos ? name : name.substr(slash + 1);
    size_t dot = base.find_last_of('.');
    if (dot == std::string_view::npos || dot == 0)
        return kOctets;
    std::string_view ext = base.substr(dot + 1);
    for (const Type &t : kTypes)
        if (ieq(ext, t.ext))
            return t.type;
    return kOctets;
}

} // namespace weir::files
