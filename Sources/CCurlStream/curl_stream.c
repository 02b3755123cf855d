// libcurl is opened with dlopen on the first request. Linking it normally would make
// the dynamic loader map libcurl, OpenSSL and some thirty other libraries at every
// start, and `gemvault key get` must start in a few milliseconds.
#define _GNU_SOURCE
#include "CCurlStream.h"

#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static struct {
    void *handle;
    CURLcode (*global_init)(long);
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    void (*easy_cleanup)(CURL *);
    const char *(*easy_strerror)(CURLcode);
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_add_handle)(CURLM *, CURL *);
    CURLMcode (*multi_remove_handle)(CURLM *, CURL *);
    CURLMcode (*multi_perform)(CURLM *, int *);
    CURLMcode (*multi_poll)(CURLM *, struct curl_waitfd *, unsigned int, int, int *);
    CURLMsg *(*multi_info_read)(CURLM *, int *);
    CURLMcode (*multi_cleanup)(CURLM *);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
} curl;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_ok = 0;

#define BIND(field, symbol) \
    if (!(*(void **)(&curl.field) = dlsym(curl.handle, symbol))) return;

static void load_library(void) {
    curl.handle = dlopen("libcurl.so.4", RTLD_LAZY | RTLD_LOCAL);
    if (!curl.handle) return;
    BIND(global_init, "curl_global_init")
    BIND(easy_init, "curl_easy_init")
    BIND(easy_setopt, "curl_easy_setopt")
    BIND(easy_getinfo, "curl_easy_getinfo")
    BIND(easy_cleanup, "curl_easy_cleanup")
    BIND(easy_strerror, "curl_easy_strerror")
    BIND(multi_init, "curl_multi_init")
    BIND(multi_add_handle, "curl_multi_add_handle")
    BIND(multi_remove_handle, "curl_multi_remove_handle")
    BIND(multi_perform, "curl_multi_perform")
    BIND(multi_poll, "curl_multi_poll")
    BIND(multi_info_read, "curl_multi_info_read")
    BIND(multi_cleanup, "curl_multi_cleanup")
    BIND(slist_append, "curl_slist_append")
    BIND(slist_free_all, "curl_slist_free_all")
    if (curl.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) return;
    load_ok = 1;
}

static void *preload_thread(void *unused) {
    (void)unused;
    pthread_once(&load_once, load_library);
    return NULL;
}

static atomic_int preload_started = 0;

void gv_http_preload(void) {
    atomic_store(&preload_started, 1);
    pthread_t thread;
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&thread, &attributes, preload_thread, NULL) != 0) pthread_once(&load_once, load_library);
    pthread_attr_destroy(&attributes);
}

void gv_http_preload_settle(void) {
    // pthread_once waits for a load in progress on the other thread; none started, none waited for.
    if (atomic_load(&preload_started)) pthread_once(&load_once, load_library);
}

int gv_http_library_loaded(void) {
    void *probe = dlopen("libcurl.so.4", RTLD_NOW | RTLD_NOLOAD);
    if (probe) { dlclose(probe); return 1; }
    return 0;
}

typedef struct transfer {
    CURL *easy;
    gv_http_data_callback on_data;
    void *context;
    long status;
    int aborted;
    long retry_after;
    const char *capture_name;
    char *captured;
    size_t captured_capacity;
    char date[64];
    struct timespec last_activity;
} transfer;

static long elapsed_ms(const struct timespec *since) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - since->tv_sec) * 1000 + (now.tv_nsec - since->tv_nsec) / 1000000;
}

// Bytes alone do not restart the idle clock: a server dripping a byte at a time (or a
// header line at a time) would hold the client forever. Only the end of the headers and
// the caller's word that a whole event arrived do.
static size_t receive_body(char *data, size_t size, size_t count, void *user) {
    transfer *t = user;
    size_t length = size * count;
    if (t->status == 0) curl.easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &t->status);
    int verdict = t->on_data(t->status, (const unsigned char *)data, length, t->context);
    if (verdict == GV_HTTP_DATA_ABORT) {
        t->aborted = 1;
        return 0;
    }
    if (verdict == GV_HTTP_DATA_PROGRESS) clock_gettime(CLOCK_MONOTONIC, &t->last_activity);
    return length;
}

// The value of the one header the caller asked for, trimmed; only printable ASCII is kept.
static void capture_header(transfer *t, const char *data, size_t length) {
    if (!t->capture_name || !t->captured || t->captured_capacity == 0) return;
    size_t name_length = strlen(t->capture_name);
    if (length <= name_length || strncasecmp(data, t->capture_name, name_length) != 0 || data[name_length] != ':') return;
    size_t index = name_length + 1, out = 0;
    while (index < length && (data[index] == ' ' || data[index] == '\t')) index++;
    while (index < length && data[index] != '\r' && data[index] != '\n' && out + 1 < t->captured_capacity) {
        if (data[index] >= 0x20 && data[index] < 0x7f) t->captured[out++] = data[index];
        index++;
    }
    while (out > 0 && (t->captured[out - 1] == ' ' || t->captured[out - 1] == '\t')) out--;
    t->captured[out] = 0;
}

static size_t receive_header(char *data, size_t size, size_t count, void *user) {
    transfer *t = user;
    size_t length = size * count;
    int blank = (length == 2 && data[0] == '\r' && data[1] == '\n') || (length == 1 && data[0] == '\n');
    if (blank) clock_gettime(CLOCK_MONOTONIC, &t->last_activity);
    // Each response (an interim one too) starts afresh; only delay-seconds is read, not a date.
    if (length >= 5 && strncmp(data, "HTTP/", 5) == 0) {
        t->retry_after = -1;
        if (t->captured) t->captured[0] = 0;
        t->date[0] = 0;
    }
    capture_header(t, data, length);
    // The Date header's text, kept only when it is short printable ASCII (Swift parses it).
    static const char date_name[] = "date:";
    if (length > sizeof date_name - 1 && strncasecmp(data, date_name, sizeof date_name - 1) == 0) {
        size_t start = sizeof date_name - 1, end = length;
        while (start < end && (data[start] == ' ' || data[start] == '\t')) start++;
        while (end > start && (data[end - 1] == ' ' || data[end - 1] == '\t' || data[end - 1] == '\r' || data[end - 1] == '\n')) end--;
        size_t kept = 0;
        if (end - start < sizeof t->date) {
            for (size_t i = start; i < end && data[i] >= 0x20 && data[i] < 0x7f; i++) t->date[kept++] = data[i];
            if (kept != end - start) kept = 0;
        }
        t->date[kept] = 0;
    }
    static const char name[] = "retry-after:";
    if (length > sizeof name - 1 && strncasecmp(data, name, sizeof name - 1) == 0) {
        size_t index = sizeof name - 1;
        while (index < length && (data[index] == ' ' || data[index] == '\t')) index++;
        long seconds = 0;
        size_t digits = 0;
        while (index < length && data[index] >= '0' && data[index] <= '9' && digits < 9) {
            seconds = seconds * 10 + (data[index] - '0');
            index++;
            digits++;
        }
        while (index < length && (data[index] == ' ' || data[index] == '\t' || data[index] == '\r' || data[index] == '\n')) index++;
        if (digits > 0 && index == length) t->retry_after = seconds;
    }
    return length;
}

static void wipe_and_free(struct curl_slist *list) {
    // The list holds the API key header; libcurl would free it without wiping.
    for (struct curl_slist *node = list; node; node = node->next)
        if (node->data) explicit_bzero(node->data, strlen(node->data));
    curl.slist_free_all(list);
}

static void set_message(char *message, size_t capacity, const char *text) {
    if (capacity == 0) return;
    snprintf(message, capacity, "%s", text);
}

// The last guard against header injection: a CR or LF in a value (a key's second line)
// would end the header and start another, so only printable ASCII goes out.
static int header_is_printable(const char *header) {
    for (const unsigned char *byte = (const unsigned char *)header; *byte; byte++)
        if (*byte < 0x20 || *byte >= 0x7f) return 0;
    return 1;
}

int gv_http_perform(const gv_http_request *request, gv_http_data_callback on_data,
                    gv_http_tick_callback on_tick, void *context, long *status,
                    long *retry_after, char *date, size_t date_capacity, char *message, size_t message_capacity) {
    *status = 0;
    *retry_after = -1;
    if (date_capacity > 0) date[0] = 0;
    set_message(message, message_capacity, "");
    for (size_t i = 0; i < request->header_count; i++) {
        if (!header_is_printable(request->headers[i])) {
            set_message(message, message_capacity, "a request header holds a line break or a byte outside printable ASCII; nothing was sent");
            return GV_HTTP_REFUSED_HEADER;
        }
    }
    pthread_once(&load_once, load_library);
    if (!load_ok) {
        set_message(message, message_capacity, "libcurl.so.4 could not be loaded");
        return GV_HTTP_LIBRARY_MISSING;
    }

    transfer t = {0};
    t.retry_after = -1;
    t.capture_name = request->capture_header;
    t.captured = request->captured;
    t.captured_capacity = request->captured_capacity;
    if (t.captured && t.captured_capacity > 0) t.captured[0] = 0;
    t.on_data = on_data;
    t.context = context;
    t.easy = curl.easy_init();
    CURLM *multi = curl.multi_init();
    if (!t.easy || !multi) {
        set_message(message, message_capacity, "libcurl could not start a transfer");
        if (t.easy) curl.easy_cleanup(t.easy);
        if (multi) curl.multi_cleanup(multi);
        return GV_HTTP_TRANSPORT_ERROR;
    }

    struct curl_slist *headers = NULL;
    for (size_t i = 0; i < request->header_count; i++)
        headers = curl.slist_append(headers, request->headers[i]);
    // Without this libcurl adds "Expect: 100-continue" to large POSTs and waits a second.
    headers = curl.slist_append(headers, "Expect:");

    char curl_error[CURL_ERROR_SIZE] = {0};
    curl.easy_setopt(t.easy, CURLOPT_URL, request->url);
    curl.easy_setopt(t.easy, CURLOPT_HTTPHEADER, headers);
    curl.easy_setopt(t.easy, CURLOPT_NOSIGNAL, 1L);
    curl.easy_setopt(t.easy, CURLOPT_USERAGENT, "gemvault");
    curl.easy_setopt(t.easy, CURLOPT_ERRORBUFFER, curl_error);
    curl.easy_setopt(t.easy, CURLOPT_WRITEFUNCTION, receive_body);
    curl.easy_setopt(t.easy, CURLOPT_WRITEDATA, &t);
    curl.easy_setopt(t.easy, CURLOPT_HEADERFUNCTION, receive_header);
    curl.easy_setopt(t.easy, CURLOPT_HEADERDATA, &t);
    curl.easy_setopt(t.easy, CURLOPT_CONNECTTIMEOUT_MS, request->idle_timeout_ms);
    curl.easy_setopt(t.easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl.easy_setopt(t.easy, CURLOPT_FOLLOWLOCATION, 0L);
    // An empty proxy string disables every proxy, whatever the environment says.
    if (request->no_proxy) curl.easy_setopt(t.easy, CURLOPT_PROXY, "");
    if (request->body) {
        curl.easy_setopt(t.easy, CURLOPT_POST, 1L);
        curl.easy_setopt(t.easy, CURLOPT_POSTFIELDS, (const char *)request->body);
        curl.easy_setopt(t.easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)request->body_length);
    } else {
        curl.easy_setopt(t.easy, CURLOPT_HTTPGET, 1L);
    }
    // DELETE and PATCH (the API Keys service) keep the body handling above and change the verb.
    if (request->method && strcmp(request->method, "GET") != 0 && strcmp(request->method, "POST") != 0)
        curl.easy_setopt(t.easy, CURLOPT_CUSTOMREQUEST, request->method);

    clock_gettime(CLOCK_MONOTONIC, &t.last_activity);
    curl.multi_add_handle(multi, t.easy);
    int outcome = GV_HTTP_COMPLETE;
    int running = 1;
    while (running) {
        if (curl.multi_perform(multi, &running) != CURLM_OK) break;
        if (!running) break;
        curl.multi_poll(multi, NULL, 0, 100, NULL);
        if (on_tick && on_tick(context) != 0) { outcome = GV_HTTP_CANCELLED; break; }
        if (elapsed_ms(&t.last_activity) > request->idle_timeout_ms) { outcome = GV_HTTP_IDLE_TIMEOUT; break; }
    }

    if (outcome == GV_HTTP_COMPLETE) {
        int pending = 0;
        CURLMsg *done = curl.multi_info_read(multi, &pending);
        CURLcode code = done && done->msg == CURLMSG_DONE ? done->data.result : CURLE_OK;
        if (t.aborted) {
            outcome = GV_HTTP_ABORTED;
        } else if (code == CURLE_OPERATION_TIMEDOUT) {
            outcome = GV_HTTP_IDLE_TIMEOUT;
        } else if (code != CURLE_OK) {
            long os_errno = 0;
            if (code == CURLE_COULDNT_CONNECT) curl.easy_getinfo(t.easy, CURLINFO_OS_ERRNO, &os_errno);
            outcome = os_errno == ECONNREFUSED ? GV_HTTP_CONNECTION_REFUSED : GV_HTTP_TRANSPORT_ERROR;
            set_message(message, message_capacity, curl_error[0] ? curl_error : curl.easy_strerror(code));
        }
    }
    if (t.status == 0) curl.easy_getinfo(t.easy, CURLINFO_RESPONSE_CODE, &t.status);
    *status = t.status;
    *retry_after = t.retry_after;
    if (date_capacity > 0) snprintf(date, date_capacity, "%s", t.date);

    curl.multi_remove_handle(multi, t.easy);
    curl.easy_cleanup(t.easy);
    curl.multi_cleanup(multi);
    wipe_and_free(headers);
    return outcome;
}
