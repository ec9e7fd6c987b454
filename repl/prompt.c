/* prompt.c — the interactive prompt: libedit's line editor, ~/.tide_history, multi-line entries,
 * Ctrl-C and Ctrl-D, and the Tab key (the candidates come from complete.c).
 *
 * One entry may take several lines: each line is appended to the pending entry, which repl_eval
 * either runs or reports incomplete (Lua's own interpreter does the same); the prompt then reads a
 * continuation line ("...> "). A finished entry, even one that failed, becomes one history entry and
 * the history file is rewritten at once, so a killed process loses nothing.
 *
 * The loop, as a state machine:
 *
 *        +--------- blank line ---------+
 *        v                              |
 *   [ tide> ] -- line --> eval --> DONE/FAILED: history, new entry ---> [ tide> ]
 *        ^                  |  \--> QUIT: leave
 *        |                  +-----> INCOMPLETE ---> [ ...> ] -- line --> eval (whole entry)
 *        +---- Ctrl-C: entry and line discarded, "^C" (from either prompt)
 *   Ctrl-D on an empty line: leave with r->exit_status.
 *
 * Ctrl-C: repl.c's SIGINT handler (installed without SA_RESTART) sets r->interrupted. libedit runs
 * with EL_SIGNAL off (it installs no handler of its own) and reads keys through read_key below,
 * which fails with EINTR once r->interrupted is set; el_gets then returns NULL with a count of -1
 * (Ctrl-D gives NULL with a count of 0). read_key waits with poll() and a timeout instead of a bare
 * read(2) because an EINTR is not enough: the signal may land just before the read starts (after
 * the echo of the last key), or on another thread (the engine's pool), and then no read is
 * interrupted. The timeout bounds how late such a Ctrl-C is seen.
 */
#include <ctype.h>
#include <errno.h>
#include <histedit.h>
#include <langinfo.h>
#include <locale.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <wchar.h>

#include "repl.h"

#define HISTORY_SIZE 1000
#define POLL_MS 100 /* how often a key wait looks at r->interrupted */

typedef struct prompt {
    repl *r;
    EditLine *el;
    History *hist;
    char *history_path;   /* $HOME/.tide_history; NULL: no file */
    bool continuation;    /* the pending entry is incomplete: "...> " */
    char *entry;          /* the pending entry: its lines joined by '\n' */
    size_t len, cap;
    char bytes[MB_LEN_MAX]; /* read but not yet handed to libedit (an invalid multibyte sequence) */
    int num_bytes;
} prompt;

static prompt *prompt_of(EditLine *el)
{
    prompt *p = NULL;
    el_get(el, EL_CLIENTDATA, &p);
    return p;
}

/* The prompt that reads the terminal now (the REPL's, or one opened for a script's debugger stops),
 * and the text of a debugger stop's prompt while one is read. */
static prompt *active_prompt;
static prompt script_prompt;
static const char *stop_prompt_text;
static bool stop_woken; /* the wake fd became readable while a stop's line was read */

static char *prompt_text(EditLine *el)
{
    if (stop_prompt_text)
        return (char *)stop_prompt_text;
    return (char *)(prompt_of(el)->continuation ? "...> " : "tide> ");
}

/* ------------------------------------------------------------------ keys */

/* Decodes the first character of the bytes read so far; false while they are the start of one. A
 * byte sequence that is not a character is handed over byte by byte, as libedit's own reader does. */
static bool take_char(prompt *p, wchar_t *wc)
{
    mbstate_t state;
    memset(&state, 0, sizeof state);
    size_t k = mbrtowc(wc, p->bytes, (size_t)p->num_bytes, &state);
    if (k == (size_t)-2 && p->num_bytes < MB_LEN_MAX)
        return false;
    if (k == (size_t)-1 || k == (size_t)-2) {
        *wc = (wchar_t)(unsigned char)p->bytes[0];
        k = 1;
    } else if (k == 0) {
        k = 1; /* the NUL character */
    }
    p->num_bytes -= (int)k;
    memmove(p->bytes, p->bytes + k, (size_t)p->num_bytes);
    return true;
}

/* libedit's EL_GETCFN: one character from the terminal, decoded in the LC_CTYPE locale. 1: a
 * character; 0: end of file; -1: an error, EINTR after a Ctrl-C. */
static int read_key(EditLine *el, wchar_t *wc)
{
    prompt *p = prompt_of(el);
    for (;;) {
        if (p->num_bytes > 0 && take_char(p, wc))
            return 1;
        if (p->r->interrupted) {
            p->num_bytes = 0;
            errno = EINTR;
            return -1;
        }
        /* At a debugger stop, the web's requests wake the prompt too (debugger_web.c). */
        int wake = stop_prompt_text ? p->r->debug_wake_fd : -1;
        struct pollfd pfd[2] = {{.fd = STDIN_FILENO, .events = POLLIN}, {.fd = wake, .events = POLLIN}};
        int ready = poll(pfd, wake >= 0 ? 2 : 1, POLL_MS);
        if (ready < 0 && errno != EINTR)
            return -1;
        if (ready > 0 && wake >= 0 && (pfd[1].revents & POLLIN)) {
            if (repl_debug_wake(p->r)) { /* the page resumed the step: the line being typed goes */
                stop_woken = true;
                errno = EINTR;
                return -1;
            }
            el_set(el, EL_REFRESH); /* what the page did was printed over the line */
            continue;
        }
        if (ready <= 0)
            continue;
        ssize_t got = read(STDIN_FILENO, p->bytes + p->num_bytes, 1);
        if (got == 0)
            return 0;
        if (got < 0 && errno != EINTR && errno != EAGAIN)
            return -1;
        if (got > 0)
            p->num_bytes++;
    }
}

/* ------------------------------------------------------------------ Tab */

static bool is_blank(const char *s)
{
    for (; *s; s++)
        if (!isspace((unsigned char)*s))
            return false;
    return true;
}

static struct winsize terminal_size(void)
{
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0 || ws.ws_row == 0)
        ws = (struct winsize){.ws_row = 24, .ws_col = 80};
    return ws;
}

/* The rows a listing of the candidates takes, and the column width. */
static int listing_rows(char *const *words, int n, size_t *width)
{
    *width = 0;
    for (int i = 0; i < n; i++)
        if (strlen(words[i]) > *width)
            *width = strlen(words[i]);
    *width += 2;
    int cols = (int)((size_t)terminal_size().ws_col / *width);
    if (cols < 1)
        cols = 1;
    return (n + cols - 1) / cols;
}

/* The candidates below the line, in columns filled top to bottom (as ls does). */
static void print_columns(FILE *out, char *const *words, int n)
{
    size_t width;
    int rows = listing_rows(words, n, &width);
    int cols = (n + rows - 1) / rows;
    fputc('\n', out);
    for (int row = 0; row < rows; row++) {
        for (int col = 0; col < cols; col++) {
            int i = col * rows + row;
            if (i >= n)
                break;
            bool last = col == cols - 1 || i + rows >= n;
            fprintf(out, "%-*s", last ? 0 : (int)width, words[i]);
        }
        fputc('\n', out);
    }
    fflush(out);
}

/* The number of characters of the text before the cursor that the candidates replace. Candidates
 * are whole words starting with the word before the cursor (complete.c), and the character before
 * that word cannot continue a candidate, so the word is the longest tail of the text that begins
 * the candidates' common prefix. */
static size_t replaced_length(const char *text, size_t end, const char *common, size_t common_len)
{
    for (size_t k = end < common_len ? end : common_len; k > 0; k--)
        if (memcmp(text + end - k, common, k) == 0)
            return k;
    return 0;
}

/* A listing longer than the screen first asks, as bash and readline do: "Display all 131
 * possibilities? (y or n)". True to list them (y, Y or space). */
static bool confirm_listing(EditLine *el, FILE *out, char *const *words, int n)
{
    size_t width;
    if (listing_rows(words, n, &width) < terminal_size().ws_row - 1)
        return true;
    fprintf(out, "\nDisplay all %d possibilities? (y or n)", n);
    fflush(out);
    wchar_t answer = 0;
    bool yes = el_wgetc(el, &answer) == 1 && (answer == L'y' || answer == L'Y' || answer == L' ');
    if (!yes)
        fputc('\n', out);
    return yes;
}

static unsigned char complete_key(EditLine *el, int ch)
{
    (void)ch;
    prompt *p = prompt_of(el);
    const LineInfo *li = el_line(el);
    size_t end = (size_t)(li->cursor - li->buffer);
    char *text = strndup(li->buffer, end);
    if (!text)
        return CC_ERROR;
    if (is_blank(text)) { /* at the start of a line, Tab indents (as in Python's REPL) */
        free(text);
        return el_insertstr(el, "  ") == 0 ? CC_REFRESH : CC_ERROR;
    }
    int n = 0;
    char **words = repl_complete(p->r, text, (int)end, &n);
    unsigned char result = CC_ERROR;
    if (n > 0) {
        size_t common = strlen(words[0]);
        for (int i = 1; i < n; i++) {
            size_t j = 0;
            while (j < common && words[i][j] == words[0][j])
                j++;
            common = j;
        }
        size_t typed = replaced_length(text, end, words[0], common);
        if (common > typed) {
            char *rest = strndup(words[0] + typed, common - typed);
            result = rest && el_insertstr(el, rest) == 0 ? CC_REFRESH : CC_ERROR;
            free(rest);
        } else if (n > 1) {
            FILE *out = stdout;
            el_get(el, EL_GETFP, 1, &out);
            if (confirm_listing(el, out, words, n))
                print_columns(out, words, n);
            result = CC_REDISPLAY;
        }
    }
    for (int i = 0; i < n; i++)
        free(words[i]);
    free(words);
    free(text);
    return result;
}

/* ------------------------------------------------------------------ history */

static void history_remember(prompt *p, const char *entry)
{
    HistEvent ev;
    history(p->hist, &ev, H_ENTER, entry);
    if (p->history_path && history(p->hist, &ev, H_SAVE, p->history_path) < 0) {
        fprintf(stderr, "tide: cannot write the history file %s\n", p->history_path);
        free(p->history_path); /* say it once */
        p->history_path = NULL;
    }
    repl_history_add(p->r, entry);
}

static char *history_file_path(void)
{
    const char *home = getenv("HOME");
    if (!home || !*home)
        return NULL;
    const char *name = "/.tide_history";
    char *path = malloc(strlen(home) + strlen(name) + 1);
    if (path) {
        strcpy(path, home);
        strcat(path, name);
    }
    return path;
}

/* ------------------------------------------------------------------ setup */

/* libedit reads multibyte characters in the LC_CTYPE locale: in the "C" locale it drops every
 * non-ASCII byte ("é" would vanish from the line). So the prompt takes the user's locale, and a
 * UTF-8 one when that is plain "C" (Python's REPL does the same). Only LC_CTYPE: numbers keep '.'. */
static void use_terminal_locale(void)
{
    if (!setlocale(LC_CTYPE, ""))
        setlocale(LC_CTYPE, "C");
    const char *codeset = nl_langinfo(CODESET);
    if (strcmp(codeset, "ANSI_X3.4-1968") == 0 || strcmp(codeset, "ASCII") == 0)
        setlocale(LC_CTYPE, "C.UTF-8");
}

static bool prompt_open(prompt *p, repl *r)
{
    *p = (prompt){.r = r};
    use_terminal_locale();
    p->hist = history_init();
    p->el = el_init("tide", stdin, stdout, stderr);
    if (!p->hist || !p->el)
        return false;
    HistEvent ev;
    history(p->hist, &ev, H_SETSIZE, HISTORY_SIZE);
    history(p->hist, &ev, H_SETUNIQUE, 1);
    p->history_path = history_file_path();
    if (p->history_path)
        history(p->hist, &ev, H_LOAD, p->history_path); /* absent the first time: fine */

    el_set(p->el, EL_CLIENTDATA, p);
    el_set(p->el, EL_EDITOR, "emacs");
    el_set(p->el, EL_SIGNAL, 0);
    el_set(p->el, EL_GETCFN, read_key);
    el_set(p->el, EL_PROMPT, prompt_text);
    el_set(p->el, EL_HIST, history, p->hist);
    /* el_wset: the narrow el_set copies the name and help of a function and never frees them. */
    el_wset(p->el, EL_ADDFN, L"tide-complete", L"complete the word before the cursor", complete_key);
    el_set(p->el, EL_BIND, "^I", "tide-complete", NULL);
    el_source(p->el, NULL); /* the user's ~/.editrc, if any */
    return true;
}

static void prompt_close(prompt *p)
{
    if (p->el)
        el_end(p->el);
    if (p->hist)
        history_end(p->hist);
    free(p->history_path);
    free(p->entry);
}

/* ------------------------------------------------------------------ the loop */

/* Appends a line (without its '\n') to the pending entry. */
static bool entry_append(prompt *p, const char *line, size_t n)
{
    size_t need = p->len + (p->len ? 1 : 0) + n + 1;
    if (need > p->cap) {
        size_t cap = p->cap ? p->cap : 256;
        while (cap < need)
            cap *= 2;
        char *e = realloc(p->entry, cap);
        if (!e)
            return false;
        p->entry = e;
        p->cap = cap;
    }
    if (p->len)
        p->entry[p->len++] = '\n';
    memcpy(p->entry + p->len, line, n);
    p->len += n;
    p->entry[p->len] = '\0';
    return true;
}

/* Ctrl-C at either prompt: the pending entry and the line are dropped. */
static void discard(prompt *p, bool echo)
{
    el_reset(p->el);
    p->num_bytes = 0;
    p->len = 0;
    p->continuation = false;
    p->r->interrupted = 0;
    if (echo) {
        fputs("^C\n", stdout);
        fflush(stdout);
    }
}

/* ------------------------------------------------------------------ a debugger stop's lines */

bool repl_stdin_is_terminal(void) { return isatty(STDIN_FILENO); }

/* Whether the stream has bytes read ahead in its buffer (glibc's FILE, as gnulib's freadahead reads it):
 * then poll(2) on its descriptor would not see them. */
static bool buffered(FILE *in)
{
#ifdef __GLIBC__
    return in->_IO_read_ptr < in->_IO_read_end;
#else
    (void)in;
    return true; /* unknown: read it, without waiting for the web */
#endif
}

/* Waits until the stream has a line to read (true) or the wake fd is readable (false). */
static bool wait_stream(repl *r, FILE *in)
{
    while (r->debug_wake_fd >= 0 && !buffered(in) && !r->interrupted) {
        struct pollfd pfd[2] = {{.fd = fileno(in), .events = POLLIN}, {.fd = r->debug_wake_fd, .events = POLLIN}};
        int ready = poll(pfd, 2, POLL_MS);
        if (ready < 0 && errno != EINTR)
            return true;
        if (ready > 0 && (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)))
            return true;
        if (ready > 0 && (pfd[1].revents & POLLIN))
            return false;
    }
    return true;
}

static char *stream_line(repl *r, FILE *in, const char *text, bool *interrupted, bool *woken)
{
    char *line = NULL;
    size_t cap = 0;
    if (in == stdin && isatty(STDOUT_FILENO)) {
        fputs(text, stdout);
        fflush(stdout);
    }
    if (!wait_stream(r, in)) {
        *woken = true;
        return NULL;
    }
    errno = 0;
    ssize_t n = getline(&line, &cap, in);
    if (n < 0) {
        *interrupted = errno == EINTR && r->interrupted;
        clearerr(in);
        free(line);
        return NULL;
    }
    if (n > 0 && line[n - 1] == '\n')
        line[n - 1] = '\0';
    return line;
}

char *repl_read_stop_line(repl *r, const char *text, bool *interrupted, bool *woken)
{
    *interrupted = *woken = false;
    if (r->input || !isatty(STDIN_FILENO))
        return stream_line(r, r->input ? r->input : stdin, text, interrupted, woken);
    if (!active_prompt) { /* a script's first stop: a line editor of its own */
        if (!prompt_open(&script_prompt, r)) {
            prompt_close(&script_prompt);
            return stream_line(r, stdin, text, interrupted, woken);
        }
        active_prompt = &script_prompt;
    }
    prompt *p = active_prompt;
    for (;;) {
        stop_prompt_text = text;
        stop_woken = false;
        int count = 0;
        errno = 0;
        const char *line = el_gets(p->el, &count);
        stop_prompt_text = NULL;
        if (!line && count < 0 && errno == EINTR && stop_woken && !r->interrupted) {
            el_reset(p->el); /* the line typed so far goes; the prompt comes again after the web's request */
            p->num_bytes = 0;
            *woken = true;
            return NULL;
        }
        if (!line && count < 0 && errno == EINTR) {
            discard(p, true);
            r->interrupted = 1; /* discard cleared it: the stop aborts */
            *interrupted = true;
            return NULL;
        }
        if (!line)
            return NULL;
        size_t n = strlen(line);
        if (n > 0 && line[n - 1] == '\n')
            n--;
        char *copy = strndup(line, n);
        if (copy && !is_blank(copy)) {
            HistEvent ev;
            history(p->hist, &ev, H_ENTER, copy);
            repl_history_add(r, copy);
        }
        if (!copy || !is_blank(copy))
            return copy;
        free(copy);
    }
}

void repl_prompt_cleanup(void)
{
    if (active_prompt == &script_prompt) {
        prompt_close(&script_prompt);
        active_prompt = NULL;
    }
}

int repl_run_prompt(repl *r)
{
    prompt p;
    if (!prompt_open(&p, r)) {
        prompt_close(&p);
        return repl_run_stream(r, stdin, "stdin");
    }
    active_prompt = &p;
    while (!r->quit) {
        if (r->interrupted) /* Ctrl-C between two reads */
            discard(&p, false);
        p.continuation = p.len > 0;
        int count = 0;
        errno = 0;
        const char *line = el_gets(p.el, &count);
        if (!line && count < 0 && errno == EINTR) {
            discard(&p, true);
            continue;
        }
        if (!line) { /* Ctrl-D, or the terminal went away */
            fputc('\n', stdout);
            break;
        }
        size_t n = strlen(line);
        if (n > 0 && line[n - 1] == '\n')
            n--;
        if (p.len == 0 && is_blank(line))
            continue;
        if (!entry_append(&p, line, n)) {
            fputs("tide: out of memory\n", stderr);
            discard(&p, false);
            continue;
        }
        repl_result res = repl_eval(r, p.entry, "stdin");
        if (res == REPL_INCOMPLETE)
            continue;
        history_remember(&p, p.entry);
        p.len = 0;
        if (res == REPL_QUIT)
            break;
    }
    fflush(stdout);
    active_prompt = NULL;
    prompt_close(&p);
    return r->exit_status;
}
