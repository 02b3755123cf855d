#include "CSystemShims.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

/* Job control at the chat prompt. libedit's own signal handling (rl_catch_signals) is off:
 * with a custom getc it would end the line on any signal. Here a resize or a stop only
 * interrupts the read; the getc handles it and reads on, so the line being typed survives.
 * A resize is handed to libedit as a key bound to the caller's redraw, which alone knows
 * where the cursor is in the line (libedit's own redisplay draws from wherever the cursor
 * stands, so the line came out twice on its row). */
static volatile sig_atomic_t pending_stop = 0, pending_continue = 0, pending_resize = 0;
static struct termios shell_mode;
static int have_shell_mode = 0;
static void (*redisplay_line)(void) = NULL;
static int resize_key = -1;
static const char *leave_sequence = NULL, *enter_sequence = NULL;

static void note_job_signal(int sig) {
    if (sig == SIGTSTP) pending_stop = 1;
    else if (sig == SIGCONT) pending_continue = 1;
    else if (sig == SIGWINCH) pending_resize = 1;
}

static void install_job_handlers(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = note_job_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0; /* no SA_RESTART: the read must return so the getc can act */
    sigaction(SIGTSTP, &action, NULL);
    sigaction(SIGCONT, &action, NULL);
    sigaction(SIGWINCH, &action, NULL);
}

void gv_edit_signals_begin(int terminal_fd, void (*redisplay)(void), int resize,
                           const char *leave, const char *enter) {
    have_shell_mode = tcgetattr(terminal_fd, &shell_mode) == 0;
    redisplay_line = redisplay;
    resize_key = resize;
    leave_sequence = leave;
    enter_sequence = enter;
    pending_stop = pending_continue = pending_resize = 0;
    install_job_handlers();
}

void gv_edit_signals_end(void) {
    signal(SIGTSTP, SIG_DFL);
    signal(SIGCONT, SIG_DFL);
    signal(SIGWINCH, SIG_DFL);
}

static void write_all(int fd, const char *text) {
    if (!text) return;
    size_t length = strlen(text);
    while (length > 0) {
        ssize_t n = write(fd, text, length);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        text += n;
        length -= (size_t)n;
    }
}

/* Acts on a stop or a continue that interrupted a read; a resize waits for the getc. */
static void handle_job_signals(int fd) {
    if (pending_stop) {
        pending_stop = 0;
        struct termios edit_mode;
        int have_edit_mode = tcgetattr(fd, &edit_mode) == 0;
        write_all(STDOUT_FILENO, leave_sequence);
        if (have_shell_mode) tcsetattr(fd, TCSADRAIN, &shell_mode);
        write_all(STDOUT_FILENO, "\n");
        signal(SIGTSTP, SIG_DFL);
        raise(SIGTSTP); /* stops here until fg */
        install_job_handlers();
        if (have_edit_mode) tcsetattr(fd, TCSADRAIN, &edit_mode);
        write_all(STDOUT_FILENO, enter_sequence);
        pending_continue = 0;
        if (redisplay_line) redisplay_line();
    }
    if (pending_continue) {
        /* Stopped by something else (SIGSTOP): the shell may have reset the terminal. */
        pending_continue = 0;
        if (redisplay_line) redisplay_line();
    }
}

static unsigned char pushback[8];
static int pushback_count = 0;
static char *pasted = NULL;
static size_t pasted_length = 0, pasted_capacity = 0;

/* `top`: called for a key of its own, not inside an escape sequence or a paste, so that a
 * resize may end the read with the resize key. */
#define RESIZED (-2)
static int next_byte_at(int fd, int top) {
    if (pushback_count > 0) {
        unsigned char byte = pushback[0];
        memmove(pushback, pushback + 1, (size_t)--pushback_count);
        return byte;
    }
    unsigned char byte;
    for (;;) {
        ssize_t n = read(fd, &byte, 1);
        if (n == 1) return byte;
        if (n < 0 && errno == EINTR && !gv_interrupt_pending()) {
            handle_job_signals(fd);
            if (top && pending_resize && resize_key >= 0) {
                pending_resize = 0;
                return RESIZED;
            }
            continue;
        }
        return EOF; /* EOF, EINTR from Ctrl-C, or an error: libedit ends the line */
    }
}

static int next_byte(int fd) { return next_byte_at(fd, 0); }

static void append(char byte) {
    if (pasted_length + 2 > pasted_capacity) {
        size_t capacity = pasted_capacity ? pasted_capacity * 2 : 1024;
        char *grown = realloc(pasted, capacity);
        if (!grown) return;
        pasted = grown;
        pasted_capacity = capacity;
    }
    pasted[pasted_length++] = byte;
    pasted[pasted_length] = 0;
}

/* Reads the bytes of `marker` after an ESC; on a mismatch they are pushed back. */
static int matches(int fd, const char *marker) {
    size_t length = strlen(marker);
    unsigned char seen[8];
    size_t count = 0;
    for (; count < length; count++) {
        int byte = next_byte(fd);
        if (byte == EOF) break;
        seen[count] = (unsigned char)byte;
        if (byte != (unsigned char)marker[count]) { count++; break; }
    }
    if (count == length && memcmp(seen, marker, length) == 0) return 1;
    memmove(pushback + count, pushback, (size_t)pushback_count);
    memcpy(pushback, seen, count);
    pushback_count += (int)count;
    return 0;
}

/* libedit takes what a getc returns as one wide character, so a UTF-8 sequence is decoded
 * here into its code point (an invalid one becomes U+FFFD). */
static int decode_utf8(int fd, int lead) {
    int length = lead >= 0xF0 && lead <= 0xF7 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 0;
    if (length == 0) return 0xFFFD;
    int point = lead & (0x3F >> (length - 1));
    for (int i = 1; i < length; i++) {
        int next = next_byte(fd);
        if (next == EOF) return EOF;
        if ((next & 0xC0) != 0x80) return 0xFFFD;
        point = (point << 6) | (next & 0x3F);
    }
    return point;
}

int gv_paste_getc(FILE *stream) {
    int fd = fileno(stream);
    if (pending_resize && resize_key >= 0 && pushback_count == 0) {
        pending_resize = 0;
        return resize_key;
    }
    int byte = next_byte_at(fd, 1);
    if (byte == RESIZED) return resize_key;
    if (byte != EOF && byte >= 0x80) return decode_utf8(fd, byte);
    if (byte != 0x1b || !matches(fd, "[200~")) return byte;
    free(pasted);
    pasted = NULL;
    pasted_length = pasted_capacity = 0;
    append(0);
    pasted_length = 0;
    for (;;) {
        int c = next_byte(fd);
        if (c == EOF) break;
        if (c == 0x1b && matches(fd, "[201~")) break;
        append(c == '\r' ? '\n' : (char)c);
    }
    return '\n';
}

char *gv_paste_take(void) {
    char *block = pasted;
    pasted = NULL;
    pasted_length = pasted_capacity = 0;
    return block;
}
