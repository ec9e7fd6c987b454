/* plan.c — in progress. */
typedef int tide_placeholder_plan;
