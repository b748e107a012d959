// cmocka for C++ tests: its header declares print_error & co. without
// extern "C", so fail_msg would not link from C++. Include this instead.
#pragma once
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
extern "C" {
#include <cmocka.h>
}
