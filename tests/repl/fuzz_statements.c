/* fuzz_statements.c — the REPL statement fuzzer: bad input never crashes the REPL.
 *
 * Drives the REPL in-process (repl_new, repl_eval) with tens of thousands of statements, each from one
 * of six generators:
 *   corpus    a seed statement of corpus.lua, mostly in file order (state builds up)
 *   mutation  a seed statement with tokens deleted, duplicated, swapped or replaced (huge numbers,
 *             wrong types, other op names and dtypes, arguments added or dropped)
 *   op-call   a registry op with random arguments and attrs, or with arguments of the kinds it wants
 *   nesting   deep tables, parentheses and calls, long chains, deep recursion and scopes
 *   shape     impossible shapes: over 1e12 elements, int64 overflow, negative, rank > 8
 *   garbage   random bytes, printable noise, ':' commands with random arguments, token soup, and
 *             files (.npy, CSV, IDX, graph text) with bytes mutated, read back by their readers
 * Every statement must come back DONE, FAILED, INCOMPLETE (dropped, as Ctrl-C at a continuation prompt
 * would) or QUIT. Watchdog: after 2 s SIGALRM sends SIGINT, the REPL's own Ctrl-C path (cancel runs,
 * stop Lua through a hook), again every second; still running after 30 s, the REPL stopped answering.
 * At the end a check made before fuzzing must still build and run a graph. The generators never look
 * at results, so a seed gives the same statements: --verbose lists them (escaped) with their results,
 * --replay runs such a list again (the way to bisect a finding), --leak-check K looks for leaks every
 * K statements in LeakSanitizer builds, --log gives the REPL a run log (run.db) for the log commands.
 *
 *   fuzz_statements [--corpus FILE] [--verbose] [--replay FILE] [--leak-check K] [--log] [SEED [N]]
 * Defaults: tests/repl/corpus.lua, seed 1, 30000 statements. One summary line goes to stderr; exit 0,
 * or 1 when a statement gave an unknown result, the REPL stopped answering or no longer works, or the
 * run proves nothing (no statement done, or none failed); sanitizer reports name the statement.
 *
 * Sandbox: os, io, debug, package, require, load, loadfile, dofile and quit are removed from the Lua
 * state and text naming them is dropped; files are written only in a fresh temporary working directory, removed
 * at the end (writing statements may not hold '/', '~' or '\\'); allocations are capped (2 GiB each
 * under AddressSanitizer, else a 4 GiB address space) so that no statement can take the machine.
 */
#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "repl.h"

#if defined(__SANITIZE_ADDRESS__)
#define FUZZ_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FUZZ_ASAN 1
#endif
#endif

#ifdef FUZZ_ASAN
const char *__asan_default_options(void);
/* Defaults that ASAN_OPTIONS may override: no single allocation of more than 2 GiB succeeds, so that a
 * statement can never fill the machine's memory; failed allocations return NULL (the engine reports
 * them). */
const char *__asan_default_options(void)
{
    return "max_allocation_size_mb=2048:allocator_may_return_null=1";
}
#endif

#define WATCHDOG_S 2       /* a statement's time before the first SIGINT */
#define HARD_LIMIT_S 30    /* the REPL stopped answering */
#define MAX_TOKENS 600
#define ADDRESS_SPACE_LIMIT (4ull << 30)
#define REPORT_MAX 4000    /* bytes of a statement quoted in a crash report */
#define RESTORE_EVERY 100  /* statements between two restore_library */
#define STR_(x) #x
#define STR(x) STR_(x)

/* ---------------------------------------------------------------- random numbers */

typedef struct rng {
    uint64_t state;
} rng;

static uint64_t rng_next(rng *g) /* splitmix64 */
{
    uint64_t z = (g->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int rng_int(rng *g, int n) { return n <= 0 ? 0 : (int)(rng_next(g) % (uint64_t)n); }
static int rng_range(rng *g, int lo, int hi) { return lo + rng_int(g, hi - lo + 1); }
static bool rng_percent(rng *g, int p) { return rng_int(g, 100) < p; }
#define COUNT(arr) ((int)(sizeof(arr) / sizeof((arr)[0])))
#define PICK(g, arr) ((arr)[rng_int((g), COUNT(arr))])

/* ---------------------------------------------------------------- text */

static int report_fd = 2; /* the original stderr */

static void die(const char *what)
{
    dprintf(report_fd, "fuzz: %s\n", what);
    _exit(2);
}

typedef struct text {
    char *s;
    size_t len, cap;
} text;

static void text_putn(text *t, const char *s, size_t n)
{
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (cap < t->len + n + 1)
            cap *= 2;
        char *grown = realloc(t->s, cap);
        if (!grown)
            die("out of memory (the fuzzer itself)");
        t->s = grown;
        t->cap = cap;
    }
    memcpy(t->s + t->len, s, n);
    t->len += n;
    t->s[t->len] = 0;
}

static void text_put(text *t, const char *s) { text_putn(t, s, strlen(s)); }
static void text_putc(text *t, char c) { text_putn(t, &c, 1); }

static void text_clear(text *t)
{
    t->len = 0;
    text_putn(t, "", 0);
}

static void text_repeat(text *t, const char *s, int times)
{
    for (int i = 0; i < times; i++)
        text_put(t, s);
}

static void text_printf(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void text_printf(text *t, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    text_putn(t, buf, n < 0 ? 0 : (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* Escapes s so that it fits one line: \\, \n, \r, \t and \xHH for other control and non-ASCII bytes.
 * Async-signal-safe (writes into out, size >= 5). Returns the bytes of s consumed. */
static size_t escape_into(const char *s, size_t n, char *out, size_t size, size_t *written)
{
    static const char hex[] = "0123456789abcdef";
    size_t i = 0, k = 0;
    for (; i < n && k + 4 < size; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\\' || c == '\n' || c == '\r' || c == '\t') {
            out[k++] = '\\';
            out[k++] = c == '\\' ? '\\' : c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
        } else if (c < 0x20 || c >= 0x7f) {
            out[k++] = '\\';
            out[k++] = 'x';
            out[k++] = hex[c >> 4];
            out[k++] = hex[c & 15];
        } else
            out[k++] = (char)c;
    }
    *written = k;
    return i;
}

static void write_escaped(int fd, const char *s, size_t n)
{
    char buf[512];
    while (n > 0) {
        size_t k, used = escape_into(s, n, buf, sizeof buf, &k);
        if (write(fd, buf, k) < 0)
            return;
        s += used;
        n -= used;
    }
}

/* The inverse of escape_into, in place; returns the length (the bytes may include NULs). */
static size_t unescape(char *s)
{
    char *w = s;
    for (char *p = s; *p; p++) {
        if (*p != '\\' || !p[1]) {
            *w++ = *p;
            continue;
        }
        p++;
        if (*p == 'n')
            *w++ = '\n';
        else if (*p == 'r')
            *w++ = '\r';
        else if (*p == 't')
            *w++ = '\t';
        else if (*p == 'x' && isxdigit((unsigned char)p[1]) && isxdigit((unsigned char)p[2])) {
            char hex[3] = {p[1], p[2], 0};
            *w++ = (char)strtol(hex, NULL, 16);
            p += 2;
        } else
            *w++ = *p;
    }
    *w = 0;
    return (size_t)(w - s);
}

/* ---------------------------------------------------------------- the watchdog and crash reports */

static pthread_t main_thread;
static volatile sig_atomic_t alarms;          /* SIGALRMs during the current statement */
static const char *volatile current;         /* the statement being evaluated, or NULL */
static volatile long current_index;

static void write_str(int fd, const char *s)
{
    if (write(fd, s, strlen(s)) < 0)
        return;
}

static void write_long(int fd, long v)
{
    char buf[24];
    int k = (int)sizeof buf;
    unsigned long u = v < 0 ? (unsigned long)-v : (unsigned long)v;
    do {
        buf[--k] = (char)('0' + u % 10);
        u /= 10;
    } while (u && k > 1);
    if (v < 0)
        buf[--k] = '-';
    if (write(fd, buf + k, sizeof buf - (size_t)k) < 0)
        return;
}

/* Names the statement in flight (async-signal-safe). */
static void report_current(const char *what)
{
    const char *s = current;
    write_str(report_fd, "fuzz: ");
    write_str(report_fd, what);
    if (!s) {
        write_str(report_fd, " between statements\n");
        return;
    }
    write_str(report_fd, " in statement #");
    write_long(report_fd, current_index);
    write_str(report_fd, ": ");
    size_t n = strlen(s);
    write_escaped(report_fd, s, n > REPORT_MAX ? REPORT_MAX : n);
    write_str(report_fd, n > REPORT_MAX ? " [...]\n" : "\n");
}

static void on_alarm(int sig)
{
    (void)sig;
    alarms++;
    if (alarms > HARD_LIMIT_S - WATCHDOG_S) {
        report_current("the REPL stopped answering (over " STR(HARD_LIMIT_S) " s, SIGINT sent every second)");
        _exit(1);
    }
    pthread_kill(main_thread, SIGINT); /* the REPL's Ctrl-C handler, on the thread running Lua */
}

static void arm_watchdog(void)
{
    alarms = 0;
    struct itimerval it = {.it_interval = {1, 0}, .it_value = {WATCHDOG_S, 0}};
    setitimer(ITIMER_REAL, &it, NULL);
}

/* Returns whether the statement timed out. */
static bool disarm_watchdog(void)
{
    struct itimerval it = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &it, NULL);
    return alarms > 0;
}

static void on_death(void) { report_current("died (sanitizer report above)"); }

/* GCC links ASan and UBSan as two runtimes, each with its own copy of the common sanitizer code:
 * register on_death with every loaded copy (none in a plain build). */
static int register_death_callback(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    if (!info->dlpi_name || !strstr(info->dlpi_name, "san"))
        return 0;
    void *lib = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
    if (!lib)
        return 0;
    void (*set_callback)(void (*)(void));
    *(void **)&set_callback = dlsym(lib, "__sanitizer_set_death_callback");
    if (set_callback)
        set_callback(on_death);
    dlclose(lib);
    return 0;
}

#ifndef FUZZ_ASAN
static void on_crash(int sig)
{
    report_current(sig == SIGSEGV ? "crashed (SIGSEGV)" : sig == SIGABRT ? "crashed (SIGABRT)"
                   : sig == SIGFPE ? "crashed (SIGFPE)" : sig == SIGBUS ? "crashed (SIGBUS)" : "crashed");
    /* SA_RESETHAND restored the default action: the fault repeats, or abort() ends the process. */
}
#endif

static void install_handlers(void)
{
    main_thread = pthread_self();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    dl_iterate_phdr(register_death_callback, NULL);
#ifndef FUZZ_ASAN
    static char altstack[1 << 16];
    stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack};
    sigaltstack(&ss, NULL);
    sa.sa_handler = on_crash;
    sa.sa_flags = SA_RESETHAND | SA_ONSTACK;
    int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    for (int i = 0; i < COUNT(fatal); i++)
        sigaction(fatal[i], &sa, NULL);
    struct rlimit lim = {ADDRESS_SPACE_LIMIT, ADDRESS_SPACE_LIMIT};
    setrlimit(RLIMIT_AS, &lim);
#endif
}

/* ---------------------------------------------------------------- the fuzzer's state */

enum { GEN_CORPUS, GEN_MUTATION, GEN_OP_CALL, GEN_NESTING, GEN_SHAPE, GEN_GARBAGE, NUM_GENERATORS };
static const char *const generator_names[NUM_GENERATORS] = {"corpus", "mutation", "op-call", "nesting",
                                                            "shape", "garbage"};
static const int generator_weights[NUM_GENERATORS] = {22, 30, 20, 7, 8, 13}; /* percent */

typedef struct fuzzer {
    repl *r;
    rng g;
    uint64_t seed;
    bool verbose;
    char **corpus;
    int num_corpus, next_corpus;
    const char *const *op_names; /* the registry's, CamelCase */
    char **functions;            /* the op functions' Lua names (lower case) */
    int num_ops;
    text stmt, scratch;
    char dir[64];                /* the temporary working directory */
    int check_ref;               /* registry ref of the end-of-run check */
    int restore_ref;             /* registry ref of the function restore_library calls */
    long results[4];             /* by repl_result */
    long per_generator[NUM_GENERATORS];
    long timeouts, skipped;
    long leak_check;             /* every so many statements, 0: never */
    int (*lsan_check)(void);     /* __lsan_do_recoverable_leak_check when linked in */
    double slowest_s;
    text slowest;
} fuzzer;

/* ---------------------------------------------------------------- value pools */

/* Arguments that are often valid inputs (nodes the corpus makes, small values). */
static const char *const inputs[] = {
    "a", "b", "c", "x", "xi", "xs", "flag", "words", "i64", "w", "v", "s", "p", "y", "sq", "img", "z", "o",
    "g0", "g1", "g2", "g3", "t", "constant(2.5)", "constant({1.0, -2.0, 3.0})", "constant({{1, 2}, {3, 4}})",
    "constant({{0.5, 1.5}, {2.5, 3.5}}, float64)", "tensor({{1.5, 2.5}, {3.5, 4.5}})",
    "tensor({1, 0, 2}, int64)", "0", "1", "2", "-1", "0.5", "{1, 0}", "{0}", "{2, 2}", "{{0, 1}, {1, 0}}",
    "{a, b}", "{c, c}", "true", "\"s\"",
};

/* Arguments of every wrong kind. */
static const char *const wild[] = {
    "nil", "false", "1e308", "-1e308", "2^63", "-2^63", "1e12", "-2147483649", "0/0", "1/0", "-1/0",
    "math.maxinteger", "math.mininteger", "\"\"", "\"float32\"", "\"SAME\"", "\"\\0\\255\"", "{}", "{{}}",
    "{{{}}}", "{{1, 2}, {3}}", "{1, \"a\", true}", "{nil, 3}", "{-1, 2}", "{1e12, 1e12}", "{1.5}", "{true}",
    "{a, 1}", "{[1] = 1, [3] = 3}", "{x = 1}", "{name = 1}", "{name = \"\"}", "{name = \"a/b:c\"}",
    "{device = \"/gpu:9\"}", "{device = 3}", "{dtype = bool}", "{dtype = \"nope\"}", "{axis = 1e12}",
    "{T = int32}", "{N = -1}", "{transpose_a = \"yes\"}", "{padding = \"SAME\", strides = {1, 1, 1, 1}}",
    "{strides = {}}", "{ksize = {0, 0, 0, 0}}", "{num_split = 0}", "{num = 1e12}", "{seed = -1}",
    "{shape = {-5}}", "{value = a}", "function() end", "function() error('boom') end", "print",
    "coroutine.create(print)", "setmetatable({}, {__index = function() error('meta') end})",
    "setmetatable({}, {__len = function() return 1e12 end})",
    "setmetatable({}, {__tostring = function() return {} end})", "string.rep('x', 10000)", "loss", "step",
    "gs", "n", "un1", "sp1", "eqs", "grad", "ses", "last", "nonexistent", "t2", "tensor('s')", "tensor(true)",
    "tensor({}, float32)", "constant(true)", "constant('s')", "constant({}, int32)", "placeholder(float32)",
    "placeholder(int32, {nil})", "float32", "int64", "bool", "string", "complex128", "float16", "bfloat16",
    "uint8", "session()", "sgd(0.1)", "adam(1e308)", "init()", "tide.ops.NoOp()", "tide", "tide.ops", "_G",
    "_ENV", "node('bee')", "a:shape()", "a:dtype()", "gradients(loss, w)", "global_step()", "...",
};

static const char *const huge_numbers[] = {
    "1e308", "-1", "0", "2^63", "1e12", "-2147483649", "(0/0)", "-0.0", "2^62", "9223372036854775807",
    "-9223372036854775808", "0x7fffffffffffffff", "(-2^63)", "1e-320", "math.huge", "1000000000000",
    "1099511627776", "4611686018427387904", "math.mininteger", "(1 << 40)",
};

static const char *const dtype_names[] = {
    "float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "uint16", "bool",
    "complex64", "complex128", "string", "\"float32\"", "\"double\"", "\"nope\"", "nil", "7", "tide",
};

static const char *const string_literals[] = {
    "\"\"", "\"SAME\"", "\"VALID\"", "\"/cpu:0\"", "\"/gpu:3\"", "\"a b\"", "\"\\255\\0x\"", "\"x:0\"",
    "\"x:7\"", "\"bee\"", "\"nope\"", "\"%s%d\"", "\"\\n\"", "'float32'",
};

static const char *const junk_tokens[] = {
    "(", ")", "{", "}", "[", "]", ",", "=", "..", ":", "...", "nil", "end", "function", "#", "not", "and",
    "or", "local", "return", "then", "do", ";", "::x::", "goto", "<", "~=", "//", "@",
};

/* Attr values by attr type (tide_attr_type). */
static const char *const attr_int[] = {"0", "1", "-1", "2", "3", "1e12", "2^63", "-2^63", "\"1\"", "1.5", "true", "{}"};
static const char *const attr_float[] = {"0.5", "-1", "0/0", "1e308", "-1/0", "\"x\"", "0"};
static const char *const attr_bool[] = {"true", "false", "1", "\"true\"", "{}"};
static const char *const attr_string[] = {"\"SAME\"", "\"VALID\"", "\"NHWC\"", "\"NCHW\"", "\"\"", "\"bogus\"", "1", "{}"};
static const char *const attr_type[] = {"float32", "float64", "int32", "int64", "bool", "string", "complex64",
                                        "uint8", "float16", "\"int16\"", "\"nope\"", "0", "{}"};
static const char *const attr_shape[] = {"{2, 2}", "{-1}", "{nil, 2}", "{}", "{1e12, 1e12}", "{-5}", "1",
                                         "\"s\"", "{1, 2, 3, 4, 5, 6, 7, 8, 9}"};
static const char *const attr_tensor[] = {"tensor({1, 2})", "1", "{}", "{{1}, {2, 3}}", "a", "tensor('s')"};
static const char *const attr_int_list[] = {"{1, 1, 1, 1}", "{1, 2, 2, 1}", "{}", "{0, 0, 0, 0}", "{-1}", "{1e12}",
                                            "5", "{1, 1e12, 1e12, 1}", "{\"a\"}", "{0}", "{1, 0}"};
static const char *const attr_float_list[] = {"{0.5, 1.5}", "{}", "{0/0}", "{\"x\"}", "3"};
static const char *const attr_type_list[] = {"{float32, int32}", "{}", "{\"x\"}", "{float32}", "float32"};

static const char *attr_value(rng *g, tide_attr_type type)
{
    switch (type) {
    case TIDE_ATTR_INT: return PICK(g, attr_int);
    case TIDE_ATTR_FLOAT: return PICK(g, attr_float);
    case TIDE_ATTR_BOOL: return PICK(g, attr_bool);
    case TIDE_ATTR_STRING: return PICK(g, attr_string);
    case TIDE_ATTR_TYPE: return PICK(g, attr_type);
    case TIDE_ATTR_SHAPE: return PICK(g, attr_shape);
    case TIDE_ATTR_TENSOR: return PICK(g, attr_tensor);
    case TIDE_ATTR_INT_LIST: return PICK(g, attr_int_list);
    case TIDE_ATTR_FLOAT_LIST: return PICK(g, attr_float_list);
    case TIDE_ATTR_TYPE_LIST: return PICK(g, attr_type_list);
    default: return PICK(g, wild);
    }
}

static const char *any_value(rng *g) { return rng_percent(g, 60) ? PICK(g, inputs) : PICK(g, wild); }

/* ---------------------------------------------------------------- tokens (mutation) */

typedef struct token {
    const char *s;
    int len;
} token;

typedef struct token_list {
    token t[MAX_TOKENS];
    int n;
} token_list;

static bool is_ident_start(char c) { return isalpha((unsigned char)c) || c == '_'; }
static bool is_ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* Length of the Lua token at p (p not at a space or the end). */
static int token_length(const char *p)
{
    static const char *const multi[] = {"...", "..", "==", "~=", "<=", ">=", "//", "::", "<<", ">>"};
    const char *q = p;
    if (is_ident_start(*p)) {
        while (is_ident_char(*q))
            q++;
    } else if (isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1]))) {
        while (is_ident_char(*q) || *q == '.' ||
               ((*q == '+' || *q == '-') && (q[-1] == 'e' || q[-1] == 'E')))
            q++;
    } else if (*p == '"' || *p == '\'') {
        for (q = p + 1; *q && *q != *p; q++)
            if (*q == '\\' && q[1])
                q++;
        if (*q)
            q++;
    } else if (p[0] == '-' && p[1] == '-') {
        q = p + strlen(p);
    } else {
        for (int i = 0; i < COUNT(multi); i++)
            if (strncmp(p, multi[i], strlen(multi[i])) == 0)
                return (int)strlen(multi[i]);
        q = p + 1;
    }
    return (int)(q - p);
}

static void tokenize(const char *line, token_list *out)
{
    out->n = 0;
    for (const char *p = line; *p && out->n < MAX_TOKENS;) {
        if (isspace((unsigned char)*p)) {
            p++;
            continue;
        }
        int len = token_length(p);
        out->t[out->n++] = (token){p, len};
        p += len;
    }
}

static void token_set(token *t, const char *s) { *t = (token){s, (int)strlen(s)}; }

static void token_insert(token_list *l, int at, const char *s)
{
    if (l->n >= MAX_TOKENS || at < 0 || at > l->n)
        return;
    memmove(&l->t[at + 1], &l->t[at], (size_t)(l->n - at) * sizeof l->t[0]);
    token_set(&l->t[at], s);
    l->n++;
}

static void token_delete(token_list *l, int at)
{
    if (at < 0 || at >= l->n)
        return;
    memmove(&l->t[at], &l->t[at + 1], (size_t)(l->n - at - 1) * sizeof l->t[0]);
    l->n--;
}

static bool token_is(const token *t, const char *s) { return t->len == (int)strlen(s) && strncmp(t->s, s, t->len) == 0; }

/* A random token index satisfying pred, or -1 (a few tries). */
static int find_token(rng *g, const token_list *l, bool (*pred)(const token_list *, int))
{
    for (int tries = 0; tries < 12 && l->n > 0; tries++) {
        int i = rng_int(g, l->n);
        if (pred(l, i))
            return i;
    }
    return -1;
}

static bool is_number(const token_list *l, int i) { return isdigit((unsigned char)l->t[i].s[0]); }
static bool is_string(const token_list *l, int i) { return l->t[i].s[0] == '"' || l->t[i].s[0] == '\''; }
static bool is_call(const token_list *l, int i)
{
    return is_ident_start(l->t[i].s[0]) && i + 1 < l->n && (token_is(&l->t[i + 1], "(") || token_is(&l->t[i + 1], "{"));
}
static bool is_argument(const token_list *l, int i)
{
    return i > 0 && (token_is(&l->t[i - 1], "(") || token_is(&l->t[i - 1], ",")) && !token_is(&l->t[i], ")");
}
static bool is_open_paren(const token_list *l, int i) { return token_is(&l->t[i], "("); }
static bool is_comma(const token_list *l, int i) { return token_is(&l->t[i], ","); }
static bool is_dtype(const token_list *l, int i)
{
    for (int k = 0; k < 14; k++) /* the real dtype names at the front of dtype_names */
        if (token_is(&l->t[i], dtype_names[k]))
            return true;
    return false;
}

/* One mutation of l. */
static void mutate_once(fuzzer *f, token_list *l)
{
    rng *g = &f->g;
    int i, j;
    switch (rng_int(g, 11)) {
    case 0: token_delete(l, rng_int(g, l->n)); break;
    case 1:
        if (l->n > 0 && l->n < MAX_TOKENS) {
            i = rng_int(g, l->n);
            token copy = l->t[i];
            token_insert(l, i, "");
            l->t[i] = copy;
        }
        break;
    case 2:
        if (l->n > 1) {
            i = rng_int(g, l->n), j = rng_int(g, l->n);
            token tmp = l->t[i];
            l->t[i] = l->t[j];
            l->t[j] = tmp;
        }
        break;
    case 3:
        if ((i = find_token(g, l, is_number)) >= 0)
            token_set(&l->t[i], PICK(g, huge_numbers));
        break;
    case 4:
        if ((i = find_token(g, l, is_call)) >= 0) {
            int op = rng_int(g, f->num_ops);
            token_set(&l->t[i], rng_percent(g, 80) ? f->functions[op] : f->op_names[op]);
        }
        break;
    case 5:
        if ((i = find_token(g, l, is_argument)) >= 0)
            token_set(&l->t[i], any_value(g));
        break;
    case 6:
        if ((i = find_token(g, l, is_open_paren)) >= 0) {
            bool empty = i + 1 < l->n && token_is(&l->t[i + 1], ")");
            if (!empty)
                token_insert(l, i + 1, ",");
            token_insert(l, i + 1, any_value(g));
        }
        break;
    case 7:
        if ((i = find_token(g, l, is_comma)) >= 0) {
            token_delete(l, i + 1);
            token_delete(l, i);
        }
        break;
    case 8:
        if ((i = find_token(g, l, is_dtype)) >= 0)
            token_set(&l->t[i], PICK(g, dtype_names));
        break;
    case 9:
        if ((i = find_token(g, l, is_string)) >= 0)
            token_set(&l->t[i], PICK(g, string_literals));
        break;
    default: token_insert(l, rng_int(g, l->n + 1), PICK(g, junk_tokens)); break;
    }
}

static void render_tokens(const token_list *l, bool command, text *out)
{
    for (int i = 0; i < l->n; i++) {
        if (i > 0 && !(command && i == 1))
            text_putc(out, ' ');
        text_putn(out, l->t[i].s, (size_t)l->t[i].len);
    }
}

/* ---------------------------------------------------------------- generators */

/* Mostly the next seed statement in file order (so that the globals later lines use exist), else any. */
static void gen_corpus(fuzzer *f, text *out)
{
    if (rng_percent(&f->g, 75)) {
        text_put(out, f->corpus[f->next_corpus]);
        f->next_corpus = (f->next_corpus + 1) % f->num_corpus;
    } else
        text_put(out, f->corpus[rng_int(&f->g, f->num_corpus)]);
}

static void gen_mutation(fuzzer *f, text *out)
{
    static token_list l; /* large: not on the stack */
    const char *line = f->corpus[rng_int(&f->g, f->num_corpus)];
    tokenize(line, &l);
    int n = rng_percent(&f->g, 60) ? 1 : rng_range(&f->g, 2, 4);
    for (int k = 0; k < n; k++)
        mutate_once(f, &l);
    render_tokens(&l, line[0] == ':', out);
}

/* An attrs table: each attr of the op with some chance (inferred ones rarely), an unknown attr, a name,
 * a device. */
static void put_attrs(fuzzer *f, const tide_op_info *info, text *out)
{
    rng *g = &f->g;
    text_put(out, "{");
    bool first = true;
    for (int i = 0; i < info->num_attrs; i++) {
        if (!rng_percent(g, info->attrs[i].inferred ? 8 : 40))
            continue;
        text_printf(out, "%s%s = %s", first ? "" : ", ", info->attrs[i].name, attr_value(g, info->attrs[i].type));
        first = false;
    }
    if (rng_percent(g, 10)) {
        text_printf(out, "%sno_such_attr = %s", first ? "" : ", ", any_value(g));
        first = false;
    }
    if (rng_percent(g, 15)) {
        text_printf(out, "%sname = %s", first ? "" : ", ", PICK(g, string_literals));
        first = false;
    }
    if (rng_percent(g, 10))
        text_printf(out, "%sdevice = %s", first ? "" : ", ", PICK(g, string_literals));
    text_put(out, "}");
}

/* An argument of the kind the op's input wants (so that more calls get past the binding and run). */
static const char *typed_value(rng *g, const tide_op_arg_info *arg)
{
    static const char *const floats[] = {
        "a", "b", "s", "p", "sq", "img", "z", "o", "w", "constant(2.5)", "constant({1.0, -2.0, 3.0})",
        "tensor({{1.5, 2.5}, {3.5, 4.5}})", "constant({{{1.0}}})", "constant({}, float32)", "0.5",
        "constant({{1.0, 0.0}, {0.0, 0.0}})", "constant({{1.0, 2.0, 3.0}})", "constant({0/0, 1/0, -1/0})",
    };
    static const char *const ints[] = {"0", "1", "-1", "2", "{0}", "{1, 0}", "{0, 1}", "c", "i64", "{2, 2}",
                                       "{{0, 1}, {1, 0}}", "constant({1, 0}, int64)", "{}", "{-1}", "{3}", "7"};
    static const char *const lists[] = {"{a, b}", "{a}", "{c, c}", "{}", "{a, a, a}", "{a, 1}", "{img, img}"};
    static const char *const refs[] = {"w", "v", "gs", "a"};
    if (arg->is_ref)
        return PICK(g, refs);
    if (arg->number_attr)
        return PICK(g, lists);
    if (arg->dtype == TIDE_BOOL)
        return rng_percent(g, 70) ? "flag" : "true";
    if (arg->dtype == TIDE_STRING)
        return "words";
    if (tide_dtype_is_integer(arg->dtype) || rng_percent(g, 15))
        return PICK(g, ints);
    return PICK(g, floats);
}

static void gen_op_call(fuzzer *f, text *out)
{
    rng *g = &f->g;
    int op = rng_int(g, f->num_ops);
    tide_op_info info;
    bool known = tide_registry_op_info(f->op_names[op], &info);
    bool typed = known && rng_percent(g, 50);
    static const char *const prefixes[] = {"run(", "g%d = ", "q1, q2 = ", "", "", "eval("};
    const char *prefix = typed && rng_percent(g, 60) ? "run(" : PICK(g, prefixes);
    text_printf(out, prefix, rng_int(g, 4));
    if (rng_percent(g, 20))
        text_printf(out, "tide.ops.%s(", f->op_names[op]);
    else
        text_printf(out, "%s(", f->functions[op]);
    int nargs = typed || (known && rng_percent(g, 30)) ? info.num_inputs : rng_range(g, 0, 6);
    for (int i = 0; i < nargs; i++)
        text_printf(out, "%s%s", i ? ", " : "", typed ? typed_value(g, &info.inputs[i]) : any_value(g));
    if (known && rng_percent(g, typed ? 30 : 50)) {
        text_put(out, nargs ? ", " : "");
        put_attrs(f, &info, out);
    }
    text_put(out, ")");
    if (prefix[0] == 'r' || prefix[0] == 'e')
        text_put(out, ")");
}

/* The value that nesting generators wrap: nested tables of depth d around a leaf. */
static void put_nested_table(rng *g, int depth, text *out)
{
    static const char *const leaves[] = {"1", "1.5", "true", "\"s\"", "a", "", "1, 2", "{}", "nil"};
    text_repeat(out, "{", depth);
    text_put(out, PICK(g, leaves));
    text_repeat(out, "}", depth);
}

static void gen_nested_table(fuzzer *f, text *out)
{
    static const char *const wrappers[] = {
        "tensor(%s)", "constant(%s)", "zeros(%s)", "reshape(a, %s)", "run(a, %s)", "matmul(a, b, %s)",
        "placeholder(float32, %s)", "nest = %s", "batches(%s, 1)", "concat(%s, 0)", "add_n(%s)",
        "run(%s)", "tensor(%s, int64)", "constant(%s, string)", "pack(%s)", "variable(%s)",
    };
    text *inner = &f->scratch;
    text_clear(inner);
    put_nested_table(&f->g, rng_range(&f->g, 10, 300), inner);
    const char *w = PICK(&f->g, wrappers);
    const char *hole = strstr(w, "%s");
    text_putn(out, w, (size_t)(hole - w));
    text_put(out, inner->s);
    text_put(out, hole + 2);
}

static void gen_chain(fuzzer *f, text *out, int kind)
{
    rng *g = &f->g;
    if (kind == 0) { /* parentheses */
        int k = rng_range(g, 50, 600);
        text_put(out, rng_percent(g, 50) ? "run(" : "nest = ");
        text_repeat(out, "(", k);
        text_put(out, "a");
        text_repeat(out, ")", k);
        text_put(out, out->s[0] == 'r' ? ")" : "");
    } else if (kind == 1) { /* nested op calls */
        static const char *const fns[] = {"relu(", "neg(", "identity(", "tide.ops.Abs(", "square(", "sigmoid("};
        const char *fn = PICK(g, fns);
        int k = rng_range(g, 10, 500);
        text_put(out, "deep = ");
        text_repeat(out, fn, k);
        text_put(out, "a");
        text_repeat(out, ")", k);
        text_put(out, rng_percent(g, 50) ? "; run(deep)" : "");
    } else { /* long chains */
        static const char *const ops[] = {" + ", " * ", " - ", " / ", " ^ ", " .. ", " + 1 + "};
        const char *op = PICK(g, ops);
        int k = rng_range(g, 10, 1000);
        text_put(out, "chain = a");
        for (int i = 0; i < k; i++) {
            text_put(out, op);
            text_put(out, "a");
        }
        text_put(out, rng_percent(g, 50) ? "; run(sum(chain))" : "");
    }
}

static void gen_nesting(fuzzer *f, text *out)
{
    rng *g = &f->g;
    static const char *const fixed[] = {
        "local function f(n) if n == 0 then return a end return relu(f(n - 1)) end deep = f(%d)",
        "local function f(n) if n == 0 then return 0 end return f(n - 1) + 1 end return f(%d)",
        "error(setmetatable({}, {__tostring = function() error('again') end}))",
        "error(setmetatable({}, {__tostring = function() return {} end}))",
        "error()", "error(nil)", "error({})", "error(a)", "error(t)",
        "return pcall(pcall, pcall, error, a)",
        "local t = {} for i = 1, %d do t[i] = a end return add_n(t)",
        "local t = {} for i = 1, %d do t[i] = i end return tensor(t)",
        "local t = {} for i = 1, %d do t[i] = c end return run(concat(t, 0))",
        "local s = '' for i = 1, %d do s = s .. 'x' end return constant(s)",
        "return string.rep('-', %d) .. 'x'",
        "local t = {} t[1] = t return tensor(t)",
        "local t = {} t[1] = t return constant(t)",
        "local t = {} t.name = t return relu(a, t)",
    };
    int kind = rng_int(g, 5);
    if (rng_int(g, 400) == 0) { /* a Lua stack overflow: slow (up to a second or two), so rare */
        text_put(out, "local function f() return 1 + f() end return f()");
    } else if (kind == 0) {
        gen_nested_table(f, out);
    } else if (kind <= 3) {
        gen_chain(f, out, kind - 1);
    } else if (rng_percent(g, 30)) { /* nested scopes and devices */
        int k = rng_range(g, 10, 120);
        for (int i = 0; i < k; i++)
            text_put(out, rng_percent(g, 70) ? "scope('s', function() " : "device('/cpu:0', function() ");
        text_put(out, "deep_scoped = relu(a)");
        text_repeat(out, " end)", k);
    } else {
        text_printf(out, PICK(g, fixed), rng_range(g, 10, 1000));
    }
}

/* Impossible shapes: a dimension of at least 1e12 (unless another is 0), or an invalid one, or a rank
 * above 8; otherwise a few small dimensions (at most 3^12 elements). Never 1-20 GB that could exist. */
static void put_shape(rng *g, text *out)
{
    static const char *const huge[] = {"1e12", "2^40", "2^63", "math.huge", "1e308", "1000000000000",
                                       "1099511627776", "4611686018427387904", "9223372036854775807",
                                       "math.mininteger", "(1 << 40)", "(1 << 62)", "-1099511627776"};
    static const char *const odd[] = {"-5", "-1", "nil", "0/0", "1.5", "\"3\"", "true", "{}", "-2147483649"};
    static const char *const small[] = {"0", "1", "2", "3"};
    int rank = rng_percent(g, 10) ? rng_range(g, 9, 12) : rng_range(g, 0, 4);
    text_put(out, "{");
    for (int i = 0; i < rank; i++) {
        int kind = rng_int(g, 100);
        text_put(out, i ? ", " : "");
        text_put(out, kind < 35 ? PICK(g, huge) : kind < 55 ? PICK(g, odd) : PICK(g, small));
    }
    text_put(out, "}");
}

static void gen_shape(fuzzer *f, text *out)
{
    static const char *const templates[] = {
        "zeros(%s)", "ones(%s, float64)", "zeros(%s, string)", "fill(%s, 1.5)", "fill(%s, constant('s'))",
        "reshape(a, %s)", "reshape(c, %s)", "placeholder(float32, %s)", "random_uniform(%s, {seed = 1})",
        "random_normal(%s)", "truncated_normal(%s)", "broadcast_to(constant(1.0), %s)", "tile(a, %s)",
        "variable(zeros(%s))", "tensor(1):reshape(%s)", "t:reshape(%s)", "random_uniform_int(%s, 0, 10)",
        "zeros_like(zeros(%s))", "sum(ones(%s))", "stack({zeros(%s), zeros(%s)})",
    };
    static const char *const scalars[] = {
        "one_hot(constant({0, 1}), %s)", "range(0, %s, 1)", "range(0, 1, 1 / %s)", "pad(a, {{%s, 0}, {0, 0}})",
        "expand_dims(a, %s)", "t:slice(0, %s)", "tile(c, {%s})", "split(0, c, {num_split = %s})",
    };
    static const char *const big[] = {"1e12", "2^63", "-2^63", "1e308", "math.huge", "0/0", "1000000000000",
                                      "1099511627776", "9223372036854775807", "math.mininteger", "(1 << 62)"};
    rng *g = &f->g;
    text *shape = &f->scratch;
    text_clear(shape);
    const char *tmpl;
    if (rng_percent(g, 25)) {
        tmpl = PICK(g, scalars);
        text_put(shape, PICK(g, big));
    } else {
        tmpl = PICK(g, templates);
        put_shape(g, shape);
    }
    static const char *const wraps[] = {"run(", "hg = ", "", "eval("};
    const char *wrap = PICK(g, wraps);
    text_put(out, wrap);
    for (const char *p = tmpl; *p; p++) {
        if (p[0] == '%' && p[1] == 's') {
            text_put(out, shape->s);
            p++;
        } else
            text_putc(out, *p);
    }
    text_put(out, wrap[0] == 'r' || wrap[0] == 'e' ? ")" : "");
}

static void put_random_bytes(rng *g, text *out, int n, bool printable)
{
    for (int i = 0; i < n; i++) {
        int c = printable ? rng_range(g, 32, 126) : rng_int(g, 256);
        if (c == 0)
            break; /* a C string ends here, as it would for the REPL */
        text_putc(out, (char)c);
    }
}

static void gen_command(fuzzer *f, text *out)
{
    static const char *const names[] = {"help", "nodes", "info", "graph", "history", "reset", "save", "load",
                                        "runs", "run", "tensor", "sql", "trace", "watch", "unwatch", "prune",
                                        "log", "h", "he", "node", "inf", "", ":", "helpp", "graphs", "sav",
                                        "lo", "r", "t", "w"};
    static const char *const args[] = {"a", "bee", "matmul", "run", "*", "re*", "[", "\\", "saved.txt",
                                       "missing.txt", "data.csv", "t.npy", "\"a b\"", "'x", "a:0", "a:99",
                                       "gradients", "--", "", "%s", "x y z", "\"unterminated", "0", "1", "-1",
                                       "99999999999999999999", "1e30", "on", "off", "every", "cap", "SELECT",
                                       "SELECT * FROM runs", "DELETE FROM runs", "ATTACH 'x' AS y", "'", ";",
                                       "PRAGMA writable_schema = 1", "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL "
                                       "SELECT x + 1 FROM c) SELECT count(*) FROM c"};
    rng *g = &f->g;
    text_put(out, ":");
    text_put(out, PICK(g, names));
    int n = rng_int(g, 5);
    for (int i = 0; i < n; i++) {
        text_put(out, rng_percent(g, 80) ? " " : "\t");
        if (rng_percent(g, 80))
            text_put(out, PICK(g, args));
        else
            put_random_bytes(g, out, rng_range(g, 1, 40), rng_percent(g, 50));
    }
}

/* A file the corpus or the setup made (a .npy, a CSV, an IDX, graph text from :save), with a few bytes
 * flipped, cut, or overwritten by a number too long for any integer, written to fz.EXT and read back
 * by a reader (usually the right one). */
typedef struct file_kind {
    const char *source, *copy;
    const char *fallback; /* the contents when source does not exist (yet) */
    size_t fallback_len;
    const char *reader;   /* "%s": the copy's name */
} file_kind;

#define BYTES(literal) literal, sizeof(literal) - 1
static const file_kind file_kinds[] = {
    {"t.npy", "fz.npy",
     BYTES("\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }"
           "                                                            \n" /* header padded to 118 bytes */
           "\0\0\x80?\0\0\0@"),
     "load_npy('%s')"},
    {"data.csv", "fz.csv", BYTES("a,b\n1,2\n3,4\n"), "load_csv('%s', {header = -1})"},
    {"small.idx", "fz.idx", BYTES("\0\0\x08\x02\0\0\0\x02\0\0\0\x03" "abcdef"), "load_idx('%s')"},
    {"saved.txt", "fz.txt", BYTES("n1 = Const(dtype=float32, value=1.5)\nn2 = Relu(n1)\n"), ":load %s"},
};

static void read_whole(const char *path, text *t)
{
    text_clear(t);
    FILE *in = fopen(path, "rb");
    if (!in)
        return;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        text_putn(t, buf, n);
    fclose(in);
}

static void mutate_bytes(rng *g, text *t)
{
    int k = rng_range(g, 1, 6);
    for (int i = 0; i < k && t->len > 0; i++) {
        size_t at = (size_t)(rng_next(g) % t->len);
        switch (rng_int(g, 5)) {
        case 0: t->s[at] = (char)rng_int(g, 256); break;
        case 1: t->len = at; break; /* cut short */
        case 2: t->s[at] = "()=,:@^[]<>\"\n 0-9'"[rng_int(g, 19)]; break;
        case 3: memcpy(t->s + at, "99999999999999999999", t->len - at < 20 ? t->len - at : 20); break;
        default: t->s[at] = (char)(t->s[at] ^ (1 << rng_int(g, 8))); break;
        }
    }
}

static void gen_file(fuzzer *f, text *out)
{
    rng *g = &f->g;
    const file_kind *k = &file_kinds[rng_int(g, COUNT(file_kinds))];
    text *t = &f->scratch;
    read_whole(k->source, t);
    if (t->len == 0)
        text_putn(t, k->fallback, k->fallback_len);
    mutate_bytes(g, t);
    FILE *o = fopen(k->copy, "wb");
    if (o) {
        fwrite(t->s, 1, t->len, o);
        fclose(o);
    }
    if (f->verbose) { /* for --replay: "@file NAME ESCAPED-CONTENTS" */
        dprintf(report_fd, "@file %s ", k->copy);
        write_escaped(report_fd, t->s, t->len);
        write_str(report_fd, "\n");
    }
    const file_kind *reader = rng_percent(g, 80) ? k : &file_kinds[rng_int(g, COUNT(file_kinds))];
    const char *hole = strstr(reader->reader, "%s");
    text_putn(out, reader->reader, (size_t)(hole - reader->reader));
    text_put(out, k->copy);
    text_put(out, hole + 2);
}

static void gen_garbage(fuzzer *f, text *out)
{
    rng *g = &f->g;
    switch (rng_int(g, 6)) {
    case 0: put_random_bytes(g, out, rng_range(g, 1, 300), false); break;
    case 1: put_random_bytes(g, out, rng_range(g, 1, 200), true); break;
    case 2: gen_command(f, out); break;
    case 3: gen_file(f, out); break;
    case 4: { /* token soup */
        int n = rng_range(g, 1, 30);
        for (int i = 0; i < n; i++) {
            int kind = rng_int(g, 4);
            text_put(out, i ? " " : "");
            text_put(out, kind == 0   ? PICK(g, junk_tokens)
                          : kind == 1 ? f->functions[rng_int(g, f->num_ops)]
                                      : any_value(g));
        }
        break;
    }
    default: { /* a seed statement cut short or with bytes inserted */
        const char *line = f->corpus[rng_int(g, f->num_corpus)];
        size_t len = strlen(line), at = len ? (size_t)rng_next(g) % len : 0;
        text_putn(out, line, at);
        if (rng_percent(g, 50))
            put_random_bytes(g, out, rng_range(g, 1, 8), false);
        if (rng_percent(g, 50))
            text_put(out, line + at);
        break;
    }
    }
}

/* ---------------------------------------------------------------- the filter */

/* Text the fuzzer must not run: what would leave the sandbox or end the process, paths outside the
 * working directory for the commands that write, ranges that could allocate gigabytes. (Every bug this
 * fuzzer found is fixed: /tmp/fuzz_findings.md of the session that wrote it lists twelve; none is
 * skipped any more.) */
static bool forbidden(const char *s)
{
    static const char *const words[] = {"os.", "io.", "quit", "debug.", "package.", "require", "dofile",
                                        "loadfile", "fashion_mnist", "collectgarbage(\"stop\")"};
    for (int i = 0; i < COUNT(words); i++)
        if (strstr(s, words[i]))
            return true;
    while (isspace((unsigned char)*s))
        s++;
    if (s[0] == ':') {
        size_t n = strcspn(s + 1, " \t\n");
        if (n > 0 && strncmp(s + 1, "quit", n) == 0 && n <= 4)
            return true;
    }
    if ((strstr(s, "save") || strstr(s, "Save") || strstr(s, "export")) && strpbrk(s, "/~\\"))
        return true;
    if (strstr(s, "ange(") && strstr(s, "2147483649"))
        return true; /* range(-2147483649, 10, 3): 700 million elements that do fit */
    return false;
}

static int generate(fuzzer *f, text *out)
{
    for (;;) {
        int gen = 0, roll = rng_int(&f->g, 100);
        while (roll >= generator_weights[gen]) {
            roll -= generator_weights[gen];
            gen++;
        }
        text_clear(out);
        switch (gen) {
        case GEN_CORPUS: gen_corpus(f, out); break;
        case GEN_MUTATION: gen_mutation(f, out); break;
        case GEN_OP_CALL: gen_op_call(f, out); break;
        case GEN_NESTING: gen_nesting(f, out); break;
        case GEN_SHAPE: gen_shape(f, out); break;
        default: gen_garbage(f, out); break;
        }
        if (!forbidden(out->s))
            return gen;
        f->skipped++;
    }
}

/* ---------------------------------------------------------------- running statements */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *result_name(repl_result res)
{
    switch (res) {
    case REPL_DONE: return "done";
    case REPL_FAILED: return "failed";
    case REPL_INCOMPLETE: return "incomplete";
    case REPL_QUIT: return "quit";
    }
    return "unknown";
}

/* Runs one statement under the watchdog. False when the result is not one of the four. */
static bool evaluate(fuzzer *f, long index, const char *gen, const char *s)
{
    if (f->verbose) {
        dprintf(report_fd, "#%ld %s: ", index, gen);
        write_escaped(report_fd, s, strlen(s));
        write_str(report_fd, "\n");
    }
    current_index = index;
    current = s;
    double t0 = now_s();
    arm_watchdog();
    repl_result res = repl_eval(f->r, s, "fuzz");
    bool timed_out = disarm_watchdog();
    double dt = now_s() - t0;
    if (res != REPL_DONE && res != REPL_FAILED && res != REPL_INCOMPLETE && res != REPL_QUIT) {
        char what[64];
        snprintf(what, sizeof what, "unknown result %d", (int)res);
        report_current(what);
        current = NULL;
        return false;
    }
    current = NULL;
    f->results[res]++;
    if (res == REPL_QUIT) { /* quit is filtered and removed; should one get through, carry on */
        f->r->quit = false;
        f->r->exit_status = 0;
    }
    f->timeouts += timed_out;
    if (dt > f->slowest_s) {
        f->slowest_s = dt;
        text_clear(&f->slowest);
        text_putn(&f->slowest, s, strlen(s) > 200 ? 200 : strlen(s));
    }
    if (f->verbose)
        dprintf(report_fd, "  -> %s%s, %.3f s\n", result_name(res), timed_out ? " (timed out)" : "", dt);
    if (f->lsan_check && f->leak_check > 0 && (index + 1) % f->leak_check == 0 && f->lsan_check())
        dprintf(report_fd, "fuzz: leaks (reported above) appeared in statements #%ld to #%ld\n",
                index + 1 - f->leak_check, index);
    return true;
}

/* ---------------------------------------------------------------- setup */

static void load_corpus(fuzzer *f, const char *path)
{
    FILE *in = fopen(path, "r");
    if (!in) {
        dprintf(report_fd, "fuzz: cannot open the corpus %s: %s\n", path, strerror(errno));
        exit(2);
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, in)) >= 0) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = 0;
        if (n == 0 || strncmp(line, "--", 2) == 0)
            continue;
        char **grown = realloc(f->corpus, (size_t)(f->num_corpus + 1) * sizeof *grown);
        if (!grown || !(grown[f->num_corpus] = strdup(line)))
            die("out of memory (the fuzzer itself)");
        f->corpus = grown;
        f->num_corpus++;
    }
    free(line);
    fclose(in);
    if (f->num_corpus == 0)
        die("the corpus has no statements");
}

static void load_ops(fuzzer *f)
{
    f->num_ops = tide_registry_op_names(&f->op_names);
    if (f->num_ops <= 0)
        die("the registry has no ops");
    f->functions = calloc((size_t)f->num_ops, sizeof *f->functions);
    if (!f->functions)
        die("out of memory (the fuzzer itself)");
    for (int i = 0; i < f->num_ops; i++) {
        if (!(f->functions[i] = strdup(f->op_names[i])))
            die("out of memory (the fuzzer itself)");
        for (char *c = f->functions[i]; *c; c++)
            *c = (char)tolower((unsigned char)*c);
    }
}

/* A fresh working directory with the files the corpus reads. */
static void enter_temp_dir(fuzzer *f)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(f->dir, sizeof f->dir, "%s/tide-fuzz-XXXXXX", tmp && strlen(tmp) < 40 ? tmp : "/tmp");
    if (!mkdtemp(f->dir) || chdir(f->dir) != 0)
        die("cannot make a temporary directory");
    FILE *csv = fopen("data.csv", "w");
    if (csv) {
        fputs("a,b\n1,2\n3,4\n", csv);
        fclose(csv);
    }
    for (int i = 0; i < COUNT(file_kinds); i++) {
        FILE *o = strcmp(file_kinds[i].source, "small.idx") == 0 ? fopen("small.idx", "wb") : NULL;
        if (o) {
            fwrite(file_kinds[i].fallback, 1, file_kinds[i].fallback_len, o);
            fclose(o);
        }
    }
}

static void remove_temp_dir(fuzzer *f)
{
    DIR *d = opendir(f->dir);
    if (d) {
        struct dirent *e;
        char path[512];
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
                snprintf(path, sizeof path, "%s/%s", f->dir, e->d_name);
                unlink(path);
            }
        closedir(d);
    }
    if (chdir("/") != 0 || rmdir(f->dir) != 0)
        dprintf(report_fd, "fuzz: could not remove %s\n", f->dir);
}

/* Removes what would leave the sandbox; keeps a function that puts back the library and the tide
 * functions (restore_library), and a check that the REPL still builds and runs graphs (made of the
 * functions as they are now, so that statements overwriting them cannot fool it). */
static void prepare_lua(fuzzer *f)
{
    lua_State *L = f->r->L;
    static const char *const removed[] = {"os", "io", "debug", "package", "require", "load", "loadfile",
                                          "dofile", "quit"};
    for (int i = 0; i < COUNT(removed); i++) {
        lua_pushnil(L);
        lua_setglobal(L, removed[i]);
    }
    if (lua_getglobal(L, "tide") == LUA_TTABLE) {
        lua_pushnil(L);
        lua_setfield(L, -2, "quit");
    }
    lua_pop(L, 1);
    static const char restore[] =
        "local G, tide, next, rawset, setmetatable = _G, tide, next, rawset, setmetatable\n"
        "local function copy(t) local c = {} for k, v in next, t do c[k] = v end return c end\n"
        "local saved_G, saved_tide, saved_ops = copy(G), copy(tide), copy(tide.ops)\n"
        "return function(user)\n"
        "  for k, v in next, saved_G do rawset(G, k, v); rawset(user, k, nil) end\n"
        "  for k, v in next, saved_tide do rawset(tide, k, v) end\n"
        "  for k, v in next, saved_ops do rawset(saved_tide.ops, k, v) end\n"
        "  pcall(setmetatable, G, nil)\n"
        "end\n";
    if (luaL_loadstring(L, restore) != LUA_OK || lua_pcall(L, 0, 1, 0) != LUA_OK)
        die("cannot compile the restoring function");
    f->restore_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    static const char check[] =
        "local run, constant, relu = tide.run, tide.constant, tide.relu\n"
        "return function()\n"
        "  local v = run(relu(constant({-1.5, 2.5})))\n"
        "  return v[1] == 0 and v[2] == 2.5\n"
        "end\n";
    if (luaL_loadstring(L, check) != LUA_OK || lua_pcall(L, 0, 1, 0) != LUA_OK)
        die("cannot compile the end-of-run check");
    f->check_ref = luaL_ref(L, LUA_REGISTRYINDEX);
}

/* Statements such as `run = 1` or `_G.relu = nil` would fail every later statement that uses them:
 * every RESTORE_EVERY statements the library and the tide functions are put back as they were (the
 * user's other globals stay). */
static void restore_library(fuzzer *f)
{
    lua_State *L = f->r->L;
    lua_rawgeti(L, LUA_REGISTRYINDEX, f->restore_ref);
    repl_push_globals(L);
    if (lua_pcall(L, 1, 0, 0) != LUA_OK)
        lua_pop(L, 1); /* an error object; nothing else to do */
}

/* Does the REPL still build and run a graph? */
static bool still_works(fuzzer *f)
{
    lua_State *L = f->r->L;
    lua_sethook(L, NULL, 0, 0);
    lua_rawgeti(L, LUA_REGISTRYINDEX, f->check_ref);
    bool ok = lua_pcall(L, 0, 1, 0) == LUA_OK && lua_toboolean(L, -1);
    if (!ok)
        dprintf(report_fd, "fuzz: the REPL no longer builds and runs a graph: %s\n",
                lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "wrong value");
    lua_pop(L, 1);
    return ok;
}

/* The REPL's output goes to /dev/null: stdout by freopen, and stderr (its error messages) by pointing
 * the `stderr` stream at /dev/null, which leaves file descriptor 2 alone: sanitizer reports (two
 * runtimes under GCC, each with its own report fd), crash reports and the summary still reach the
 * original stderr. With --verbose the error messages stay. */
static void redirect_output(bool keep_errors)
{
    if (!freopen("/dev/null", "r", stdin) || !freopen("/dev/null", "w", stdout))
        die("cannot redirect to /dev/null");
    if (!keep_errors) {
        FILE *null = fopen("/dev/null", "w");
        if (!null)
            die("cannot open /dev/null");
        stderr = null; /* glibc's stderr is a variable (the REPL and Lua write through it) */
    }
}

/* ---------------------------------------------------------------- main */

typedef struct options {
    const char *corpus, *replay;
    bool verbose;
    uint64_t seed;
    long count;
    long leak_check; /* --leak-check K: look for leaks every K statements (LeakSanitizer builds) */
    bool log;        /* --log: the REPL keeps a run log (run.db in the working directory) */
} options;

static void parse_options(int argc, char **argv, options *o)
{
    *o = (options){"tests/repl/corpus.lua", NULL, false, 1, 30000, 0, false};
    int positional = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--corpus") == 0 && i + 1 < argc)
            o->corpus = argv[++i];
        else if (strcmp(argv[i], "--replay") == 0 && i + 1 < argc)
            o->replay = argv[++i];
        else if (strcmp(argv[i], "--leak-check") == 0 && i + 1 < argc)
            o->leak_check = strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--log") == 0)
            o->log = true;
        else if (strcmp(argv[i], "--verbose") == 0 || strcmp(argv[i], "-v") == 0)
            o->verbose = true;
        else if (argv[i][0] != '-' && positional == 0 && ++positional)
            o->seed = strtoull(argv[i], NULL, 10);
        else if (argv[i][0] != '-' && positional == 1 && ++positional)
            o->count = strtol(argv[i], NULL, 10);
        else {
            fprintf(stderr, "usage: %s [--corpus FILE] [--verbose] [--replay FILE] [--leak-check K] [--log] [SEED [N]]\n",
                    argv[0]);
            exit(2);
        }
    }
}

/* The statement of a --verbose line "#12 mutation: TEXT", or NULL when line is not one. */
static char *verbose_statement(char *line)
{
    char *p = line;
    if (*p++ != '#' || !isdigit((unsigned char)*p))
        return NULL;
    p += strspn(p, "0123456789");
    if (*p++ != ' ')
        return NULL;
    p += strspn(p, "abcdefghijklmnopqrstuvwxyz-");
    return p[0] == ':' && p[1] == ' ' ? p + 2 : NULL;
}

/* "NAME ESCAPED-CONTENTS" (an "@file" line of a --verbose log): writes the file a generator wrote. */
static void write_replayed_file(char *spec)
{
    char *contents = strchr(spec, ' ');
    if (!contents || strpbrk(spec, "/~\\") < contents)
        return; /* only plain names in the working directory */
    *contents++ = 0;
    size_t n = unescape(contents);
    FILE *o = fopen(spec, "wb");
    if (o) {
        fwrite(contents, 1, n, o);
        fclose(o);
    }
}

/* Runs the statements of a --replay file: the statement lines of a --verbose log (other lines, such
 * as the REPL's error messages, are ignored; "@file" lines write the files generators wrote), or else
 * every line. Statements are escaped as --verbose
 * writes them. */
static bool replay(fuzzer *f, FILE *in, long *count)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    char **lines = NULL;
    long num = 0;
    bool is_log = false;
    while ((n = getline(&line, &cap, in)) >= 0) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = 0;
        char **grown = realloc(lines, (size_t)(num + 1) * sizeof *grown);
        if (!grown || !(grown[num] = strdup(line)))
            die("out of memory (the fuzzer itself)");
        lines = grown;
        is_log |= verbose_statement(lines[num++]) != NULL;
    }
    free(line);
    bool ok = true;
    for (long i = 0; i < num; i++) {
        if (strncmp(lines[i], "@file ", 6) == 0 && ok) {
            write_replayed_file(lines[i] + 6);
            free(lines[i]);
            continue;
        }
        char *s = is_log ? verbose_statement(lines[i]) : lines[i];
        if (ok && s && (is_log || *s)) {
            if (*count % RESTORE_EVERY == RESTORE_EVERY - 1) /* as fuzz() does */
                restore_library(f);
            unescape(s);
            ok = evaluate(f, (*count)++, "replay", s);
        }
        free(lines[i]);
    }
    free(lines);
    return ok;
}

static bool fuzz(fuzzer *f, long count)
{
    for (long i = 0; i < count; i++) {
        if (i % RESTORE_EVERY == RESTORE_EVERY - 1)
            restore_library(f);
        int gen = generate(f, &f->stmt);
        f->per_generator[gen]++;
        if (!evaluate(f, i, generator_names[gen], f->stmt.s))
            return false;
    }
    return true;
}

int main(int argc, char **argv)
{
    options o;
    parse_options(argc, argv, &o);
    static fuzzer f;
    f.seed = o.seed;
    f.g.state = o.seed * 0x2545f4914f6cdd1dull + 1;
    f.verbose = o.verbose;
    f.leak_check = o.leak_check;
    *(void **)&f.lsan_check = dlsym(RTLD_DEFAULT, "__lsan_do_recoverable_leak_check");
    FILE *replay_in = o.replay ? fopen(o.replay, "r") : NULL;
    if (o.replay && !replay_in) {
        fprintf(stderr, "fuzz: cannot open %s\n", o.replay);
        return 2;
    }
    load_corpus(&f, o.corpus);
    load_ops(&f);
    redirect_output(o.verbose);
    enter_temp_dir(&f);
    install_handlers();

    repl_options ro = {.num_threads = 2, .log_path = o.log ? "run.db" : NULL, .interactive = false, .quiet = true};
    tide_error *err = tide_error_new();
    f.r = repl_new(&ro, err);
    if (!f.r) {
        dprintf(report_fd, "fuzz: repl_new failed: %s\n", tide_error_message(err));
        return 2;
    }
    tide_error_free(err);
    prepare_lua(&f);
    if (!still_works(&f))
        die("the check fails before fuzzing");

    double t0 = now_s();
    long count = 0;
    bool ok = replay_in ? replay(&f, replay_in, &count) : fuzz(&f, count = o.count);
    if (replay_in)
        fclose(replay_in);
    double elapsed = now_s() - t0;
    ok = ok && still_works(&f);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    dprintf(report_fd, "fuzz: %ld statements, %ld done, %ld failed, %ld incomplete, seed %llu, %.1f s "
                       "(%ld timed out, %ld quit, peak RSS %ld MiB)\n",
            count, f.results[REPL_DONE], f.results[REPL_FAILED], f.results[REPL_INCOMPLETE],
            (unsigned long long)f.seed, elapsed, f.timeouts, f.results[REPL_QUIT], ru.ru_maxrss / 1024);
    if (f.verbose) {
        dprintf(report_fd, "fuzz: per generator:");
        for (int i = 0; i < NUM_GENERATORS; i++)
            dprintf(report_fd, " %s %ld", generator_names[i], f.per_generator[i]);
        dprintf(report_fd, "; %ld dropped by the filter; slowest %.2f s: ", f.skipped, f.slowest_s);
        write_escaped(report_fd, f.slowest.s ? f.slowest.s : "", f.slowest.len);
        write_str(report_fd, "\n");
    }
    if (ok && !replay_in && count >= 100 && (f.results[REPL_DONE] == 0 || f.results[REPL_FAILED] == 0)) {
        dprintf(report_fd, "fuzz: a run where no statement is done or none fails proves nothing\n");
        ok = false;
    }
    repl_free(f.r);
    remove_temp_dir(&f);
    for (int i = 0; i < f.num_corpus; i++)
        free(f.corpus[i]);
    free(f.corpus);
    for (int i = 0; i < f.num_ops; i++)
        free(f.functions[i]);
    free(f.functions);
    free(f.stmt.s);
    free(f.scratch.s);
    free(f.slowest.s);
    return ok ? 0 : 1;
}
