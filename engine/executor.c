/* executor.c — in progress. */
#include "internal.h"

void tide__eager_async_done(tide_kernel_ctx *ctx, tide_status status);

void tide__exec_async_done(struct tide_exec_item *item, struct tide_step *step, tide_kernel_ctx *ctx,
                           tide_status status)
{
    (void)item;
    if (!step)
        tide__eager_async_done(ctx, status);
}

bool tide__step_cancelled(const struct tide_step *step) { (void)step; return false; }
int64_t tide__step_id(const struct tide_step *step) { (void)step; return 0; }
