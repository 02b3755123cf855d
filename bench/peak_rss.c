/* peak_rss OUT COMMAND [ARG...]: runs COMMAND and writes its peak resident memory in KiB to OUT.
 *
 * Linux keeps a process's high-water mark across exec (ru_maxrss is the larger of the memory
 * before and after exec), so a command forked from Python starts with Python's figure. Forked
 * from this small program, the command's figure is its own (this launcher's few hundred KiB
 * are the floor). Output and terminal pass through untouched; the exit code is the command's,
 * or 128 plus the signal that ended it. bench/run compiles it with cc. */
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: peak_rss OUT COMMAND [ARG...]\n");
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("peak_rss: fork");
        return 2;
    }
    if (pid == 0) {
        execvp(argv[2], argv + 2);
        perror("peak_rss: exec");
        _exit(127);
    }
    /* As GNU time does: a ^C or ^\ on the terminal is for the command, not for the one measuring it. */
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    int status;
    struct rusage usage;
    while (wait4(pid, &status, 0, &usage) < 0) {
        perror("peak_rss: wait4");
        return 2;
    }
    FILE *out = fopen(argv[1], "w");
    if (!out || fprintf(out, "%ld\n", usage.ru_maxrss) < 0 || fclose(out) != 0) {
        perror("peak_rss: writing the figure");
        return 2;
    }
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}
