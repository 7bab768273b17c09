/* file.c -- safe writes (temporary file + rename, nothing replaced that is
 * not ours) and safe reads (regular files only, never blocking in open()).
 * See file.h for the rules. */
#include "base/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/mem.h"

static const char *what_is(mode_t mode)
{
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISLNK(mode)) return "a symbolic link";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

static gsmrt_status check_path(const char *path, struct gsmrt_err *err)
{
    if (!path || !*path) return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "empty file path");
    size_t n = strlen(path);
    if (n > GSMRT_FILE_PATH_MAX)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "file path of %zu bytes is longer than the limit of %d",
                             n, GSMRT_FILE_PATH_MAX);
    return GSMRT_OK;
}

/* The regular file at path (not followed if a link) starts like one of ours. */
static bool existing_is_ours(const char *path, gsmrt_file_is_ours_fn is_ours)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return false;
    struct stat st;
    unsigned char head[GSMRT_FILE_HEAD_BYTES];
    ssize_t got = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        do got = read(fd, head, sizeof head);
        while (got < 0 && errno == EINTR);
    }
    close(fd);
    return got >= 0 && is_ours(head, (size_t)got);
}

static gsmrt_status write_all(int fd, const unsigned char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return GSMRT_E_IO;
        p += w;
        n -= (size_t)w;
    }
    return GSMRT_OK;
}

/* Creates "<dir>/.<base>.<16 random hex>.tmp" exclusively; -1 with errno. */
static int create_temp(const char *path, char *tmp, size_t tmp_size)
{
    const char *slash = strrchr(path, '/');
    int dir_len = slash ? (int)(slash - path + 1) : 0;
    const char *base = slash ? slash + 1 : path;
    for (int attempt = 0; attempt < 16; attempt++) {
        uint64_t r = 0;
        if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r) return -1;
        /* The base name is cut to 200 bytes so the temporary name fits NAME_MAX. */
        int w = snprintf(tmp, tmp_size, "%.*s.%.200s.%016llx.tmp", dir_len, path, base, (unsigned long long)r);
        if (w < 0 || (size_t)w >= tmp_size) {
            errno = ENAMETOOLONG;
            return -1;
        }
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST) return fd;
    }
    errno = EEXIST;
    return -1;
}

/* Makes the rename durable; failure only costs durability, so it is ignored. */
static void sync_parent_dir(const char *path)
{
    char dir[GSMRT_FILE_PATH_MAX + 1];
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    (void)fsync(fd);
    close(fd);
}

gsmrt_status gsmrt_file_write(const char *path, const void *data, size_t n, gsmrt_file_is_ours_fn is_ours,
                              struct gsmrt_err *err)
{
    gsmrt_status st = check_path(path, err);
    if (st != GSMRT_OK) return st;
    struct stat sb;
    if (lstat(path, &sb) == 0) {
        if (!S_ISREG(sb.st_mode))
            return gsmrt_err_set(err, GSMRT_E_IO, "%s: is %s; not replaced", path, what_is(sb.st_mode));
        if (is_ours && !existing_is_ours(path, is_ours))
            return gsmrt_err_set(err, GSMRT_E_IO, "%s: an existing file that gsmrt did not write; not replaced",
                                 path);
    } else if (errno != ENOENT) {
        return gsmrt_err_set(err, GSMRT_E_IO, "%s: %s", path, strerror(errno));
    }

    char tmp[GSMRT_FILE_PATH_MAX + 64];
    int fd = create_temp(path, tmp, sizeof tmp);
    if (fd < 0) return gsmrt_err_set(err, GSMRT_E_IO, "%s: cannot create a file next to it: %s", path, strerror(errno));
    const char *step = "write";
    st = write_all(fd, data, n);
    if (st == GSMRT_OK && fsync(fd) != 0) st = GSMRT_E_IO, step = "fsync";
    int e = errno;
    if (close(fd) != 0 && st == GSMRT_OK) st = GSMRT_E_IO, step = "close", e = errno;
    if (st == GSMRT_OK && rename(tmp, path) != 0) st = GSMRT_E_IO, step = "rename into place", e = errno;
    if (st != GSMRT_OK) {
        unlink(tmp);
        return gsmrt_err_set(err, GSMRT_E_IO, "%s: %s failed: %s", path, step, strerror(e));
    }
    sync_parent_dir(path);
    return GSMRT_OK;
}

gsmrt_status gsmrt_file_make_parent_dirs(const char *path, struct gsmrt_err *err)
{
    gsmrt_status st = check_path(path, err);
    if (st != GSMRT_OK) return st;
    char dir[GSMRT_FILE_PATH_MAX + 1];
    snprintf(dir, sizeof dir, "%s", path);
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        struct stat sb;
        if (mkdir(dir, 0755) != 0 && errno != EEXIST)
            return gsmrt_err_set(err, GSMRT_E_IO, "%s: cannot create the directory: %s", dir, strerror(errno));
        if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
            return gsmrt_err_set(err, GSMRT_E_IO, "%s: not a directory", dir);
        *p = '/';
    }
    return GSMRT_OK;
}

gsmrt_status gsmrt_file_open_regular(const char *path, int *fd, uint64_t *size, struct gsmrt_err *err)
{
    *fd = -1;
    *size = 0;
    gsmrt_status st = check_path(path, err);
    if (st != GSMRT_OK) return st;
    /* O_NONBLOCK: open() of a FIFO with no writer would wait forever. */
    int f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (f < 0) return gsmrt_err_set(err, GSMRT_E_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(f, &sb) != 0) {
        int e = errno;
        close(f);
        return gsmrt_err_set(err, GSMRT_E_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(f);
        return gsmrt_err_set(err, GSMRT_E_IO, "%s: is %s, not a regular file", path, what_is(sb.st_mode));
    }
    int flags = fcntl(f, F_GETFL);
    if (flags >= 0) (void)fcntl(f, F_SETFL, flags & ~O_NONBLOCK);
    *fd = f;
    *size = (uint64_t)sb.st_size;
    return GSMRT_OK;
}

gsmrt_status gsmrt_file_read_all(const gsmrt_allocator *a, const char *path, size_t max_bytes, bool text_only,
                                 char **out, size_t *len, struct gsmrt_err *err)
{
    *out = NULL;
    *len = 0;
    int fd;
    uint64_t size;
    gsmrt_status st = gsmrt_file_open_regular(path, &fd, &size, err);
    if (st != GSMRT_OK) return st;
    char *buf = NULL;
    if (size > max_bytes) {
        st = gsmrt_err_set(err, GSMRT_E_FORMAT, "%s: %llu bytes, larger than the limit of %zu bytes", path,
                           (unsigned long long)size, max_bytes);
        goto done;
    }
    /* One byte more than the size, to notice a file that grows while read. */
    size_t cap = (size_t)size + 1;
    buf = gsmrt_mem_alloc(a, cap + 1);
    if (!buf) {
        st = gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "%s: %zu bytes", path, cap + 1);
        goto done;
    }
    size_t n = 0;
    while (n < cap) {
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            st = gsmrt_err_set(err, GSMRT_E_IO, "%s: read error: %s", path, strerror(errno));
            goto done;
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    if (n > (size_t)size) {
        st = gsmrt_err_set(err, GSMRT_E_IO, "%s: grew while being read", path);
        goto done;
    }
    buf[n] = '\0';
    const char *nul = text_only ? memchr(buf, '\0', n) : NULL;
    if (nul) {
        st = gsmrt_err_set(err, GSMRT_E_FORMAT, "%s: a NUL byte at offset %zu (expected text)", path,
                           (size_t)(nul - buf));
        goto done;
    }
    *out = buf;
    *len = n;
    buf = NULL;
done:
    gsmrt_mem_free(a, buf);
    close(fd);
    return st;
}
