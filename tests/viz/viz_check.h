/* viz_check.h — structural checks the viz suites share: python3 parses an SVG (xml.etree) or a JSON
 * text and evaluates a Python expression over it. meson needs python3, so a build machine has it:
 * without it the checks fail (with a note printed once). Header-only. */
#ifndef TIDE_TEST_VIZ_CHECK_H
#define TIDE_TEST_VIZ_CHECK_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

/* Runs python3 on `text` (stdin): `setup` then exit 0 if `expr` holds. SVG: r is the root element,
 * ids the list of every id; JSON: d is the document. */
static inline bool py_check(const char *text, bool svg, const char *expr)
{
    static int have_python = -1; /* unknown yet */
    if (have_python < 0) {
        have_python = system("python3 -c 'import json, xml.etree.ElementTree' >/dev/null 2>&1") == 0;
        if (!have_python)
            fprintf(stderr, "python3 with json and xml.etree is needed for the structural checks\n");
    }
    if (!have_python)
        return false;
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import json, sys, xml.etree.ElementTree as ET\n"
             "t = sys.stdin.read()\n%s\nok = (%s)\n"
             "print(\"python check failed:\", %s, file=sys.stderr) if not ok else None\n"
             "sys.exit(0 if ok else 1)'",
             svg ? "r = ET.fromstring(t)\nids = [e.get(\"id\") for e in r.iter() if e.get(\"id\")]"
                 : "d = json.loads(t)",
             expr, svg ? "ids" : "t[:2000]");
    FILE *p = popen(cmd, "w");
    if (!p)
        return false;
    fputs(text, p);
    return pclose(p) == 0;
}

#endif
