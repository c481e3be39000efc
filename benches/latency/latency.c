/* The C handler of the latency benchmark (benches/latency/run.py): one run of the paced emitter
 * with an on("content") C callback, as a C user writes it. The callback (on the library's
 * callback thread) reads CLOCK_MONOTONIC first, then the stamps "@@<line>:<ns>;" in the
 * OutputEvent JSON it got, and records now - stamp.
 *
 *   latency EMITTER OUT_FILE          writes "<line> <latency ns>" per stamp; prints "state <state>"
 *   latency --pipe EMITTER OUT_FILE   the machine's floor, without agentstream: the emitter's
 *                                     stdout read straight from a pipe, the stamps of each read
 *                                     recorded the same way (one wake-up per read, no decoding)
 */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agentstream.h"

typedef struct {
    int64_t *line, *latency;
    size_t n, cap;
} samples;

static int64_t monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void on_content(void *user_data, const char *json, size_t len) {
    int64_t now = monotonic_ns();
    samples *s = user_data;
    const char *p = json, *end = json + len;
    while (p + 2 < end && (p = memmem(p, (size_t)(end - p), "@@", 2)) != NULL) {
        char *colon, *semi;
        long long line = strtoll(p + 2, &colon, 10);
        if (*colon != ':') break;
        long long stamp = strtoll(colon + 1, &semi, 10);
        if (*semi != ';') break;
        if (s->n == s->cap) {
            s->cap = s->cap ? s->cap * 2 : 65536;
            s->line = realloc(s->line, s->cap * sizeof *s->line);
            s->latency = realloc(s->latency, s->cap * sizeof *s->latency);
            if (!s->line || !s->latency) abort();
        }
        s->line[s->n] = line;
        s->latency[s->n++] = now - stamp;
        p = semi + 1;
    }
}

/* The floor: fork/exec the emitter on a pipe and read it; every read is "the handler". */
static int pipe_floor(const char *emitter, samples *s) {
    int fds[2];
    if (pipe(fds) != 0) return 1;
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execl(emitter, emitter, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    static char buf[1 << 16];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
        if (n > 0) on_content(s, buf, (size_t)n);
    }
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    printf("state %s\n", WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "completed" : "failed");
    return 0;
}

static void check(agentstream_status status, const char *what) {
    if (status != AGENTSTREAM_STATUS_OK) {
        char msg[1024];
        size_t n = 0;
        agentstream_last_error_message(msg, sizeof msg, &n);
        fprintf(stderr, "%s: %s\n", what, msg);
        exit(1);
    }
}

static int write_samples(const char *path, const samples *s) {
    FILE *f = fopen(path, "w");
    if (!f) return 1;
    for (size_t i = 0; i < s->n; i++) fprintf(f, "%lld %lld\n", (long long)s->line[i], (long long)s->latency[i]);
    return fclose(f) == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
    samples s = {0};
    if (argc == 4 && strcmp(argv[1], "--pipe") == 0) {
        if (pipe_floor(argv[2], &s)) return 1;
        return write_samples(argv[3], &s);
    }
    if (argc != 3) {
        fprintf(stderr, "usage: %s [--pipe] EMITTER OUT_FILE\n", argv[0]);
        return 2;
    }
    agentstream_session *session = NULL;
    agentstream_run *run = NULL;
    check(agentstream_session_new("claude", &session), "session");
    check(agentstream_session_set_bin(session, argv[1]), "bin");
    check(agentstream_session_on(session, "content", on_content, &s, NULL, NULL), "on");
    check(agentstream_session_start_run(session, "latency", NULL, NULL, NULL, NULL, &run), "start");
    char *result = NULL;
    check(agentstream_run_wait(run, -1, &result, NULL), "wait");
    const char *state = strstr(result, "\"state\":\"");
    printf("state %.*s\n", state ? (int)strcspn(state + 9, "\"") : 7, state ? state + 9 : "unknown");
    agentstream_string_free(result);
    agentstream_run_free(run);
    agentstream_session_free(session);
    return write_samples(argv[2], &s);
}
