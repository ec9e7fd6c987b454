/* suggest.c — how near two names are, for the REPL's "did you mean" suggestions (unknown globals,
 * ':' commands, :help topics): a case-insensitive edit distance (Levenshtein: insertions, deletions
 * and substitutions each cost one), so that "matmull" and "MatMul" are one apart. */
#include <ctype.h>
#include <string.h>

#include "repl.h"

int repl_edit_distance(const char *a, const char *b)
{
    size_t len_a = strlen(a), len_b = strlen(b);
    if (len_a > 64 || len_b > 64)
        return 99;
    int row[65]; /* row[j]: distance of a[0..i) to b[0..j) for the current i */
    for (size_t j = 0; j <= len_b; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= len_a; i++) {
        int diagonal = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= len_b; j++) {
            int above = row[j];
            int substitute = diagonal + (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
            int delete_a = above + 1, insert_b = row[j - 1] + 1;
            int best = substitute < delete_a ? substitute : delete_a;
            row[j] = best < insert_b ? best : insert_b;
            diagonal = above;
        }
    }
    return row[len_b];
}
