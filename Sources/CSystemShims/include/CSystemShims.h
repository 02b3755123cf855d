#ifndef GEMVAULT_SYSTEM_SHIMS_H
#define GEMVAULT_SYSTEM_SHIMS_H

#include <stddef.h>
#include <sys/types.h>

/// Sets RLIMIT_CORE to 0 and PR_SET_DUMPABLE to 0. Returns 0, or -1 with errno set.
int gv_disable_core_dumps(void);

/// Reports PR_GET_DUMPABLE (1 or 0), or -1 on error.
int gv_is_dumpable(void);

/// Result codes of gv_tty_read_secret_on.
enum {
    GV_TTY_OK = 0,
    GV_TTY_NO_TERMINAL = 1, /* no controlling terminal (ENXIO and friends) */
    GV_TTY_IO_ERROR = 2,
    GV_TTY_TOO_LONG = 3,
    GV_TTY_EOF = 4,
};

/// Prompts on the terminal `fd` (/dev/tty, opened once by TerminalIO and left open) with
/// echo off and reads one line into `buffer`.
///
/// The terminal's settings are restored on every path: a SIGINT, SIGTERM,
/// SIGHUP or SIGQUIT during the read restores them from a signal handler,
/// then re-raises the signal with its default action.
int gv_tty_read_secret_on(int fd, const char *prompt, unsigned char *buffer, size_t capacity, size_t *length);

/// Turns echo off on terminal `fd` while a chat reply streams (typed keys wait, unseen, for the
/// next prompt), until gv_tty_quiet_end. As for gv_tty_read_secret_on, SIGTERM, SIGHUP and SIGQUIT
/// restore the terminal and re-raise; Ctrl-Z restores it while stopped. SIGINT is untouched.
/// Returns 0, or -1 when `fd` is not a terminal.
int gv_tty_quiet_begin(int fd);
void gv_tty_quiet_end(void);

/// Installs a SIGINT handler without SA_RESTART that only records the signal.
/// Blocking reads then return EINTR, which libedit reports as a NULL line.
void gv_interrupt_install(void);
/// Records SIGTERM and SIGHUP the same way, for a command that must still report before it ends.
void gv_interrupt_install_termination(void);
/// Restores the default SIGINT action, and SIGTERM's and SIGHUP's from before they were recorded.
void gv_interrupt_uninstall(void);
/// Returns 1 if a recorded signal arrived since the last clear, else 0.
int gv_interrupt_pending(void);
/// SIGTERM or SIGHUP when the last recorded signal was one of them, else 0.
int gv_interrupt_termination_signal(void);
void gv_interrupt_clear(void);

#endif

#include <stdio.h>

/// A getc for libedit (rl_getc_function) that understands bracketed paste: the text between
/// ESC[200~ and ESC[201~ is collected aside (newlines included) and the line ends, so a
/// pasted block arrives as one message. EINTR (Ctrl-C) reads as EOF.
int gv_paste_getc(FILE *stream);
/// Job control around one libedit read: Ctrl-Z restores the shell's terminal modes (and
/// sends `leave`, such as the end of bracketed paste), stops, and on fg puts the editor's
/// modes back, sends `enter` and calls `redisplay`; a resize ends the read with
/// `resize_key`, which the caller binds to its redraw (it knows where the cursor stands).
/// The line being typed is kept in both cases.
void gv_edit_signals_begin(int terminal_fd, void (*redisplay)(void), int resize_key,
                           const char *leave, const char *enter);
/// Back to the default actions, outside the line editor (a reply may then be stopped with Ctrl-Z as usual).
void gv_edit_signals_end(void);
/// Hands over the last pasted block (malloc'd, NUL-terminated) or NULL; the caller frees it.
char *gv_paste_take(void);

#include <spawn.h>
/// Makes a spawned child close every descriptor from `from` up (posix_spawn_file_actions_addclosefrom_np).
int gv_spawn_close_from(posix_spawn_file_actions_t *actions, int from);

/// O_PATH (Linux), which Swift's Glibc module does not export without _GNU_SOURCE.
#define GV_O_PATH 010000000

/// The agent's SIGTERM, SIGINT and SIGHUP only set a flag (no SA_RESTART, so poll returns),
/// and SIGPIPE is ignored; the loop then wipes and exits.
void gv_agent_signals_install(void);
int gv_agent_stop_requested(void);

/// POSIX_SPAWN_SETSID (glibc), hidden from Swift behind _GNU_SOURCE.
#define GV_POSIX_SPAWN_SETSID 0x80

/// accept4 with SOCK_CLOEXEC; returns the new descriptor or -1 with errno set.
int gv_accept_cloexec(int listening);
/// The peer of a connected Unix socket (SO_PEERCRED). Returns 0, or -1 with errno set.
int gv_peer_credentials(int fd, pid_t *pid, uid_t *uid);
/// A SOCK_STREAM Unix socket (close-on-exec) bound to `path` with mode 0600 and listening
/// (a backlog of 64), or connected to it. Returns the descriptor or -1 with errno set;
/// ENAMETOOLONG for a path longer than 107 bytes (UnixSocket shortens it through /proc).
int gv_unix_listen(const char *path);
/// A connected non-blocking socket: a listener whose queue is full answers EAGAIN at once
/// instead of holding the caller (a peer that never accepts cannot hang it).
int gv_unix_connect_nonblocking(const char *path);

/// The file system type (statfs f_type) of an open descriptor, or -1.
long gv_file_system_type(int fd);

/// For `exec`: SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGWINCH sent to gemvault by another
/// process (kill) are passed on to `child`; the same signals from the terminal already reach
/// the child (same process group) and are not sent twice.
void gv_forward_signals_to(pid_t child);
/// Blocks, then unblocks, the signals `gv_forward_signals_to` passes on.
void gv_forward_signals_block(void);
void gv_forward_signals_unblock(void);

/// Columns a Unicode scalar takes in a terminal (glibc wcwidth under a UTF-8 locale):
/// 2 for East Asian wide characters and most emoji, 0 for combining marks, 1 otherwise.
int gv_display_width(unsigned int scalar);

/// The terminal's width in columns (TIOCGWINSZ), or 0 when `fd` is not a terminal.
int gv_terminal_columns(int fd);

/// Rows of the terminal on fd, or 0 when it is not one.
int gv_terminal_rows(int fd);
