#!/usr/bin/python3
"""readme_example.py — turns the C example of README.md into a program (so the README cannot drift):
the first ```c block becomes the body of main(), followed by checks of its result and clean-up."""
import re
import sys

readme, out = sys.argv[1], sys.argv[2]
text = open(readme, encoding="utf-8").read()
m = re.search(r"```c\n(.*?)```", text, re.S)
if not m:
    sys.exit("README.md has no ```c block")
body = "\n".join("    " + line for line in m.group(1).splitlines() if not line.startswith("#include"))
program = """/* Generated from README.md by tests/e2e/readme_example.py: do not edit. */
#include <stdio.h>
#include "tide.h"

int main(void)
{
%s
    /* the example's result: y = x * 2 */
    int ok = out && tide_tensor_get_f64(out, 0) == 2.0 && tide_tensor_get_f64(out, 1) == 4.0;
    if (!ok)
        fprintf(stderr, "README example: unexpected result (%%s)\\n", tide_error_message(err));
    tide_tensor_release(out);
    tide_tensor_release(in);
    tide_session_free(s);
    tide_graph_free(g);
    tide_engine_free(engine);
    tide_error_free(err);
    return ok ? 0 : 1;
}
""" % body
open(out, "w", encoding="utf-8").write(program)
