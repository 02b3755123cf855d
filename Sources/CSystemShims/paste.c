#include "CSystemShims.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned char pushback[8];
static int pushback_count = 0;
static char *pasted = NULL;
static size_t pasted_length = 0, pasted_capacity = 0;

static int next_byte(int fd) {
    if (pushback_count > 0) {
        unsigned char byte = pushback[0];
        memmove(pushback, pushback + 1, (size_t)--pushback_count);
        return byte;
    }
    unsigned char byte;
    ssize_t n = read(fd, &byte, 1);
    if (n == 1) return byte;
    return EOF; /* EOF, EINTR from Ctrl-C, or an error: libedit ends the line */
}

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

int gv_paste_getc(FILE *stream) {
    int fd = fileno(stream);
    int byte = next_byte(fd);
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
