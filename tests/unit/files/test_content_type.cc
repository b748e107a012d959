// Content types by extension (lib/files/content_type.cc, weir_content_type).
#include "cmocka_cxx.h"
#include "files/file_answer.h"

using weir::files::content_type_for;

namespace {

void is(const char *name, const char *want) {
    const char *got = content_type_for(name);
    if (std::string_view(got) != want)
        fail_msg("%s: %s, want %s", name, got, want);
}

void test_content_type_table(void **) {
    is("index.html", "text/html; charset=utf-8");
    is("a.htm", "text/html; charset=utf-8");
    is("s.css", "text/css; charset=utf-8");
    is("app.js", "text/javascript; charset=utf-8");
    is("m.mjs", "text/javascript; charset=utf-8");
    is("d.json", "application/json");
    is("r.txt", "text/plain; charset=utf-8");
    is("f.xml", "text/xml; charset=utf-8");
    is("i.svg", "image/svg+xml");
    is("i.png", "image/png");
    is("i.jpg", "image/jpeg");
    is("i.jpeg", "image/jpeg");
    is("i.gif", "image/gif");
    is("i.webp", "image/webp");
    is("favicon.ico", "image/x-icon");
    is("m.wasm", "application/wasm");
    is("d.pdf", "application/pdf");
    is("a.zip", "application/zip");
    is("a.tar.gz", "application/gzip");
    is("v.mp4", "video/mp4");
    is("v.webm", "video/webm");
    is("f.woff", "font/woff");
    is("f.woff2", "font/woff2");
    is("t.csv", "text/csv; charset=utf-8");
    is("README.md", "text/markdown; charset=utf-8");
}

void test_content_type_names(void **) {
    // ASCII case-insensitive.
    is("INDEX.HTML", "text/html; charset=utf-8");
    is("Photo.JpEg", "image/jpeg");
    // The last segment's last extension.
    is("dir.html/file", "application/octet-stream");
    is("/a/b.c/d.css", "text/css; charset=utf-8");
    is("x.html.bak", "application/octet-stream");
    // None, unknown, a dot file, a trailing dot, nearly a known one.
    is("Makefile", "application/octet-stream");
    is("a.unknown", "application/octet-stream");
    is(".html", "application/octet-stream");
    is("a.", "application/octet-stream");
    is("a.htmlx", "application/octet-stream");
    is("a.htm\xff", "application/octet-stream");
    is("", "application/octet-stream");
    assert_string_equal(weir_content_type(nullptr, 0), "application/octet-stream");
    assert_string_equal(weir_content_type("a.png.css", 5), "image/png"); // len, not the NUL
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_content_type_table),
        cmocka_unit_test(test_content_type_names),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
