#define _GNU_SOURCE
#include "CSystemShims.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <termios.h>
#include <unistd.h>

int gv_disable_core_dumps(void) {
    struct rlimit none = {0, 0};
    if (setrlimit(RLIMIT_CORE, &none) != 0) return -1;
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return -1;
    return 0;
}

int gv_is_dumpable(void) { return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0); }

// The signal handler cannot capture state, so the terminal being restored lives here.
static int saved_tty_fd = -1;
static struct termios saved_tty;
static const int guarded_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
static const int suspend_signals[] = {SIGTSTP, SIGTTIN, SIGTTOU, SIGCONT};
#define SUSPEND_COUNT (sizeof(suspend_signals) / sizeof(suspend_signals[0]))
static volatile sig_atomic_t suspend_pending = 0, continued = 0;

static void note_suspend(int sig) {
    if (sig == SIGCONT) continued = 1;
    else suspend_pending = sig;
}
#define GUARDED_COUNT (sizeof(guarded_signals) / sizeof(guarded_signals[0]))

static void restore_tty_and_reraise(int sig) {
    if (saved_tty_fd >= 0) {
        tcsetattr(saved_tty_fd, TCSAFLUSH, &saved_tty);
        (void)!write(saved_tty_fd, "\n", 1);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

int gv_tty_read_secret_on(int fd, const char *prompt, unsigned char *buffer, size_t capacity, size_t *length) {
    *length = 0;
    struct termios original;
    if (tcgetattr(fd, &original) != 0) return GV_TTY_NO_TERMINAL;

    saved_tty = original;
    saved_tty_fd = fd;
    struct sigaction guard, previous[GUARDED_COUNT];
    memset(&guard, 0, sizeof guard);
    guard.sa_handler = restore_tty_and_reraise;
    sigemptyset(&guard.sa_mask);
    for (size_t i = 0; i < GUARDED_COUNT; i++) sigaction(guarded_signals[i], &guard, &previous[i]);
    /* Ctrl-Z: like ssh and sudo, echo comes back while stopped and goes off again on fg. */
    struct sigaction suspend, previous_suspend[SUSPEND_COUNT];
    memset(&suspend, 0, sizeof suspend);
    suspend.sa_handler = note_suspend;
    sigemptyset(&suspend.sa_mask);
    suspend.sa_flags = 0; /* no SA_RESTART: the read returns EINTR and the loop acts */
    suspend_pending = continued = 0;
    for (size_t i = 0; i < SUSPEND_COUNT; i++) sigaction(suspend_signals[i], &suspend, &previous_suspend[i]);

    struct termios silent = original;
    silent.c_lflag &= ~(tcflag_t)(ECHO | ECHOE | ECHOK);
    silent.c_lflag |= ECHONL;
    int result = GV_TTY_OK;
    if (tcsetattr(fd, TCSAFLUSH, &silent) != 0) result = GV_TTY_IO_ERROR;
    if (result == GV_TTY_OK && write(fd, prompt, strlen(prompt)) < 0) result = GV_TTY_IO_ERROR;

    size_t used = 0;
    while (result == GV_TTY_OK) {
        unsigned char byte;
        ssize_t n = read(fd, &byte, 1);
        if (n < 0 && errno == EINTR) {
            if (suspend_pending) {
                /* The half-typed line is flushed, never left for the shell to read; after fg
                 * the prompt starts over, as with ssh and sudo. */
                int sig = suspend_pending;
                suspend_pending = 0;
                used = 0;
                tcsetattr(fd, TCSAFLUSH, &original);
                (void)!write(fd, "\n", 1);
                signal(sig, SIG_DFL);
                raise(sig); /* stopped here until fg */
                sigaction(sig, &suspend, NULL);
                continued = 1;
            }
            if (continued) {
                continued = 0;
                tcsetattr(fd, TCSAFLUSH, &silent);
                (void)!write(fd, prompt, strlen(prompt));
            }
            continue;
        }
        if (n < 0) { result = GV_TTY_IO_ERROR; break; }
        if (n == 0) { result = used == 0 ? GV_TTY_EOF : GV_TTY_OK; break; }
        if (byte == '\n' || byte == '\r') break;
        if (used == capacity) { result = GV_TTY_TOO_LONG; continue; }
        buffer[used++] = byte;
        byte = 0;
    }
    if (result == GV_TTY_TOO_LONG) {
        // Drain the rest of the line so it does not leak into the next prompt.
        unsigned char byte;
        while (read(fd, &byte, 1) == 1 && byte != '\n') {}
    }

    tcsetattr(fd, TCSAFLUSH, &original);
    for (size_t i = 0; i < GUARDED_COUNT; i++) sigaction(guarded_signals[i], &previous[i], NULL);
    for (size_t i = 0; i < SUSPEND_COUNT; i++) sigaction(suspend_signals[i], &previous_suspend[i], NULL);
    saved_tty_fd = -1;
    *length = result == GV_TTY_OK ? used : 0;
    return result;
}

/* Echo off while a chat reply streams. Keys typed then stay in the terminal's queue, unseen,
 * for the next prompt to read; they cannot land in the reply or move its cursor. The terminal
 * comes back as it was on every path, as for the passphrase prompt: SIGTERM, SIGHUP and
 * SIGQUIT restore it and re-raise; Ctrl-Z restores it while stopped and silences it again
 * after fg. SIGINT is left to the chat, which stops the reply with it. */
static int quiet_fd = -1;
static struct termios quiet_original, quiet_silent;
static const int quiet_guarded[] = {SIGTERM, SIGHUP, SIGQUIT};
#define QUIET_GUARDED_COUNT (sizeof(quiet_guarded) / sizeof(quiet_guarded[0]))
static struct sigaction quiet_previous[QUIET_GUARDED_COUNT], quiet_previous_suspend;

static void quiet_restore_and_reraise(int sig) {
    if (quiet_fd >= 0) tcsetattr(quiet_fd, TCSANOW, &quiet_original);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void quiet_suspend(int sig) {
    int saved = errno;
    if (quiet_fd >= 0) tcsetattr(quiet_fd, TCSANOW, &quiet_original);
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    raise(sig); /* stopped here until fg */
    struct sigaction again;
    memset(&again, 0, sizeof again);
    again.sa_handler = quiet_suspend;
    sigemptyset(&again.sa_mask);
    sigaction(sig, &again, NULL);
    if (quiet_fd >= 0) tcsetattr(quiet_fd, TCSANOW, &quiet_silent);
    errno = saved;
}

int gv_tty_quiet_begin(int fd) {
    if (quiet_fd >= 0) return 0;
    if (tcgetattr(fd, &quiet_original) != 0) return -1;
    if (!(quiet_original.c_lflag & ECHO)) return 0; /* already silent: nothing to undo */
    quiet_silent = quiet_original;
    quiet_silent.c_lflag &= ~(tcflag_t)(ECHO | ECHONL);
    struct sigaction guard;
    memset(&guard, 0, sizeof guard);
    guard.sa_handler = quiet_restore_and_reraise;
    sigemptyset(&guard.sa_mask);
    quiet_fd = fd;
    for (size_t i = 0; i < QUIET_GUARDED_COUNT; i++) sigaction(quiet_guarded[i], &guard, &quiet_previous[i]);
    struct sigaction suspend;
    memset(&suspend, 0, sizeof suspend);
    suspend.sa_handler = quiet_suspend;
    sigemptyset(&suspend.sa_mask);
    sigaction(SIGTSTP, &suspend, &quiet_previous_suspend);
    /* TCSANOW, never TCSAFLUSH: what was typed ahead is kept. */
    if (tcsetattr(fd, TCSANOW, &quiet_silent) != 0) {
        gv_tty_quiet_end();
        return -1;
    }
    return 0;
}

void gv_tty_quiet_end(void) {
    if (quiet_fd < 0) return;
    tcsetattr(quiet_fd, TCSANOW, &quiet_original);
    quiet_fd = -1;
    for (size_t i = 0; i < QUIET_GUARDED_COUNT; i++) sigaction(quiet_guarded[i], &quiet_previous[i], NULL);
    sigaction(SIGTSTP, &quiet_previous_suspend, NULL);
}

static volatile sig_atomic_t interrupt_flag = 0;
static volatile sig_atomic_t interrupt_signal = 0;

static void note_interrupt(int sig) {
    interrupt_flag = 1;
    interrupt_signal = sig;
}

static void note_signal(int sig, struct sigaction *previous) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = note_interrupt;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0; // no SA_RESTART: blocking reads must return EINTR
    sigaction(sig, &action, previous);
}

static struct sigaction before_term, before_hup;
static int termination_noted = 0;

void gv_interrupt_install(void) { note_signal(SIGINT, NULL); }
void gv_interrupt_install_termination(void) {
    note_signal(SIGTERM, &before_term);
    note_signal(SIGHUP, &before_hup);
    termination_noted = 1;
}

void gv_interrupt_uninstall(void) {
    signal(SIGINT, SIG_DFL);
    if (termination_noted) {
        sigaction(SIGTERM, &before_term, NULL);
        sigaction(SIGHUP, &before_hup, NULL);
        termination_noted = 0;
    }
}
int gv_interrupt_pending(void) { return interrupt_flag != 0; }
int gv_interrupt_termination_signal(void) { return interrupt_signal == SIGTERM || interrupt_signal == SIGHUP ? interrupt_signal : 0; }
void gv_interrupt_clear(void) { interrupt_flag = 0; interrupt_signal = 0; }

#include <spawn.h>
int gv_spawn_close_from(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}

#include <stddef.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

int gv_accept_cloexec(int listening) { return accept4(listening, NULL, NULL, SOCK_CLOEXEC); }

int gv_peer_credentials(int fd, pid_t *pid, uid_t *uid) {
    struct ucred credentials;
    socklen_t length = sizeof credentials;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
    *pid = credentials.pid;
    *uid = credentials.uid;
    return 0;
}

static int unix_address(const char *path, struct sockaddr_un *address) {
    memset(address, 0, sizeof *address);
    address->sun_family = AF_UNIX;
    if (strlen(path) >= sizeof address->sun_path) { errno = ENAMETOOLONG; return -1; }
    strcpy(address->sun_path, path);
    return 0;
}

// The whole backlog the kernel allows: a flood of clients waits in it instead of being refused.
int gv_unix_listen(const char *path) {
    struct sockaddr_un address;
    if (unix_address(path, &address) != 0) return -1;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    /* No window in which the socket exists with a looser mode. */
    mode_t previous = umask(0177);
    int bound = bind(fd, (struct sockaddr *)&address, sizeof address);
    umask(previous);
    if (bound != 0 || chmod(path, 0600) != 0 || listen(fd, SOMAXCONN) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int gv_unix_connect_nonblocking(const char *path) {
    struct sockaddr_un address;
    if (unix_address(path, &address) != 0) return -1;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -1;
    if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}


static volatile sig_atomic_t agent_stop = 0;
static void note_agent_stop(int sig) { (void)sig; agent_stop = 1; }

void gv_agent_signals_install(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = note_agent_stop;
    sigemptyset(&action.sa_mask);
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);
    sigaction(SIGHUP, &action, NULL);
    signal(SIGPIPE, SIG_IGN);
}

int gv_agent_stop_requested(void) { return agent_stop != 0; }

#include <sys/vfs.h>
long gv_file_system_type(int fd) {
    struct statfs info;
    if (fstatfs(fd, &info) != 0) return -1;
    return (long)info.f_type;
}

static volatile pid_t forward_target = 0;

static void forward_signal(int sig, siginfo_t *info, void *context) {
    (void)context;
    /* si_code <= 0: sent by kill(), sigqueue() or tkill(); SI_KERNEL: from the terminal. */
    if (forward_target > 0 && info && info->si_code <= 0) kill(forward_target, sig);
}

void gv_forward_signals_to(pid_t child) {
    forward_target = child;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = forward_signal;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH};
    for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++) sigaction(forwarded[i], &action, NULL);
}

static void forwarded_set(sigset_t *set) {
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGHUP);
    sigaddset(set, SIGQUIT);
    sigaddset(set, SIGWINCH);
}

void gv_forward_signals_block(void) {
    sigset_t set;
    forwarded_set(&set);
    sigprocmask(SIG_BLOCK, &set, NULL);
}

void gv_forward_signals_unblock(void) {
    sigset_t set;
    forwarded_set(&set);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
}

#include <locale.h>
#include <pthread.h>
#include <wchar.h>

static locale_t utf8_locale = (locale_t)0;
static pthread_once_t utf8_once = PTHREAD_ONCE_INIT;
static void make_utf8_locale(void) { utf8_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0); }

int gv_display_width(unsigned int scalar) {
    pthread_once(&utf8_once, make_utf8_locale);
    int width;
    if (utf8_locale) {
        locale_t previous = uselocale(utf8_locale);
        width = wcwidth((wchar_t)scalar);
        uselocale(previous);
    } else {
        width = wcwidth((wchar_t)scalar);
    }
    return width < 0 ? 0 : width;
}

#include <sys/ioctl.h>
int gv_terminal_columns(int fd) {
    struct winsize size;
    if (ioctl(fd, TIOCGWINSZ, &size) != 0) return 0;
    return size.ws_col;
}

int gv_terminal_rows(int fd) {
    struct winsize size;
    if (ioctl(fd, TIOCGWINSZ, &size) != 0) return 0;
    return size.ws_row;
}
