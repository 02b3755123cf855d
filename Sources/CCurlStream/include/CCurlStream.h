#ifndef GEMVAULT_CURL_STREAM_H
#define GEMVAULT_CURL_STREAM_H

#include <stddef.h>

/// One HTTP request. Header strings are copied by libcurl and wiped after the transfer.
typedef struct gv_http_request {
    const char *method;               /* "GET", "POST", "DELETE" or "PATCH" */
    const char *url;
    const char *const *headers;       /* "Name: value" strings */
    size_t header_count;
    const unsigned char *body;        /* may be NULL for GET */
    size_t body_length;
    long idle_timeout_ms;             /* limit on connecting and getting the headers, then between bodies' signs of progress */
    int no_proxy;                     /* non-zero: connect directly, whatever the proxy variables say */
    const char *capture_header;       /* a response header's name ("x-gemini-service-tier"), or NULL */
    char *captured;                   /* its value (printable ASCII, cut to fit, NUL-terminated; "" when absent) */
    size_t captured_capacity;
} gv_http_request;

/// Called with each piece of the response body as it arrives, with the HTTP status.
/// Returns one of the GV_HTTP_DATA_ values below.
typedef int (*gv_http_data_callback)(long status, const unsigned char *data, size_t length, void *context);

enum {
    GV_HTTP_DATA_CONTINUE = 0, /* keep going; the idle clock keeps running */
    GV_HTTP_DATA_ABORT = 1,    /* stop the transfer */
    GV_HTTP_DATA_PROGRESS = 2, /* keep going, and restart the idle clock (a whole event arrived) */
};
/// Called about every 100 ms while waiting. Return nonzero to cancel the transfer.
typedef int (*gv_http_tick_callback)(void *context);

enum {
    GV_HTTP_COMPLETE = 0,
    GV_HTTP_LIBRARY_MISSING = 1, /* libcurl.so.4 could not be loaded */
    GV_HTTP_TRANSPORT_ERROR = 2, /* connection refused, reset, DNS, TLS ... (message filled in) */
    GV_HTTP_IDLE_TIMEOUT = 3,
    GV_HTTP_CANCELLED = 4,       /* the tick callback asked to stop */
    GV_HTTP_ABORTED = 5,         /* the data callback asked to stop */
    GV_HTTP_CONNECTION_REFUSED = 6, /* every address refused the connection (ECONNREFUSED; message filled in) */
    GV_HTTP_REFUSED_HEADER = 7,  /* a header holds a line break or another byte outside printable ASCII: nothing was sent */
};

/// Performs the request, streaming the body to `on_data`. Fills `status`, `retry_after`
/// (the Retry-After header's seconds, or -1), `date` (the Date header's text, or empty;
/// NUL-terminated, at most `date_capacity` bytes) and, on a transport error, `message`
/// (NUL-terminated, at most `message_capacity` bytes).
int gv_http_perform(const gv_http_request *request,
                    gv_http_data_callback on_data,
                    gv_http_tick_callback on_tick,
                    void *context,
                    long *status,
                    long *retry_after,
                    char *date,
                    size_t date_capacity,
                    char *message,
                    size_t message_capacity);

/// 1 when libcurl is already mapped into this process, else 0 (for tests of lazy loading).
int gv_http_library_loaded(void);

/// Starts loading libcurl on a background thread, so the work overlaps with resolving the
/// key and settings. gv_http_perform waits for it. Safe to call more than once.
void gv_http_preload(void);

/// Waits for a load that gv_http_preload started, if any. Call it before the process exits:
/// exit() running library destructors while the other thread is inside dlopen crashes.
void gv_http_preload_settle(void);

#endif
