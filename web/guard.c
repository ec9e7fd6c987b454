/* guard.c — what keeps slow and greedy clients from taking the server (docs/web.md, "Limits").
 *
 * Deadlines. A connection must deliver a request's whole header within header_timeout of opening or
 * of its previous reply, and the client must take a reply within reply_timeout of its being queued. A
 * watchdog thread closes the connections past their deadline: a request that had begun is answered
 * 408 first, an idle connection is just closed. (A slowloris client trickles one header line every
 * few seconds, which an inactivity timeout never ends; an idle held connection costs a slot.)
 *
 * Limits. At most max_connections are open, at most max_per_address from one client address. A new
 * connection over a limit makes room by closing the connection that has waited longest for a request
 * (of that address, or of all): a slow client in the middle of its header first (with a 503, at once),
 * then an idle one (silently), last one that may be a request being read (the classes: eviction_victim);
 * one that is not a slow client is doomed, no longer counted, and closed DOOM_GRACE_MS later unless it
 * moved on meanwhile (evict_oldest). When every candidate is busy with a request, the new connection is
 * refused (closed at once).
 *
 * How. libmicrohttpd calls web_guard_accept (its accept policy) and web_guard_notify (a connection
 * opened or closed, a request completed); server.c says when a request line arrived, when a request
 * reached its endpoint and when its reply was queued. Closing a connection is shutdown(2) of its socket
 * (after the 408/503, a short grace so that the client reads it): the descriptor stays libmicrohttpd's,
 * which sees the end of the stream and frees the connection. A record lives in the table until
 * libmicrohttpd reports the connection closed, which it does before closing the descriptor, so the
 * guard never touches a descriptor that was closed and reused.
 *
 * Threads: the callbacks run on libmicrohttpd's threads, the watchdog on its own; one mutex guards the
 * table. The table is a list scanned in full (a thousand records, ten times a second, is nothing). */
#include <errno.h>
#include <linux/tcp.h> /* struct tcp_info with tcpi_bytes_received (glibc's netinet/tcp.h lacks it) */
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "web_internal.h"

#define WATCHDOG_TICK_MS 100
#define GUARD_MAX_THREADS 64 /* libmicrohttpd threads followed (the server runs WEB_THREADS) */
#define READING_MS 100        /* how long a header may look as if its thread were still reading it */
#define DOOM_GRACE_MS 200 /* a connection chosen to make room that may be a request: time to show it is one */
#define LINGER_MS 500 /* between a 408/503 and the end of the connection: time for the client to read it */

typedef enum conn_state {
    CONN_WAITING,  /* for a request: none yet, or the previous one answered */
    CONN_HEADERS,  /* its request line came, its header is not complete */
    CONN_HANDLING, /* an endpoint works on it: no deadline */
    CONN_REPLYING, /* its reply is queued: the client must take it */
} conn_state;

struct web_conn {
    struct web_conn *prev, *next;
    int fd;
    unsigned char addr[16]; /* the client's IPv4 or IPv6 address */
    int addr_len;           /* 4, 16, or 0 when unknown */
    conn_state state;
    uint64_t since;      /* when it entered its state, in the guard's sequence (orders evictions) */
    uint64_t received;   /* the socket's bytes received when it last entered CONN_WAITING (0 when opened) */
    int owner;           /* the libmicrohttpd thread that read its request line: a slot of threads[], -1 unknown */
    uint64_t line_events; /* that thread's event count just after it read the request line */
    int64_t line_at_ms;   /* when */
    int64_t deadline_ms; /* 0: none */
    int64_t close_at_ms; /* after a 408/503: when to end it (0: not closing) */
    int64_t doomed_ms;   /* chosen to make room then (0: not): closed DOOM_GRACE_MS later unless it moved on */
    uint64_t doomed_received; /* the socket's bytes received when it was doomed */
    bool shut;           /* closed by the guard (no longer counted) */
    web_request_line line;
};

struct web_guard {
    web_limits limits;
    char reply_408[512], reply_503[512]; /* whole HTTP answers, sent as they are */
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t watchdog;
    bool stopping;
    struct web_conn *head;
    uint64_t sequence; /* counts state changes: an order finer than any clock */
    struct guard_thread { /* libmicrohttpd's threads, each with the count of its calls into the guard */
        pthread_t id;
        uint64_t events;
    } threads[GUARD_MAX_THREADS];
    int n_threads;
    struct web_conn **idle; /* eviction_victim's list of idle-looking connections, idle_cap long */
    size_t idle_cap;
    web_guard_counts counts;
};

/* The answers of a closing: status line and the message of {"error": ...}. */
static const char status_408[] = "408 Request Timeout", message_408[] =
    "the request header did not arrive in time: connection closed";
static const char status_503[] = "503 Service Unavailable", message_503[] =
    "too many connections: this one waited longest for a request and was closed to make room";

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The address bytes of a socket address; 0 when it is neither IPv4 nor IPv6. An IPv4 address mapped
 * into IPv6 (::ffff:a.b.c.d) counts as the IPv4 one. */
static int address_bytes(const struct sockaddr *sa, socklen_t len, unsigned char out[16])
{
    if (sa && sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        memcpy(out, &((const struct sockaddr_in *)sa)->sin_addr, 4);
        return 4;
    }
    if (sa && sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        const unsigned char *a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
        static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (memcmp(a, mapped, 12) == 0) {
            memcpy(out, a + 12, 4);
            return 4;
        }
        memcpy(out, a, 16);
        return 16;
    }
    return 0;
}

/* The calling thread's slot in g->threads, added at its first call (-1 when the table is full). Every call
 * of libmicrohttpd into the guard counts as an event of its thread (count_event): libmicrohttpd reads a
 * connection's request line, its header and calls the endpoint in one go, so a thread that made no call
 * since it read a request line may be reading the rest of that header right now. Holds the lock. */
static int thread_slot(web_guard *g)
{
    static _Thread_local const web_guard *cached_guard;
    static _Thread_local int cached_slot = -1;
    if (cached_guard == g)
        return cached_slot;
    pthread_t self = pthread_self();
    int slot = -1;
    for (int i = 0; i < g->n_threads && slot < 0; i++)
        if (pthread_equal(g->threads[i].id, self))
            slot = i;
    if (slot < 0 && g->n_threads < GUARD_MAX_THREADS) {
        slot = g->n_threads++;
        g->threads[slot] = (struct guard_thread){.id = self};
    }
    cached_guard = g;
    cached_slot = slot;
    return slot;
}

static void count_event(web_guard *g)
{
    int slot = thread_slot(g);
    if (slot >= 0)
        g->threads[slot].events++;
}

/* Ends c: sends reply (may be NULL) and lets the client read it for LINGER_MS before the socket is shut
 * down (the watchdog finishes the job); without a reply, shuts it down at once. Holds the lock. */
static void close_conn(web_guard *g, struct web_conn *c, const char *reply)
{
    if (c->shut)
        return;
    c->shut = true;
    if (reply && send(c->fd, reply, strlen(reply), MSG_NOSIGNAL | MSG_DONTWAIT) > 0) {
        shutdown(c->fd, SHUT_WR);
        c->close_at_ms = now_ms() + LINGER_MS;
        pthread_cond_signal(&g->wake);
    } else {
        shutdown(c->fd, SHUT_RDWR);
    }
}

/* Whether c counts against the limits: neither closed nor doomed by the guard. */
static bool counted(const struct web_conn *c) { return !c->shut && !c->doomed_ms; }

static bool waiting(const struct web_conn *c) { return counted(c) && (c->state == CONN_WAITING || c->state == CONN_HEADERS); }

/* The socket's total bytes received so far, read or not; 0 when the kernel does not say (not TCP). */
static uint64_t tcp_bytes_received(int fd)
{
    struct tcp_info info;
    socklen_t len = sizeof info;
    memset(&info, 0, sizeof info);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0 ||
        len < (socklen_t)(offsetof(struct tcp_info, tcpi_bytes_received) + sizeof info.tcpi_bytes_received))
        return 0;
    return info.tcpi_bytes_received;
}

/* Whether c's whole request header lies unread in its socket: the client sent it at once and the
 * server has not read it yet (a busy or loaded server). */
static bool request_in_socket(const struct web_conn *c)
{
    char peek[4096];
    ssize_t n = recv(c->fd, peek, sizeof peek, MSG_PEEK | MSG_DONTWAIT);
    if (n <= 0)
        return false;
    for (ssize_t i = 0; i + 3 < n; i++)
        if (memcmp(peek + i, "\r\n\r\n", 4) == 0)
            return true;
    return n == (ssize_t)sizeof peek; /* more than a header's worth arrived at once: not a slow client */
}

/* Whether c sent anything since it began waiting for a request (read by the server or not). */
static bool sent_since_waiting(const struct web_conn *c) { return tcp_bytes_received(c->fd) > c->received; }

/* How readily a connection waiting for a request is closed to make room, first class first:
 *   EVICT_SLOW   in the middle of a header (a slowloris client: a normal request's header arrives with its
 *                request line and is read at once);
 *   EVICT_IDLE   nothing sent since it began waiting: idle, or just opened and about to send;
 *   EVICT_LAST   it may be a request the server is reading right now, on another of libmicrohttpd's
 *                threads than the one accepting: bytes sent since it began waiting and no request line
 *                yet (read, not parsed yet), or its request line read less than READING_MS ago by a
 *                thread that has made no call into the guard since (reading the rest of its header now,
 *                see thread_slot; a thread with nothing else to do makes no call either, hence the
 *                time bound);
 *   EVICT_NEVER  its whole request header lies unread in the socket.
 * A server that is behind (busy, or descheduled on a loaded machine) has requests pile up while attackers
 * of their address reopen what is closed: closing them would drop normal requests in favour of the
 * attackers. Within a class the one that waited longest goes first (and in EVICT_LAST, one in the middle
 * of a header before one without a request line). */
static bool header_being_read(const web_guard *g, const struct web_conn *c, int64_t now)
{
    return c->owner >= 0 && g->threads[c->owner].events == c->line_events && now - c->line_at_ms < READING_MS;
}

/* Whether a should be closed before b to make room, in the same class. */
static bool evict_before(const struct web_conn *a, const struct web_conn *b)
{
    if ((a->state == CONN_HEADERS) != (b->state == CONN_HEADERS))
        return a->state == CONN_HEADERS;
    return a->since < b->since;
}

static int by_since(const void *a, const void *b)
{
    const struct web_conn *x = *(struct web_conn *const *)a, *y = *(struct web_conn *const *)b;
    return (x->since > y->since) - (x->since < y->since);
}

/* The connection to close to make room among those of one address (addr_len 0: all), by the classes
 * above (*slow: it is EVICT_SLOW); NULL when every one is busy. The sockets of idle-looking connections
 * are examined (a peek, a TCP_INFO) oldest first, only until an idle one is found. Holds the lock. */
static struct web_conn *eviction_victim(web_guard *g, const unsigned char *addr, int addr_len, bool *is_slow)
{
    int64_t now = now_ms();
    struct web_conn *slow = NULL, *last = NULL;
    size_t n = 0;
    for (struct web_conn *c = g->head; c; c = c->next) {
        if (!waiting(c) || (addr_len && (c->addr_len != addr_len || memcmp(c->addr, addr, (size_t)addr_len) != 0)))
            continue;
        if (c->state == CONN_HEADERS) {
            struct web_conn **best = header_being_read(g, c, now) ? &last : &slow;
            if (!*best || evict_before(c, *best))
                *best = c;
        } else if (n < g->idle_cap) {
            g->idle[n++] = c;
        }
    }
    *is_slow = slow != NULL;
    if (slow)
        return slow;
    qsort(g->idle, n, sizeof *g->idle, by_since);
    for (size_t i = 0; i < n; i++) {
        struct web_conn *c = g->idle[i];
        if (request_in_socket(c))
            continue; /* EVICT_NEVER */
        if (!sent_since_waiting(c))
            return c; /* EVICT_IDLE, the oldest */
        if (!last || evict_before(c, last))
            last = c;
    }
    return last;
}

/* Makes room: closes the slow client eviction_victim names at once (503); any other victim may be a
 * client whose request is on its way (the server registers a connection as soon as it is accepted, and
 * under attackers reopening connections from the client's own address the next accept comes
 * microseconds later) or one being read: it is doomed, no longer counted, and closed by the watchdog
 * DOOM_GRACE_MS later unless it moved on (settle_doomed). False when there is no victim. Holds the lock. */
static bool evict_oldest(web_guard *g, const unsigned char *addr, int addr_len)
{
    bool slow = false;
    struct web_conn *victim = eviction_victim(g, addr, addr_len, &slow);
    if (!victim)
        return false;
    if (slow) {
        close_conn(g, victim, g->reply_503);
        g->counts.evicted++;
    } else {
        int64_t now = now_ms();
        victim->doomed_ms = now > 0 ? now : 1;
        victim->doomed_received = tcp_bytes_received(victim->fd);
    }
    return true;
}

/* The watchdog's look at a doomed connection: spared when it sent something since it was doomed (a
 * request on its way; a request line or an endpoint spares it too: set_state), else closed once
 * DOOM_GRACE_MS passed, like an evicted one. Holds the lock. */
static void settle_doomed(web_guard *g, struct web_conn *c, int64_t now)
{
    if (c->state == CONN_WAITING && tcp_bytes_received(c->fd) > c->doomed_received) {
        c->doomed_ms = 0;
        return;
    }
    if (now - c->doomed_ms < DOOM_GRACE_MS)
        return;
    c->doomed_ms = 0;
    close_conn(g, c, c->state == CONN_HEADERS ? g->reply_503 : NULL);
    g->counts.evicted++;
}

enum MHD_Result web_guard_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
    web_guard *g = cls;
    unsigned char key[16];
    int key_len = address_bytes(addr, addrlen, key);
    pthread_mutex_lock(&g->lock);
    count_event(g); /* this thread's own connections are not in the middle of being read */
    int total = 0, same = 0;
    for (struct web_conn *c = g->head; c; c = c->next) {
        if (!counted(c))
            continue;
        total++;
        same += key_len && c->addr_len == key_len && memcmp(c->addr, key, (size_t)key_len) == 0;
    }
    bool ok = true;
    if (key_len && same >= g->limits.max_per_address) {
        ok = evict_oldest(g, key, key_len);
        total -= ok;
    }
    if (ok && total >= g->limits.max_connections)
        ok = evict_oldest(g, NULL, 0);
    if (!ok)
        g->counts.refused++;
    pthread_mutex_unlock(&g->lock);
    return ok ? MHD_YES : MHD_NO;
}

/* Enters state; the deadline follows from it. Holds the lock. */
static void set_state(web_guard *g, struct web_conn *c, conn_state state)
{
    int64_t now = now_ms();
    if (state == CONN_WAITING && c->state != CONN_WAITING) /* after a reply: what came was that request's */
        c->received = tcp_bytes_received(c->fd);
    count_event(g);
    if (state == CONN_HEADERS) {
        c->owner = thread_slot(g);
        c->line_events = c->owner >= 0 ? g->threads[c->owner].events : 0;
        c->line_at_ms = now;
    }
    if (state != CONN_HEADERS) /* the header deadline runs from the end of the previous reply */
        c->since = ++g->sequence;
    c->state = state;
    c->doomed_ms = 0; /* it moved on: a request, not a client holding a slot */
    c->deadline_ms = state == CONN_WAITING   ? now + g->limits.header_timeout_ms
                     : state == CONN_HEADERS ? c->deadline_ms
                     : state == CONN_REPLYING ? now + g->limits.reply_timeout_ms
                                              : 0;
}

static void conn_opened(web_guard *g, struct MHD_Connection *con, void **socket_context)
{
    struct web_conn *c = calloc(1, sizeof *c);
    if (!c)
        return; /* the connection goes unguarded: no deadline, not counted */
    const union MHD_ConnectionInfo *fd = MHD_get_connection_info(con, MHD_CONNECTION_INFO_CONNECTION_FD);
    const union MHD_ConnectionInfo *addr = MHD_get_connection_info(con, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    c->fd = fd ? fd->connect_fd : -1;
    c->addr_len = addr && addr->client_addr
                      ? address_bytes(addr->client_addr, addr->client_addr->sa_family == AF_INET6
                                                             ? sizeof(struct sockaddr_in6)
                                                             : sizeof(struct sockaddr_in), c->addr)
                      : 0;
    c->owner = -1;
    pthread_mutex_lock(&g->lock);
    set_state(g, c, CONN_WAITING);
    c->next = g->head;
    if (g->head)
        g->head->prev = c;
    g->head = c;
    g->counts.open++;
    g->counts.accepted++;
    if ((size_t)g->counts.open > g->idle_cap) { /* eviction_victim's list holds every record */
        size_t cap = g->idle_cap ? 2 * g->idle_cap : 64;
        struct web_conn **grown = realloc(g->idle, cap * sizeof *grown);
        if (grown) { /* else eviction looks at the first idle_cap idle records only */
            g->idle = grown;
            g->idle_cap = cap;
        }
    }
    pthread_mutex_unlock(&g->lock);
    *socket_context = c;
}

static void conn_closed(web_guard *g, void **socket_context)
{
    struct web_conn *c = *socket_context;
    if (!c)
        return;
    pthread_mutex_lock(&g->lock);
    count_event(g);
    if (c->prev)
        c->prev->next = c->next;
    else
        g->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    g->counts.open--;
    pthread_mutex_unlock(&g->lock);
    free(c);
    *socket_context = NULL;
}

void web_guard_notify(void *cls, struct MHD_Connection *con, void **socket_context,
                      enum MHD_ConnectionNotificationCode toe)
{
    if (toe == MHD_CONNECTION_NOTIFY_STARTED)
        conn_opened(cls, con, socket_context);
    else if (toe == MHD_CONNECTION_NOTIFY_CLOSED)
        conn_closed(cls, socket_context);
}

static struct web_conn *conn_of(struct MHD_Connection *con)
{
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(con, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info ? info->socket_context : NULL;
}

/* Moves con's record to state (nothing for an unguarded connection). */
static struct web_conn *enter(web_guard *g, struct MHD_Connection *con, conn_state state)
{
    struct web_conn *c = conn_of(con);
    if (c) {
        pthread_mutex_lock(&g->lock);
        set_state(g, c, state);
        pthread_mutex_unlock(&g->lock);
    }
    return c;
}

web_request_line *web_guard_request_line(web_guard *g, struct MHD_Connection *con)
{
    struct web_conn *c = enter(g, con, CONN_HEADERS);
    if (!c)
        return NULL;
    memset(&c->line, 0, sizeof c->line);
    return &c->line;
}

void web_guard_request_handling(web_guard *g, struct MHD_Connection *con) { enter(g, con, CONN_HANDLING); }

void web_guard_reply_queued(web_guard *g, struct MHD_Connection *con) { enter(g, con, CONN_REPLYING); }

void web_guard_request_completed(void *cls, struct MHD_Connection *con, void **req_cls,
                                 enum MHD_RequestTerminationCode toe)
{
    (void)req_cls;
    (void)toe;
    enter(cls, con, CONN_WAITING);
}

/* Closes what is past its deadline and finishes the closings begun with a 408/503. */
static void *watchdog(void *arg)
{
    web_guard *g = arg;
    pthread_mutex_lock(&g->lock);
    while (!g->stopping) {
        int64_t now = now_ms();
        for (struct web_conn *c = g->head; c; c = c->next) {
            if (c->shut) {
                if (c->close_at_ms && now >= c->close_at_ms) {
                    shutdown(c->fd, SHUT_RDWR);
                    c->close_at_ms = 0;
                }
                continue;
            }
            if (c->doomed_ms) {
                settle_doomed(g, c, now);
                if (c->shut)
                    continue;
            }
            if (!c->deadline_ms || now < c->deadline_ms)
                continue;
            g->counts.timed_out++;
            if (c->state == CONN_HEADERS)
                close_conn(g, c, g->reply_408);
            else
                close_conn(g, c, NULL);
        }
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += WATCHDOG_TICK_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&g->wake, &g->lock, &until);
    }
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

static void canned_reply(char *buf, size_t size, const char *status, const char *extra, const char *message)
{
    char body[200];
    int n = snprintf(body, sizeof body, "{\"error\":\"%s\"}", message);
    snprintf(buf, size, "HTTP/1.1 %s\r\nConnection: close\r\n%sContent-Type: " WEB_JSON_TYPE "\r\n"
             "Content-Length: %d\r\n\r\n%s", status, extra, n, body);
}

web_guard *web_guard_new(const web_limits *limits, tide_error *err)
{
    web_guard *g = calloc(1, sizeof *g);
    if (!g) {
        tide_error_set(err, TIDE_RESOURCE_EXHAUSTED, "web: out of memory");
        return NULL;
    }
    g->limits = *limits;
    canned_reply(g->reply_408, sizeof g->reply_408, status_408, "", message_408);
    canned_reply(g->reply_503, sizeof g->reply_503, status_503, "Retry-After: 1\r\n", message_503);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->wake, &attr);
    pthread_condattr_destroy(&attr);
    int rc = pthread_create(&g->watchdog, NULL, watchdog, g);
    if (rc != 0) {
        tide_error_set(err, TIDE_UNAVAILABLE, "web: cannot start the connection watchdog: %s", strerror(rc));
        pthread_cond_destroy(&g->wake);
        pthread_mutex_destroy(&g->lock);
        free(g);
        return NULL;
    }
    return g;
}

void web_guard_counts_get(web_guard *g, web_guard_counts *out)
{
    pthread_mutex_lock(&g->lock);
    *out = g->counts;
    out->in_header = 0;
    for (const struct web_conn *c = g->head; c; c = c->next)
        out->in_header += !c->shut && c->state == CONN_HEADERS;
    pthread_mutex_unlock(&g->lock);
}

void web_guard_free(web_guard *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->lock);
    g->stopping = true;
    pthread_cond_signal(&g->wake);
    pthread_mutex_unlock(&g->lock);
    pthread_join(g->watchdog, NULL);
    for (struct web_conn *c = g->head, *next; c; c = next) { /* none once the daemon stopped */
        next = c->next;
        free(c);
    }
    free(g->idle);
    pthread_cond_destroy(&g->wake);
    pthread_mutex_destroy(&g->lock);
    free(g);
}
