/* layout_cost.c — what a plan will cost Graphviz's dot to lay out, estimated before the layout: dot
 * ranks the items, then turns every edge that spans k ranks into a chain of k - 1 virtual nodes, and
 * its passes (crossing minimisation, network simplex for x coordinates) work on items and virtual
 * nodes alike. A few hundred items whose edges run across the whole drawing (a training graph opened
 * entirely: every forward node feeds its gradient at the far end) make tens of thousands of virtual
 * nodes and minutes of layout, where as many items with short edges take a second. The cost is the
 * items plus the virtual nodes of a longest-path ranking (dot's network simplex ranking is at least
 * as tight, so this errs high); plan.c lowers its cap until the cost fits. */
#include <stdlib.h>

#include "viz_plan.h"

/* Longest-path ranks of the items by Kahn's algorithm over the merged edges; an item left in a
 * cycle is released with the ranks known so far (the edges into it from the cycle are ignored).
 * Then every source moves down next to its nearest consumer, as dot's ranking (which minimises the
 * total edge length) puts a variable next to the op that reads it, not at the top. */
static bool rank_items(const vz_plan *p, int *rank)
{
    int n = p->num_items, ne = p->num_edges;
    int *indeg = calloc((size_t)n + 1, sizeof *indeg), *start = calloc((size_t)n + 2, sizeof *start);
    int *out = malloc((size_t)(ne ? ne : 1) * sizeof *out), *queue = malloc((size_t)(n ? n : 1) * sizeof *queue);
    bool *done = calloc((size_t)n + 1, sizeof *done), ok = indeg && start && out && queue && done;
    for (int e = 0; ok && e < ne; e++) {
        indeg[p->edges[e].to]++;
        start[p->edges[e].from + 2]++;
    }
    for (int i = 0; ok && i < n; i++)
        start[i + 2] += start[i + 1];
    for (int e = 0; ok && e < ne; e++)
        out[start[p->edges[e].from + 1]++] = p->edges[e].to; /* afterwards start[i] begins item i */
    int head = 0, tail = 0, released = 0;
    for (int i = 0; ok && i < n; i++) {
        rank[i] = 0;
        if (indeg[i] == 0)
            queue[tail++] = i;
    }
    int sources = tail;
    while (ok && released < n) {
        if (head == tail) { /* a cycle: release the first item not done */
            int i = 0;
            while (done[i])
                i++;
            indeg[i] = 0;
            queue[tail++] = i;
        }
        int i = queue[head++];
        if (done[i])
            continue;
        done[i] = true;
        released++;
        for (int k = start[i]; k < start[i + 1]; k++) {
            int j = out[k];
            if (rank[i] + 1 > rank[j])
                rank[j] = rank[i] + 1;
            if (!done[j] && --indeg[j] == 0)
                queue[tail++] = j;
        }
    }
    for (int q = 0; ok && q < sources; q++) {
        int i = queue[q], nearest = -1;
        for (int k = start[i]; k < start[i + 1]; k++)
            if (nearest < 0 || rank[out[k]] < nearest)
                nearest = rank[out[k]];
        if (nearest > 0)
            rank[i] = nearest - 1;
    }
    free(indeg);
    free(start);
    free(out);
    free(queue);
    free(done);
    return ok;
}

long long vz_plan_layout_cost(const vz_plan *p)
{
    int *rank = malloc((size_t)(p->num_items ? p->num_items : 1) * sizeof *rank);
    if (!rank || !rank_items(p, rank)) {
        free(rank);
        return -1;
    }
    long long cost = p->num_items;
    for (int e = 0; e < p->num_edges; e++) {
        int span = rank[p->edges[e].to] - rank[p->edges[e].from];
        cost += span > 1 ? span - 1 : span < -1 ? -span - 1 : 0;
    }
    free(rank);
    return cost;
}
