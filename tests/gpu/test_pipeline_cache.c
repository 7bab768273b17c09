/* test_pipeline_cache.c -- the on-disk pipeline cache against hostile and
 * careless paths (issue 12, items 1 and 2): it never replaces what is not
 * its own cache file (a model, a link, a FIFO, a device node, a directory),
 * never writes through a predictable temporary name, and an unusable
 * location is one warning, never a failed device. It is written once per
 * run, and not at all when nothing changed. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "gpu_fixture.h"

/* Counts the runtime's pipeline-cache messages while a device lives. */
struct log_count {
    int warnings, saves;
    char last_warning[1200];
};

static void count_log(void *user, gsmrt_log_level level, const char *msg)
{
    struct log_count *c = user;
    if (level == GSMRT_LOG_WARN && strstr(msg, "pipeline cache")) {
        c->warnings++;
        snprintf(c->last_warning, sizeof c->last_warning, "%s", msg);
    }
    if (strstr(msg, "pipeline cache saved")) c->saves++;
    if (level == GSMRT_LOG_ERROR) fprintf(stderr, "%s\n", msg);
}

/* One "run": a device on `path`, every kernel compiled, the device destroyed.
 * Returns the log counts; the device must be created successfully. */
static struct log_count run_once(struct gpu *g, const char *path)
{
    struct log_count c = {0};
    struct gsmrt_log saved = g->inst->log;
    g->inst->log = (struct gsmrt_log){.cb = count_log, .user = &c, .level = GSMRT_LOG_INFO};
    struct gsmrt_vk_device_params p = {.want = NULL, .pipeline_cache_path = path};
    struct gsmrt_vk_device *d = NULL;
    gsmrt_status st = gsmrt_vk_device_create(g->inst, &p, &d, &gpu_err);
    if (st == GSMRT_OK) st = gsmrt_kernels_warm_up(d, &gpu_err);
    gsmrt_vk_device_destroy(d);
    g->inst->log = saved;
    if (st != GSMRT_OK) fail_msg("device on %s: %s: %s", path, gsmrt_status_name(st), gpu_err.msg);
    return c;
}

static void write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static size_t read_bytes(const char *path, void *out, size_t cap)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t n = fread(out, 1, cap, f);
    fclose(f);
    return n;
}

static void make_dir(char *dir)
{
    strcpy(dir, "/tmp/gsmrt-pc-XXXXXX");
    assert_non_null(mkdtemp(dir));
}

static void remove_tree(const char *dir)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* Files in dir other than `keep` (leftover temporaries). */
static int count_entries(const char *dir)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    int n = -1;
    assert_int_equal(fscanf(p, "%d", &n), 1);
    pclose(p);
    return n;
}

static void test_written_once_and_only_when_changed(void **state)
{
    char dir[64], path[128];
    make_dir(dir);
    snprintf(path, sizeof path, "%s/sub/pipelines.bin", dir);
    struct log_count cold = run_once(*state, path);
    struct stat first, second;
    assert_int_equal(stat(path, &first), 0);
    struct log_count warm = run_once(*state, path);   /* the same pipelines: nothing new */
    assert_int_equal(stat(path, &second), 0);
    assert_int_equal(first.st_ino, second.st_ino);   /* not even renamed over */
    assert_int_equal(cold.saves, 1);   /* a cold run: one write, at the end */
    assert_int_equal(warm.saves, 0);
    assert_int_equal(cold.warnings + warm.warnings, 0);
    snprintf(path, sizeof path, "%s/sub", dir);
    assert_int_equal(count_entries(path), 1);   /* no temporary left behind */
    remove_tree(dir);
}

static void test_model_file_stays_byte_identical(void **state)
{
    char dir[64], path[128];
    make_dir(dir);
    snprintf(path, sizeof path, "%s/model.gguf", dir);
    unsigned char model[8192], after[8192 + 16];
    memcpy(model, "GGUF", 4);
    for (size_t i = 4; i < sizeof model; i++) model[i] = (unsigned char)(i * 131u + 7u);
    write_bytes(path, model, sizeof model);

    struct log_count c = run_once(*state, path);
    assert_int_equal(read_bytes(path, after, sizeof after), sizeof model);
    assert_memory_equal(after, model, sizeof model);
    assert_int_equal(c.warnings, 1);
    assert_non_null(strstr(c.last_warning, path));
    assert_non_null(strstr(c.last_warning, "not a gsmrt pipeline cache"));
    assert_int_equal(c.saves, 0);
    assert_int_equal(count_entries(dir), 1);
    remove_tree(dir);
}

static void test_symlink_is_neither_followed_nor_replaced(void **state)
{
    char dir[64], path[128], victim[128], missing[128];
    make_dir(dir);
    snprintf(victim, sizeof victim, "%s/victim.txt", dir);
    snprintf(missing, sizeof missing, "%s/created-through-link", dir);
    write_bytes(victim, "precious\n", 9);

    const char *targets[] = {victim, missing};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/link%d.bin", dir, i);
        assert_int_equal(symlink(targets[i], path), 0);
        struct log_count c = run_once(*state, path);
        struct stat sb;
        assert_int_equal(lstat(path, &sb), 0);
        assert_true(S_ISLNK(sb.st_mode));   /* still the link */
        assert_int_equal(c.warnings, 1);
        assert_int_equal(c.saves, 0);
    }
    char buf[32];
    assert_int_equal(read_bytes(victim, buf, sizeof buf), 9);
    assert_memory_equal(buf, "precious\n", 9);
    assert_int_equal(access(missing, F_OK), -1);   /* nothing created through the link */
    remove_tree(dir);
}

/* The old save wrote "<path>.<pid>.tmp": a link planted there was followed. */
static void test_predictable_temporary_name_is_not_used(void **state)
{
    char dir[64], path[128], trap[160], victim[128];
    make_dir(dir);
    snprintf(path, sizeof path, "%s/pipelines.bin", dir);
    snprintf(victim, sizeof victim, "%s/victim.txt", dir);
    snprintf(trap, sizeof trap, "%s.%ld.tmp", path, (long)getpid());
    write_bytes(victim, "precious\n", 9);
    assert_int_equal(symlink(victim, trap), 0);
    struct log_count c = run_once(*state, path);
    char buf[32];
    assert_int_equal(read_bytes(victim, buf, sizeof buf), 9);
    assert_memory_equal(buf, "precious\n", 9);
    struct stat sb;
    assert_int_equal(lstat(trap, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    assert_int_equal(c.saves, 1);
    remove_tree(dir);
}

/* A FIFO (the old load blocked in fopen forever), a directory and, as root,
 * a device node: each stays what it was, with one warning. */
static void test_special_files_are_left_alone(void **state)
{
    char dir[64], path[128];
    make_dir(dir);
    snprintf(path, sizeof path, "%s/fifo", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    struct log_count c = run_once(*state, path);
    struct stat sb;
    assert_int_equal(lstat(path, &sb), 0);
    assert_true(S_ISFIFO(sb.st_mode));
    assert_int_equal(c.warnings, 1);
    assert_non_null(strstr(c.last_warning, "FIFO"));

    snprintf(path, sizeof path, "%s/a-directory", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    c = run_once(*state, path);
    assert_int_equal(lstat(path, &sb), 0);
    assert_true(S_ISDIR(sb.st_mode));
    assert_int_equal(c.warnings, 1);

    if (geteuid() == 0) {
        snprintf(path, sizeof path, "%s/null-node", dir);
        assert_int_equal(mknod(path, S_IFCHR | 0600, makedev(1, 3)), 0);
        c = run_once(*state, path);
        assert_int_equal(lstat(path, &sb), 0);
        assert_true(S_ISCHR(sb.st_mode));
        assert_int_equal(c.warnings, 1);
        assert_non_null(strstr(c.last_warning, "character device"));
    } else {
        fprintf(stderr, "note: not root, the device-node case is skipped\n");
    }
    remove_tree(dir);
}

/* Unwritable locations: a parent that is a file and a directory that cannot
 * be created (both fail even for root), a read-only directory (unless root),
 * and XDG_CACHE_HOME pointing at a file. */
static void test_unwritable_location_warns_once_and_runs(void **state)
{
    char dir[64], path[160];
    make_dir(dir);
    char file[96];
    snprintf(file, sizeof file, "%s/plain-file", dir);
    write_bytes(file, "x", 1);
    snprintf(path, sizeof path, "%s/cache/pipelines.bin", file);
    struct log_count c = run_once(*state, path);
    assert_int_equal(c.warnings, 1);
    assert_int_equal(c.saves, 0);

    /* Nothing exists there, and nothing can be made: the save itself fails. */
    c = run_once(*state, "/proc/self/gsmrt-no-such-dir/pipelines.bin");
    assert_int_equal(c.warnings, 1);
    assert_int_equal(c.saves, 0);

    if (geteuid() != 0) {
        char ro[96];
        snprintf(ro, sizeof ro, "%s/read-only", dir);
        assert_int_equal(mkdir(ro, 0555), 0);
        snprintf(path, sizeof path, "%s/pipelines.bin", ro);
        c = run_once(*state, path);
        assert_int_equal(c.warnings, 1);
        assert_int_equal(access(path, F_OK), -1);
    }

    const char *old_xdg = getenv("XDG_CACHE_HOME");
    char *keep = old_xdg ? strdup(old_xdg) : NULL;
    const char *old_pc = getenv("GSMRT_PIPELINE_CACHE");
    char *keep_pc = old_pc ? strdup(old_pc) : NULL;
    unsetenv("GSMRT_PIPELINE_CACHE");
    setenv("XDG_CACHE_HOME", file, 1);
    c = run_once(*state, NULL);   /* the default location */
    assert_int_equal(c.warnings, 1);
    if (keep) setenv("XDG_CACHE_HOME", keep, 1);
    else unsetenv("XDG_CACHE_HOME");
    if (keep_pc) setenv("GSMRT_PIPELINE_CACHE", keep_pc, 1);
    free(keep);
    free(keep_pc);
    remove_tree(dir);
}

static void test_over_long_path_is_an_error(void **state)
{
    struct gpu *g = *state;
    char path[1100];
    memset(path, 'a', sizeof path - 1);
    path[0] = '/';
    path[sizeof path - 1] = '\0';
    struct gsmrt_vk_device_params p = {.want = NULL, .pipeline_cache_path = path};
    struct gsmrt_vk_device *d = NULL;
    gsmrt_status st = gsmrt_vk_device_create(g->inst, &p, &d, &gpu_err);
    assert_int_equal(st, GSMRT_E_INVALID_ARGUMENT);
    assert_null(d);
    assert_non_null(strstr(gpu_err.msg, "longer than the limit of 1023"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_written_once_and_only_when_changed),
        cmocka_unit_test(test_model_file_stays_byte_identical),
        cmocka_unit_test(test_symlink_is_neither_followed_nor_replaced),
        cmocka_unit_test(test_predictable_temporary_name_is_not_used),
        cmocka_unit_test(test_special_files_are_left_alone),
        cmocka_unit_test(test_unwritable_location_warns_once_and_runs),
        cmocka_unit_test(test_over_long_path_is_an_error),
    };
    return cmocka_run_group_tests_name("pipeline cache", tests, gpu_setup, gpu_teardown);
}
