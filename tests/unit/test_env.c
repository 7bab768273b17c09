/* test_env.c -- base/env.c: GSMRT_* switches in their accepted forms, and a
 * warning naming the variable and the accepted forms for anything else
 * (issue 12: bad values were silently ignored). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/env.h"

static int n_warnings;
static char last[512];

static void on_log(void *user, gsmrt_log_level level, const char *msg)
{
    (void)user;
    if (level != GSMRT_LOG_WARN) return;
    n_warnings++;
    snprintf(last, sizeof last, "%s", msg);
}

static const struct gsmrt_log log_sink = {.cb = on_log, .user = NULL, .level = GSMRT_LOG_DEBUG};

static uint64_t bytes_of(const char *value)
{
    setenv("GSMRT_TEST_ENV", value, 1);
    return gsmrt_env_bytes(&log_sink, "GSMRT_TEST_ENV");
}

static void test_bytes(void **state)
{
    (void)state;
    n_warnings = 0;
    unsetenv("GSMRT_TEST_ENV");
    assert_int_equal(gsmrt_env_bytes(&log_sink, "GSMRT_TEST_ENV"), 0);
    assert_int_equal(bytes_of("134217728"), 134217728u);
    assert_int_equal(bytes_of("64K"), 65536u);
    assert_int_equal(bytes_of("8m"), 8u << 20);
    assert_int_equal(bytes_of("2G"), 2ull << 30);
    assert_int_equal(n_warnings, 0);
    const char *bad[] = {"12Q", "-5", "8MB", " 8M", "K", "99999999999999999999", "17179869184G"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(bytes_of(bad[i]), 0);
        assert_int_equal(n_warnings, (int)i + 1);
        assert_non_null(strstr(last, "GSMRT_TEST_ENV="));
        assert_non_null(strstr(last, "64K, 8M, 2G"));
    }
}

static void test_flag_and_choice(void **state)
{
    (void)state;
    n_warnings = 0;
    setenv("GSMRT_TEST_ENV", "1", 1);
    assert_true(gsmrt_env_flag(&log_sink, "GSMRT_TEST_ENV"));
    setenv("GSMRT_TEST_ENV", "Off", 1);
    assert_false(gsmrt_env_flag(&log_sink, "GSMRT_TEST_ENV"));   /* "off" was taken as on before */
    assert_int_equal(n_warnings, 0);
    setenv("GSMRT_TEST_ENV", "maybe", 1);
    assert_false(gsmrt_env_flag(&log_sink, "GSMRT_TEST_ENV"));
    assert_int_equal(n_warnings, 1);
    assert_non_null(strstr(last, "GSMRT_TEST_ENV=maybe ignored: expected 1 or 0"));

    static const char *const matvec[] = {"rows", "reduce"};
    setenv("GSMRT_TEST_ENV", "reduce", 1);
    assert_int_equal(gsmrt_env_choice(&log_sink, "GSMRT_TEST_ENV", matvec, 2), 1);
    setenv("GSMRT_TEST_ENV", "row", 1);
    assert_int_equal(gsmrt_env_choice(&log_sink, "GSMRT_TEST_ENV", matvec, 2), -1);
    assert_int_equal(n_warnings, 2);
    assert_string_equal(last, "GSMRT_TEST_ENV=row ignored: expected rows or reduce");
    unsetenv("GSMRT_TEST_ENV");
    assert_int_equal(gsmrt_env_choice(&log_sink, "GSMRT_TEST_ENV", matvec, 2), -1);
    assert_int_equal(n_warnings, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bytes),
        cmocka_unit_test(test_flag_and_choice),
    };
    return cmocka_run_group_tests_name("env", tests, NULL, NULL);
}
