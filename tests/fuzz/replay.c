/* replay.c - runs a fuzz target's LLVMFuzzerTestOneInput over corpus files, without libFuzzer.
 *
 * The Makefile links it with tests/fuzz/fuzz_X.o into build/tests/fuzz/fuzz_X_replay, so that
 * `make test` runs every committed corpus under the normal (or SANITIZE=1) build:
 *
 *     fuzz_X_replay tests/fuzz/corpus/fuzz_X [more dirs or files ...]
 *
 * A directory argument runs every regular file directly inside it (no recursion), in byte
 * order of their names so that runs are reproducible; a file argument runs that file. Each
 * input is read into a malloc'd buffer of exactly its size, so that AddressSanitizer sees a
 * read past its end. A crash in the target
 * ends the process like it would under libFuzzer; the last "replay: running" line on stderr
 * (printed when REPLAY_VERBOSE is set in the environment) names the input.
 *
 * Exit status: 0 after printing "replay: N inputs"; 1 when an argument or a file in a
 * directory cannot be read (the others still run); 2 without arguments.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

/* Read the whole regular file `path` into a malloc'd buffer of exactly its size (one byte for
 * an empty file, so the pointer is never NULL). Returns NULL after printing why on failure. */
static uint8_t *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 0) {
        fprintf(stderr, "replay: %s: not a readable regular file\n", path);
        fclose(f);
        return NULL;
    }
    size_t n = (size_t)st.st_size;
    uint8_t *buf = malloc(n != 0 ? n : 1);
    if (buf == NULL) {
        fprintf(stderr, "replay: %s: out of memory for %zu bytes\n", path, n);
        fclose(f);
        return NULL;
    }
    /* Also fail when the file grew or shrank under us: a short or long read is an error. */
    if (fread(buf, 1, n, f) != n || fgetc(f) != EOF || ferror(f)) {
        fprintf(stderr, "replay: %s: read error or file changed size\n", path);
        free(buf);
        fclose(f);
        return NULL;
    }
    fclose(f);
    *len = n;
    return buf;
}

/* Run one file. Returns 0, or -1 when it cannot be read. */
static int run_file(const char *path, unsigned long *count)
{
    size_t len = 0;
    uint8_t *buf = read_file(path, &len);
    if (buf == NULL)
        return -1;
    if (getenv("REPLAY_VERBOSE") != NULL)
        fprintf(stderr, "replay: running %s (%zu bytes)\n", path, len);
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    (*count)++;
    return 0;
}

/* Byte order of names, independent of the locale (alphasort uses strcoll). */
static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

/* Run every regular file in `dir`. Returns 0, or -1 when the directory or one of its files
 * cannot be read (the readable files still run). */
static int run_dir(const char *dir, unsigned long *count)
{
    struct dirent **names;
    int n = scandir(dir, &names, NULL, by_name);
    if (n < 0) {
        fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        size_t need = strlen(dir) + 1 + strlen(names[i]->d_name) + 1;
        char *path = malloc(need);
        if (path == NULL) {
            fprintf(stderr, "replay: out of memory\n");
            rc = -1;
        } else {
            snprintf(path, need, "%s/%s", dir, names[i]->d_name);
            struct stat st;
            if (stat(path, &st) != 0) {
                fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
                rc = -1;
            } else if (S_ISREG(st.st_mode) && run_file(path, count) != 0) {
                rc = -1;
            }
            free(path);
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR_OR_FILE...\n", argv[0]);
        return 2;
    }
    unsigned long count = 0;
    int failed = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
            failed = 1;
        } else if (S_ISDIR(st.st_mode)) {
            if (run_dir(argv[i], &count) != 0)
                failed = 1;
        } else if (run_file(argv[i], &count) != 0) {
            failed = 1;
        }
    }
    printf("replay: %lu inputs\n", count);
    return failed ? 1 : 0;
}
