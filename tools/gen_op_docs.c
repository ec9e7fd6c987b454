/* gen_op_docs.c — writes docs/ops.md, the op reference, from the registry: every op's signature,
 * attrs, kernels and doc text. Run by `ninja -C build docs/ops.md`-style targets and checked by a test
 * so that the committed reference never drifts from the code. */
#include <stdio.h>
#include <ctype.h>
#include <stdlib.h>

#include "tide.h"

int main(void)
{
    tide_error *err = tide_error_new();
    tide_engine *e = tide_engine_new(NULL, err); /* finalises the registry, surfacing its errors */
    if (!e) {
        fprintf(stderr, "gen_op_docs: %s\n", tide_error_message(err));
        return 1;
    }
    const char *const *names;
    int n = tide_registry_op_names(&names);
    printf("# Op reference\n\n"
           "Generated from the op registry by `tools/gen_op_docs` (do not edit by hand; the test `op_docs`\n"
           "fails when this file is out of date: regenerate with `build/tools/gen_op_docs > docs/ops.md`).\n\n"
           "Spec notation: `x: T` is a tensor whose dtype is the type attr T; `values: N * T` a list of N\n"
           "tensors; `ref: Ref(T)` must come from a Variable. Attr types: `numbertype` is every dtype but\n"
           "bool and string, `realnumbertype` excludes complex, `alltypes` is every dtype.\n\n"
           "%d ops:", n);
    for (int i = 0; i < n; i++) {
        printf("%s [%s](#", i ? "," : "", names[i]);
        for (const char *c = names[i]; *c; c++) /* Markdown anchors are lower case */
            putchar(tolower((unsigned char)*c));
        printf(")");
    }
    printf("\n\n");
    for (int i = 0; i < n; i++) {
        char *help = tide_registry_op_help(names[i]);
        printf("%s\n", help ? help : "");
        free(help);
    }
    tide_engine_free(e);
    tide_error_free(err);
    return 0;
}
