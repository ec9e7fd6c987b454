/* fuzz_graphdef.c — malformed GraphDefs give clear errors, never a crash, a leak or a hang.
 *
 *   fuzz_graphdef SEED ITERATIONS CORPUS_FILE...
 *
 * The corpus is the test data (text and binary GraphDefs) plus two graphs tide exports itself (a
 * training graph, binary and text) and a few crafted inputs (nesting a thousand messages deep, a
 * length beyond the data, an empty file). Each iteration takes one corpus entry and damages it:
 * truncation at a random byte, bit flips, bytes inserted, deleted or overwritten, a chunk repeated;
 * text also gets tokens swapped for others (braces, quotes, colons, numbers). It is imported in
 * the format it claims and in the other one, into a graph that already holds nodes. Every call must
 * come back: on success the new nodes are there; on failure the message is not empty and the graph is
 * exactly what it was. Run under the sanitizer build, a memory error or a leak fails the test. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tide.h"
#include "tide_graphdef.h"

typedef struct entry {
    unsigned char *data;
    size_t size;
    bool text;
} entry;

static uint64_t rng_state;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static size_t below(size_t n) { return n ? (size_t)(rnd() % n) : 0; }

static entry read_entry(const char *path)
{
    entry e = {0};
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fuzz_graphdef: cannot read %s\n", path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    e.size = (size_t)ftell(f);
    rewind(f);
    e.data = malloc(e.size + 1);
    if (!e.data || fread(e.data, 1, e.size, f) != e.size)
        exit(1);
    fclose(f);
    e.text = strstr(path, ".pbtxt") != NULL;
    return e;
}

/* Prefixes buf[0..*len) with tag and its length: the field `tag` holding it as a nested message. */
static void wrap(unsigned char *buf, size_t *len, unsigned char tag)
{
    unsigned char head[12];
    size_t n = 0, v = *len;
    head[n++] = tag;
    do {
        head[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    memmove(buf + n, buf, *len);
    memcpy(buf, head, n);
    *len += n;
}

/* GraphDef.node[0].attr[0].value.tensor, then TensorProto.variant_val (15) and
 * VariantTensorDataProto.tensors (3) alternating `depth` times: messages nested far beyond any limit,
 * which a recursive parser without one would follow until the stack runs out. */
static entry deep_nesting(int depth)
{
    size_t len = 0;
    unsigned char *buf = calloc(1, (size_t)depth * 8 + 64);
    for (int i = 0; i < depth; i++)
        wrap(buf, &len, i % 2 ? 0x7a : 0x1a);
    wrap(buf, &len, 0x42); /* AttrValue.tensor */
    wrap(buf, &len, 0x12); /* NodeDef.AttrEntry.value */
    wrap(buf, &len, 0x2a); /* NodeDef.attr */
    wrap(buf, &len, 0x0a); /* GraphDef.node */
    return (entry){buf, len, false};
}

static tide_graph *base_graph(void)
{
    tide_graph *g = tide_graph_new();
    tide_error *err = tide_error_new();
    if (tide_graph_extend_text(g, "existing = Const(value=tensor(float32, [2], [1.0, 2.0]), dtype=float32)\n"
                                  "W = Variable(shape=[2], dtype=float32, container=\"\", shared_name=\"\")\n", err) != TIDE_OK) {
        fprintf(stderr, "fuzz_graphdef: %s\n", tide_error_message(err));
        exit(1);
    }
    tide_error_free(err);
    return g;
}

static entry exported(bool text)
{
    tide_graph *g = base_graph();
    tide_error *err = tide_error_new();
    tide_output v;
    tide_graph_output(g, "existing", &v, err);
    tide_node *w = tide_variable_new(g, "w", v, true, err);
    if (!w || tide_graph_extend_text(g, "loss = Sum(w, axes, T=float32, Tidx=int32, keep_dims=false)\n"
                                        "axes = Const(value=tensor(int32, [1], [0]), dtype=int32)\n", err) != TIDE_OK) {
        fprintf(stderr, "fuzz_graphdef: %s\n", tide_error_message(err));
        exit(1);
    }
    tide_optimizer opt;
    tide_optimizer_init(&opt, TIDE_OPT_MOMENTUM, 0.1);
    tide_optimizer_minimize(g, &opt, (tide_output){tide_graph_node(g, "loss"), 0}, NULL, 0, NULL, err);
    tide_graphdef_export_options o;
    tide_graphdef_export_options_init(&o);
    o.format = text ? TIDE_GRAPHDEF_TEXT : TIDE_GRAPHDEF_BINARY;
    entry e = {0};
    void *data;
    if (tide_graphdef_export(g, &o, &data, &e.size, err) != TIDE_OK) {
        fprintf(stderr, "fuzz_graphdef: %s\n", tide_error_message(err));
        exit(1);
    }
    e.data = data;
    e.text = text;
    tide_error_free(err);
    tide_graph_free(g);
    return e;
}

static const char *const tokens[] = {"{", "}", "\"", ":", "node", "attr", "value", "-1", "99999999999999999999",
                                     "\\", "\\377", "tensor_content", "DT_FLOAT", "list {", "#", "\n", "<", ">"};

/* A damaged copy of e (malloc'd, *size set). */
static unsigned char *damage(const entry *e, size_t *size)
{
    size_t cap = e->size * 2 + 64;
    unsigned char *d = malloc(cap);
    memcpy(d, e->data, e->size);
    size_t n = e->size;
    int edits = 1 + (int)below(4);
    for (int k = 0; k < edits; k++) {
        switch (below(e->text ? 7 : 6)) {
        case 0: n = below(n + 1); break;                                   /* truncate */
        case 1: if (n) d[below(n)] ^= (unsigned char)(1u << below(8)); break; /* flip a bit */
        case 2: if (n) d[below(n)] = (unsigned char)rnd(); break;          /* overwrite a byte */
        case 3: if (n < cap - 1) { size_t at = below(n + 1); memmove(d + at + 1, d + at, n - at); d[at] = (unsigned char)rnd(); n++; } break;
        case 4: if (n) { size_t at = below(n); memmove(d + at, d + at + 1, n - at - 1); n--; } break;
        case 5: { /* repeat a chunk */
            size_t at = below(n + 1), len = below(n - at + 1);
            if (len > 64) len = 64;
            if (n + len < cap) { memmove(d + at + len, d + at, n - at); n += len; }
            break;
        }
        default: { /* text: a token where another was */
            const char *t = tokens[below(sizeof tokens / sizeof *tokens)];
            size_t len = strlen(t), at = below(n + 1);
            if (n + len < cap) { memmove(d + at + len, d + at, n - at); memcpy(d + at, t, len); n += len; }
        }
        }
    }
    *size = n;
    return d;
}

/* Imports data into g; on failure the graph must be unchanged and the message not empty. */
static int try_import(tide_graph *g, const unsigned char *data, size_t size, tide_graphdef_format format, int *ok)
{
    char *before = tide_graph_to_text(g, NULL);
    int nodes = tide_graph_num_nodes(g);
    tide_error *err = tide_error_new();
    tide_graphdef_import_options o;
    tide_graphdef_import_options_init(&o);
    o.format = format;
    o.scope = "fuzz";
    int status = 0;
    if (tide_graphdef_import(g, data, size, "fuzz", &o, err) == TIDE_OK) {
        (*ok)++;
        tide_graph_rollback(g, nodes, NULL);
    } else if (!tide_error_message(err)[0]) {
        fprintf(stderr, "fuzz_graphdef: a failure without a message\n");
        status = 1;
    }
    char *after = tide_graph_to_text(g, NULL);
    if (!before || !after || strcmp(before, after) != 0) {
        fprintf(stderr, "fuzz_graphdef: the graph changed (%s)\n", tide_error_message(err));
        status = 1;
    }
    free(before);
    free(after);
    tide_error_free(err);
    return status;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: fuzz_graphdef SEED ITERATIONS CORPUS_FILE...\n");
        return 2;
    }
    rng_state = strtoull(argv[1], NULL, 10) * 2654435761u + 88172645463325252ull;
    long iterations = strtol(argv[2], NULL, 10);
    int count = argc - 3 + 5;
    entry *corpus = calloc((size_t)count, sizeof *corpus);
    for (int i = 3; i < argc; i++)
        corpus[i - 3] = read_entry(argv[i]);
    corpus[count - 5] = exported(false);
    corpus[count - 4] = exported(true);
    corpus[count - 3] = deep_nesting(1000);
    corpus[count - 2] = (entry){(unsigned char *)strdup("\x0a\xff\xff\xff\xff\x0f"), 6, false}; /* 4 GiB node */
    corpus[count - 1] = (entry){(unsigned char *)strdup(""), 0, false};
    tide_graph *g = base_graph();
    int status = 0, ok = 0, failed_clean = 0;
    /* Undamaged, the crafted entries fail with their messages and the others import. */
    for (int i = 0; i < count && !status; i++) {
        status |= try_import(g, corpus[i].data, corpus[i].size,
                             corpus[i].text ? TIDE_GRAPHDEF_TEXT : TIDE_GRAPHDEF_BINARY, &ok);
    }
    if (ok != count - 2) { /* all but the deep nesting and the 4 GiB claim (the empty file is an empty graph) */
        fprintf(stderr, "fuzz_graphdef: %d of %d undamaged entries imported, expected %d\n", ok, count, count - 2);
        status = 1;
    }
    ok = 0;
    for (long it = 0; it < iterations && !status; it++) {
        const entry *e = &corpus[below((size_t)count)];
        size_t size;
        unsigned char *d = damage(e, &size);
        tide_graphdef_format claimed = e->text ? TIDE_GRAPHDEF_TEXT : TIDE_GRAPHDEF_BINARY;
        tide_graphdef_format other = e->text ? TIDE_GRAPHDEF_BINARY : TIDE_GRAPHDEF_TEXT;
        int before = ok;
        status |= try_import(g, d, size, it % 8 ? claimed : other, &ok);
        failed_clean += ok == before;
        free(d);
    }
    printf("fuzz_graphdef: %ld damaged GraphDefs: %d imported, %d refused with a message, the graph unchanged\n",
           iterations, ok, failed_clean);
    for (int i = 0; i < count; i++)
        free(corpus[i].data);
    free(corpus);
    tide_graph_free(g);
    return status;
}
