/* api_compare.c — /api/compare?a=&b=: two runs side by side. Their rows (as /api/run), the difference
 * between the graphs they ran (nodes added, removed, and changed field by field) and the per-node
 * kernel times of both (traced runs), sorted by the size of the difference.
 *
 * The graph a run ran is the latest version of its session logged at or before the run started (or
 * the session's first version when none was). */
#include <stdio.h>

#include "web_internal.h"

void web_api_compare(web_request *rq, web_reply *out)
{
    int64_t a, b;
    if (!web_arg_run(rq, out, "a", true, &a) || !web_arg_run(rq, out, "b", true, &b))
        return;
    char ba[24], bb[24];
    const char *p[] = {web_itoa(ba, a), web_itoa(bb, b)};
    web_query_reply(rq, out, TIDE_STORE_Q_COMPARE_JSON, p, 2, "no such runs");
}
