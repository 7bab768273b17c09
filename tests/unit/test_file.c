/* test_file.c -- base/file.c, the one safe writer and reader every file of
 * the program goes through: what it refuses to replace (links, directories,
 * FIFOs, devices, files that are not ours), that it leaves no temporary
 * behind, and what it refuses to read (non-regular files, without blocking;
 * NUL bytes in text; files over the cap). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/file.h"
#include "base/mem.h"

static char dir[64];
static struct gsmrt_err err;

static int setup(void **state)
{
    (void)state;
    strcpy(dir, "/tmp/gsmrt-file-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void path_in(char *out, size_t n, const char *name) { snprintf(out, n, "%s/%s", dir, name); }

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static void assert_content(const char *path, const char *want)
{
    char buf[256] = "";
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    assert_string_equal(buf, want);
}

static int entries_in_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", dir);
    FILE *p = popen(cmd, "r");
    int n = -1;
    assert_int_equal(fscanf(p, "%d", &n), 1);
    pclose(p);
    return n;
}

static bool starts_with_ours(const void *head, size_t n) { return n >= 4 && memcmp(head, "OURS", 4) == 0; }

static void test_writes_and_replaces_regular_files(void **state)
{
    (void)state;
    char p[128];
    path_in(p, sizeof p, "out.json");
    int before = entries_in_dir();
    assert_int_equal(gsmrt_file_write(p, "first", 5, NULL, &err), GSMRT_OK);
    assert_content(p, "first");
    assert_int_equal(gsmrt_file_write(p, "second", 6, NULL, &err), GSMRT_OK);
    assert_content(p, "second");
    assert_int_equal(entries_in_dir(), before + 1);   /* no temporary left */
    unlink(p);
}

static void test_refuses_links_and_special_files(void **state)
{
    (void)state;
    char victim[128], link[128], dangling[128], target[128], fifo[128], sub[128], node[128];
    path_in(victim, sizeof victim, "victim");
    path_in(link, sizeof link, "link");
    path_in(dangling, sizeof dangling, "dangling");
    path_in(target, sizeof target, "would-be-created");
    path_in(fifo, sizeof fifo, "fifo");
    path_in(sub, sizeof sub, "sub");
    put(victim, "precious");
    assert_int_equal(symlink(victim, link), 0);
    assert_int_equal(symlink(target, dangling), 0);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(mkdir(sub, 0700), 0);
    int before = entries_in_dir();

    assert_int_equal(gsmrt_file_write(link, "x", 1, NULL, &err), GSMRT_E_IO);
    assert_non_null(strstr(err.msg, "is a symbolic link; not replaced"));
    assert_int_equal(gsmrt_file_write(dangling, "x", 1, NULL, &err), GSMRT_E_IO);
    assert_int_equal(gsmrt_file_write(fifo, "x", 1, NULL, &err), GSMRT_E_IO);
    assert_non_null(strstr(err.msg, "is a FIFO"));
    assert_int_equal(gsmrt_file_write(sub, "x", 1, NULL, &err), GSMRT_E_IO);
    assert_non_null(strstr(err.msg, "is a directory"));
    assert_content(victim, "precious");
    assert_int_equal(access(target, F_OK), -1);
    struct stat sb;
    assert_int_equal(lstat(link, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    assert_int_equal(lstat(fifo, &sb), 0);
    assert_true(S_ISFIFO(sb.st_mode));
    if (geteuid() == 0) {   /* a device node: only root can make one */
        path_in(node, sizeof node, "null-node");
        assert_int_equal(mknod(node, S_IFCHR | 0600, makedev(1, 3)), 0);
        assert_int_equal(gsmrt_file_write(node, "x", 1, NULL, &err), GSMRT_E_IO);
        assert_non_null(strstr(err.msg, "is a character device"));
        assert_int_equal(lstat(node, &sb), 0);
        assert_true(S_ISCHR(sb.st_mode));
        before++;
    }
    assert_int_equal(entries_in_dir(), before);   /* no temporary left */
}

static void test_replaces_only_its_own_files(void **state)
{
    (void)state;
    char mine[128], foreign[128], fresh[128];
    path_in(mine, sizeof mine, "mine.bin");
    path_in(foreign, sizeof foreign, "model.gguf");
    path_in(fresh, sizeof fresh, "fresh.bin");
    put(mine, "OURS old");
    put(foreign, "GGUF weights");
    assert_int_equal(gsmrt_file_write(mine, "OURS new", 8, starts_with_ours, &err), GSMRT_OK);
    assert_content(mine, "OURS new");
    assert_int_equal(gsmrt_file_write(foreign, "OURS new", 8, starts_with_ours, &err), GSMRT_E_IO);
    assert_non_null(strstr(err.msg, "not replaced"));
    assert_content(foreign, "GGUF weights");
    assert_int_equal(gsmrt_file_write(fresh, "OURS", 4, starts_with_ours, &err), GSMRT_OK);   /* nothing there */
}

static void test_over_long_path_is_refused(void **state)
{
    (void)state;
    char p[GSMRT_FILE_PATH_MAX + 2];
    memset(p, 'a', sizeof p - 1);
    p[0] = '/';
    p[sizeof p - 1] = '\0';
    assert_int_equal(gsmrt_file_write(p, "x", 1, NULL, &err), GSMRT_E_INVALID_ARGUMENT);
    assert_non_null(strstr(err.msg, "longer than the limit of 1023"));
    char *text;
    size_t n;
    assert_int_equal(gsmrt_file_read_all(NULL, p, 100, true, &text, &n, &err), GSMRT_E_INVALID_ARGUMENT);
}

static void test_reads_regular_files_only(void **state)
{
    (void)state;
    char p[128], fifo[128];
    path_in(p, sizeof p, "prompt.txt");
    path_in(fifo, sizeof fifo, "prompt-fifo");
    put(p, "hello");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    char *text = NULL;
    size_t n = 0;
    assert_int_equal(gsmrt_file_read_all(NULL, p, 5, true, &text, &n, &err), GSMRT_OK);   /* exactly the cap */
    assert_int_equal(n, 5);
    assert_string_equal(text, "hello");
    gsmrt_mem_free(NULL, text);

    /* A FIFO with no writer: refused at once, not waited on. */
    assert_int_equal(gsmrt_file_read_all(NULL, fifo, 100, true, &text, &n, &err), GSMRT_E_IO);
    assert_non_null(strstr(err.msg, "is a FIFO, not a regular file"));
    assert_null(text);
    assert_int_equal(gsmrt_file_read_all(NULL, dir, 100, true, &text, &n, &err), GSMRT_E_IO);
    assert_non_null(strstr(err.msg, "is a directory"));
    assert_int_equal(gsmrt_file_read_all(NULL, "/dev/zero", 100, true, &text, &n, &err), GSMRT_E_IO);
    assert_non_null(strstr(err.msg, "is a character device"));
    int fd;
    uint64_t size;
    assert_int_equal(gsmrt_file_open_regular(fifo, &fd, &size, &err), GSMRT_E_IO);
    assert_int_equal(fd, -1);
}

static void test_read_limits(void **state)
{
    (void)state;
    char p[128];
    path_in(p, sizeof p, "nul.txt");
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    fwrite("ab\0cd", 1, 5, f);
    fclose(f);
    char *text = NULL;
    size_t n = 0;
    assert_int_equal(gsmrt_file_read_all(NULL, p, 100, true, &text, &n, &err), GSMRT_E_FORMAT);
    assert_non_null(strstr(err.msg, "a NUL byte at offset 2"));
    assert_null(text);
    assert_int_equal(gsmrt_file_read_all(NULL, p, 100, false, &text, &n, &err), GSMRT_OK);   /* binary is fine */
    assert_int_equal(n, 5);
    gsmrt_mem_free(NULL, text);
    assert_int_equal(gsmrt_file_read_all(NULL, p, 4, false, &text, &n, &err), GSMRT_E_FORMAT);
    assert_non_null(strstr(err.msg, "5 bytes, larger than the limit of 4 bytes"));
    assert_null(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_writes_and_replaces_regular_files),
        cmocka_unit_test(test_refuses_links_and_special_files),
        cmocka_unit_test(test_replaces_only_its_own_files),
        cmocka_unit_test(test_over_long_path_is_refused),
        cmocka_unit_test(test_reads_regular_files_only),
        cmocka_unit_test(test_read_limits),
    };
    return cmocka_run_group_tests_name("file", tests, setup, teardown);
}
