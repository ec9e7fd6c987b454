/* train.h — what the files of engine/train share (engine-private): building named nodes in the
 * current scope, scalar constants, and the optimizers' slot variables. */
#ifndef TIDE_TRAIN_PRIVATE_H
#define TIDE_TRAIN_PRIVATE_H

#include "../internal.h"

/* A builder for op named base, made unique in the current scope (initializers.c); NULL when out of
 * memory. */
tide_node_builder *tide__train_builder(tide_graph *g, const char *op, const char *base);

/* A scalar Const of dtype dt holding v (converted as Cast converts a float64), named base (made
 * unique) (initializers.c); {NULL} with err set on failure. */
tide_output tide__train_scalar(tide_graph *g, const char *base, tide_dtype dt, double v, tide_error *err);

/* A non-trainable variable "<var>/<slot>" (made unique) shaped like var, every element `value`,
 * built at the graph's root whatever the current scope (variables.c); NULL with err set on
 * failure, the graph then unchanged. */
tide_node *tide__train_slot(tide_graph *g, const tide_node *var, const char *slot, double value, tide_error *err);

#endif
