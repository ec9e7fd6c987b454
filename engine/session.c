/* session.c — in progress. */
typedef int tide_placeholder_session;
