/* tide_registry.h — the registered ops as bindings and documentation see them: their names, their
 * generated help text and their signatures (the REPL makes one Lua function per op from these; the
 * op reference docs/ops.md is generated from them). Defining ops and kernels is tide_op.h's part.
 * The conventions of tide_core.h hold. */
#ifndef TIDE_REGISTRY_H
#define TIDE_REGISTRY_H

#include "tide_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- registry */

/* Names of the registered ops, sorted. *names is borrowed from the registry. */
int tide_registry_op_names(const char *const **names);
/* An op's documentation, generated from its definition (for :help and docs/ops.md): a malloc'd
 * Markdown paragraph with the signature, attrs, the device types with kernels, and the doc text;
 * NULL if the op is unknown. */
char *tide_registry_op_help(const char *op);

/* An op's signature, for bindings (the REPL generates one Lua function per op from it). Strings are
 * borrowed from the registry and live as long as the process. */
typedef struct tide_op_arg_info {
    const char *name;
    tide_dtype dtype;        /* a fixed dtype, or TIDE_INVALID_DTYPE when type_attr gives it */
    const char *type_attr;   /* "T", or NULL */
    const char *number_attr; /* "N" for a list "N * T", else NULL */
    bool is_ref;             /* must come from a Variable */
} tide_op_arg_info;

typedef struct tide_op_attr_info {
    const char *name;
    tide_attr_type type;
    bool has_default;
    bool inferred;           /* a type attr or list length the inputs determine */
} tide_op_attr_info;

typedef struct tide_op_info {
    const char *name;
    int num_inputs, num_outputs, num_attrs;
    tide_op_arg_info inputs[12], outputs[12];
    tide_op_attr_info attrs[12];
    bool stateful;
    const char *signature;   /* "MatMul(a: T, b: T) -> product: T" */
    const char *doc;         /* the doc paragraph; its first sentence is the summary */
    bool in_tensorflow;      /* TensorFlow 1.x has an op of this name, inputs, attrs and semantics */
    const char *tf_differences; /* what still differs from TensorFlow's op, or NULL */
    const char *alias;       /* a friendlier name for bindings (Lua's `concat` for ConcatV2), or NULL */
} tide_op_info;

/* Fills *out for a registered op; false (out untouched) when op is unknown. */
bool tide_registry_op_info(const char *op, tide_op_info *out);

#ifdef __cplusplus
}
#endif
#endif
